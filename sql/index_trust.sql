--
-- The filter index under attack and neglect.  Behaviour only, so that it
-- holds whatever the index's format: writes are never refused for the
-- index's fill, and keys chosen to crowd it cost no more than others; it
-- tells no role more than the rows that role may read; it never answers
-- "no" for a row the caller sees (dead and too-new indexes, collations,
-- integers of any width); every default hash operator class is covered.
-- (A corrupted page is test/index_corrupt.sh's: it needs the server
-- stopped.)
--

-- Plans and answers for absent values are shown: the same seed every run
-- (but for the test of seeds itself).
SET amqfilter.index_seed = 20260102;

-- 1. Growth follows the number of keys, not where they land.
-- An attacker who knows the seed (here "amqindex", which every index once
-- used) and watches the index's size crafts each key to land on the first
-- page of the newest generation (whose pages the last growth added): its
-- hash, unsigned, below 2^64 / pages.  12,000 such keys, 40 to a
-- transaction as an application would insert them, into a 2,000-row
-- table; as many ordinary keys into its twin.
CREATE TABLE trust_crafted (k int8);
CREATE TABLE trust_plain (k int8);
INSERT INTO trust_crafted SELECT g FROM generate_series(1, 2000) g;
INSERT INTO trust_plain SELECT g FROM generate_series(1, 2000) g;
CREATE INDEX trust_crafted_k ON trust_crafted USING amqfilter (k);
CREATE INDEX trust_plain_k ON trust_plain USING amqfilter (k);
DO $$
DECLARE
	seed constant int8 := x'616d71696e646578'::int8;
	last_size int8 := pg_relation_size('trust_crafted_k');
	pages int8 := 1;
	size int8;
	next int8 := 1000000;
	done int8 := 0;
	n int8;
BEGIN
	WHILE done < 12000 LOOP
		INSERT INTO trust_crafted
			SELECT v FROM generate_series(next, next + 200 * pages) v
			 WHERE (hashint8extended(v, seed)::numeric
					+ CASE WHEN hashint8extended(v, seed) < 0 THEN 18446744073709551616 ELSE 0 END)
				   < 18446744073709551616 / pages
			 LIMIT 40;
		GET DIAGNOSTICS n = ROW_COUNT;
		INSERT INTO trust_plain SELECT g FROM generate_series(100000000 + done, 100000000 + done + n - 1) g;
		COMMIT;
		done := done + n;
		next := next + 200 * pages + 1;
		size := pg_relation_size('trust_crafted_k');
		IF size > last_size THEN
			pages := (size - last_size) / 8192;
			last_size := size;
		END IF;
	END LOOP;
END $$;
SELECT count(*) FROM trust_crafted;
-- within 2x of the ordinary keys' index
SELECT pg_relation_size('trust_crafted_k') <= 2 * pg_relation_size('trust_plain_k')
	AS crafted_cost_as_ordinary;
SELECT count(*) AS crafted_missed FROM trust_crafted
 WHERE NOT bloom_index_contains('trust_crafted_k', k);

-- Each index hashes with a seed of its own, drawn at its build: two indexes
-- of the same rows say "maybe" for different absent values (the same ones,
-- with one seed for all).  Independent seeds share about 1% of them (the
-- index's rate here: a page holds more bits than 5% needs; about 120 of
-- 20,000 absent values are "maybe", 83 the fewest over 300 seeds, so 20 is
-- far below any seed's).  The absent values asked lie between present ones
-- (an integer index rules out values past its least and greatest without
-- its seed).
CREATE TABLE trust_seed (k int8);
INSERT INTO trust_seed SELECT 2 * g FROM generate_series(1, 20000) g;
RESET amqfilter.index_seed;
CREATE INDEX trust_seed_a ON trust_seed USING amqfilter (k) WITH (false_positive_rate = 0.05);
CREATE INDEX trust_seed_b ON trust_seed USING amqfilter (k) WITH (false_positive_rate = 0.05);
SET amqfilter.index_seed = 20260102;
SELECT count(*) FILTER (WHERE a) > 20 AS some_maybe,
	   count(*) FILTER (WHERE a AND b) < 0.5 * count(*) FILTER (WHERE a) AS seeds_differ
  FROM (SELECT bloom_index_contains('trust_seed_a', v) AS a,
			   bloom_index_contains('trust_seed_b', v) AS b
		  FROM generate_series(1, 39999, 2) v) s;
-- amqfilter.index_seed (superuser only) fixes it: two builds answer alike
CREATE INDEX trust_seed_c ON trust_seed USING amqfilter (k) WITH (false_positive_rate = 0.05);
CREATE INDEX trust_seed_d ON trust_seed USING amqfilter (k) WITH (false_positive_rate = 0.05);
SELECT bool_and(bloom_index_contains('trust_seed_c', v) = bloom_index_contains('trust_seed_d', v))
	AS fixed_seed_repeats
  FROM generate_series(1, 39999, 2) v;

-- An index that cannot grow (here capped at one generation) takes every key
-- past its capacity: the write succeeds, a WARNING says REINDEX (once per
-- session), amqfilter_index_info says so, and every key is still found.
CREATE TABLE trust_full (k int8);
CREATE INDEX trust_full_k ON trust_full USING amqfilter (k) WITH (max_generations = 1);
INSERT INTO trust_full SELECT g FROM generate_series(1, 100000) g;
INSERT INTO trust_full VALUES (100001);
SELECT generations, saturated, false_positive_rate > target_false_positive_rate AS degraded
  FROM amqfilter_index_info('trust_full_k');
SELECT count(*) AS full_missed FROM trust_full WHERE NOT bloom_index_contains('trust_full_k', k);
REINDEX INDEX trust_full_k;
SELECT generations, saturated, false_positive_rate <= target_false_positive_rate AS at_target
  FROM amqfilter_index_info('trust_full_k');
ALTER INDEX trust_full_k SET (max_generations = 0);
ALTER INDEX trust_full_k SET (max_generations = 17);

-- Built on an empty table, at the lowest rate, loaded in transactions of
-- every size: it keeps accepting writes, in few generations.
CREATE TABLE trust_empty (k int8);
CREATE INDEX trust_empty_k ON trust_empty USING amqfilter (k) WITH (false_positive_rate = 1e-6);
INSERT INTO trust_empty VALUES (1);
INSERT INTO trust_empty SELECT g FROM generate_series(2, 1000) g;
INSERT INTO trust_empty SELECT g FROM generate_series(1001, 300000) g;
INSERT INTO trust_empty SELECT g FROM generate_series(300001, 1500000) g;
SELECT generations <= 5 AS few_generations, NOT saturated AS grew
  FROM amqfilter_index_info('trust_empty_k');
SELECT count(*) AS empty_missed FROM trust_empty
 WHERE NOT bloom_index_contains('trust_empty_k', k);
DROP TABLE trust_crafted, trust_plain, trust_seed, trust_full, trust_empty;

-- 2. Nothing the rows would not tell.
CREATE ROLE trust_alice;
-- Row security: ssn 1000 is hidden from alice, 20001 is nowhere.  The
-- planner must not probe the index with her constants: both plan alike.
CREATE TABLE trust_people (ssn int8, secret boolean);
INSERT INTO trust_people SELECT g, g = 1000 FROM generate_series(1, 20000) g;
CREATE INDEX trust_people_ssn ON trust_people USING amqfilter (ssn);
ANALYZE trust_people;
ALTER TABLE trust_people ENABLE ROW LEVEL SECURITY;
CREATE POLICY public_rows ON trust_people FOR SELECT USING (NOT secret);
GRANT SELECT ON trust_people TO trust_alice;
SET ROLE trust_alice;
EXPLAIN (COSTS OFF) SELECT * FROM trust_people WHERE ssn = 1000;
EXPLAIN (COSTS OFF) SELECT * FROM trust_people WHERE ssn = 20001;
SELECT bloom_index_contains('trust_people_ssn', 1000::int8);
RESET ROLE;
-- the owner, under no policy, gets the probed plans
EXPLAIN (COSTS OFF) SELECT * FROM trust_people WHERE ssn = 20001;

-- A security barrier view stands between alice and the table in the same way.
CREATE TABLE trust_staff (id int8, listed boolean);
INSERT INTO trust_staff SELECT g, g <> 1000 FROM generate_series(1, 20000) g;
CREATE INDEX trust_staff_id ON trust_staff USING amqfilter (id);
ANALYZE trust_staff;
CREATE VIEW trust_listed WITH (security_barrier) AS
	SELECT id FROM trust_staff WHERE listed;
GRANT SELECT ON trust_listed TO trust_alice;
SET ROLE trust_alice;
EXPLAIN (COSTS OFF) SELECT * FROM trust_listed WHERE id = 1000;
EXPLAIN (COSTS OFF) SELECT * FROM trust_listed WHERE id = 20001;
RESET ROLE;

-- A partial index tells which values its predicate's rows hold, and an
-- expression index its expression's: alice may read id, not salary.
CREATE TABLE trust_pay (id int8, salary int);
INSERT INTO trust_pay SELECT g, CASE WHEN g % 20 = 0 THEN 200000 ELSE 50000 END
  FROM generate_series(1, 20000) g;
CREATE INDEX trust_pay_high ON trust_pay USING amqfilter (id) WHERE salary > 100000;
CREATE INDEX trust_pay_expr ON trust_pay USING amqfilter ((id * 1000000 + salary));
CREATE INDEX trust_pay_id ON trust_pay USING amqfilter (id);
GRANT SELECT (id) ON trust_pay TO trust_alice;
SET ROLE trust_alice;
SELECT count(*) FROM trust_pay WHERE bloom_index_contains('trust_pay_high', id);
SELECT bloom_index_contains('trust_pay_expr', 20200000::int8);
SELECT amqfilter_index_info('trust_pay_high') IS NOT NULL;
-- the plain index reads only id: hers to ask
SELECT count(*) FROM trust_pay WHERE bloom_index_contains('trust_pay_id', id);
RESET ROLE;
GRANT SELECT (salary) ON trust_pay TO trust_alice;
SET ROLE trust_alice;
-- every high earner is "maybe" (and some others: the filter's false "maybe"s)
SELECT count(*) FILTER (WHERE bloom_index_contains('trust_pay_high', id)) >= 1000 AS answers
  FROM trust_pay;
RESET ROLE;
DROP TABLE trust_people, trust_pay;
DROP VIEW trust_listed;
DROP TABLE trust_staff;
DROP ROLE trust_alice;

-- An index the planner would not use rules nothing out: it answers
-- "maybe", never a "no" for a row it may miss, and never an error, as a
-- query through a btree keeps running while an index is built, rebuilt or
-- dropped.  One left invalid and not ready (a DROP INDEX CONCURRENTLY that
-- was cancelled; inserts skip it), one whose build did not finish
-- (invalid, still ready).
CREATE TABLE trust_dead (k int8);
INSERT INTO trust_dead SELECT g FROM generate_series(1, 1000) g;
CREATE INDEX trust_dead_k ON trust_dead USING amqfilter (k);
UPDATE pg_index SET indisvalid = false, indisready = false
 WHERE indexrelid = 'trust_dead_k'::regclass;
INSERT INTO trust_dead VALUES (5000);
SELECT bloom_index_contains('trust_dead_k', 5000::int8) AS skipped_row,
       bloom_index_contains('trust_dead_k', -1::int8) AS absent;
SELECT amqfilter_index_candidates('trust_dead_k', -1::int8);
-- a not-ready index's pages are not read (a build may be writing them):
-- every lookup is "maybe", a rate of 1, and NULL for what the pages tell
SELECT bytes > 0 AS has_bytes, generations, entries, false_positive_rate,
       target_false_positive_rate, saturated
  FROM amqfilter_index_info('trust_dead_k');
UPDATE pg_index SET indisready = true WHERE indexrelid = 'trust_dead_k'::regclass;
SELECT bloom_index_contains('trust_dead_k', -1::int8) AS absent;
-- ready, its pages are read; it still cannot answer: a rate of 1
SELECT generations, entries > 0 AS has_entries, false_positive_rate
  FROM amqfilter_index_info('trust_dead_k');
-- the value is still checked, and the caller's privileges
SELECT bloom_index_contains('trust_dead_k', 'x'::text);
CREATE ROLE trust_nobody;
SET ROLE trust_nobody;
SELECT bloom_index_contains('trust_dead_k', -1::int8);
RESET ROLE;
DROP ROLE trust_nobody;
REINDEX INDEX trust_dead_k;
SELECT bloom_index_contains('trust_dead_k', 5000::int8) AS skipped_row,
       bloom_index_contains('trust_dead_k', -1::int8) AS absent;
SELECT false_positive_rate < 0.05 AS answers FROM amqfilter_index_info('trust_dead_k');
-- An index that is gone (a statement named it, then it was dropped, as
-- REINDEX CONCURRENTLY drops the index it replaced) rules nothing out
-- either, and has no row; amqfilter_index_candidates has no table to name.
-- What is not an amqfilter index at all stays an error.
CREATE INDEX trust_gone ON trust_dead USING amqfilter (k);
SELECT 'trust_gone'::regclass::oid AS gone \gset
DROP INDEX trust_gone;
SELECT bloom_index_contains(:gone::regclass, -1::int8) AS gone;
SELECT count(*) AS rows FROM amqfilter_index_info(:gone::regclass);
\set VERBOSITY sqlstate
SELECT amqfilter_index_candidates(:gone::regclass, -1::int8);
SELECT amqfilter_index_filter(:gone::regclass);
\set VERBOSITY default
CREATE INDEX trust_dead_btree ON trust_dead (k);
SELECT bloom_index_contains('trust_dead_btree', -1::int8);
SELECT bloom_index_contains('trust_dead', -1::int8);
DROP TABLE trust_dead;

-- An index built over a broken HOT chain after this transaction's snapshot
-- holds the row's new value only, where the snapshot sees the old one.
CREATE EXTENSION dblink;
CREATE TABLE trust_hot (id int, v int8);
INSERT INTO trust_hot VALUES (1, 100);
CREATE FUNCTION pg_temp.elsewhere(sql text) RETURNS text LANGUAGE sql AS $$
	SELECT dblink_exec(format('dbname=%s port=%s host=%s', current_database(),
							  current_setting('port'),
							  split_part(current_setting('unix_socket_directories'), ',', 1)),
					   sql)
$$;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT v FROM trust_hot;
SELECT pg_temp.elsewhere('UPDATE trust_hot SET v = 200');
SELECT pg_temp.elsewhere('CREATE INDEX trust_hot_v ON trust_hot USING amqfilter (v)');
SELECT v FROM trust_hot;
SELECT bloom_index_contains('trust_hot_v', 100::int8) AS old_value,
       bloom_index_contains('trust_hot_v', -1::int8) AS absent;
SELECT amqfilter_index_candidates('trust_hot_v', -1::int8);
SELECT false_positive_rate FROM amqfilter_index_info('trust_hot_v');
ROLLBACK;
SELECT indcheckxmin FROM pg_index WHERE indexrelid = 'trust_hot_v'::regclass;
SELECT bloom_index_contains('trust_hot_v', 200::int8);
SELECT bloom_index_contains('trust_hot_v', -1::int8) AS absent;
DROP TABLE trust_hot;
DROP EXTENSION dblink;

-- 3. Collations: name's hash ignores them, while text = name compares under
-- them.  Under a nondeterministic collation a name is hashed as text.
CREATE COLLATION trust_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE trust_ci_text (t text COLLATE trust_ci);
INSERT INTO trust_ci_text SELECT 'key' || g FROM generate_series(1, 1000) g;
INSERT INTO trust_ci_text VALUES ('abc');
CREATE INDEX trust_ci_text_t ON trust_ci_text USING amqfilter (t);
SELECT bloom_index_contains('trust_ci_text_t', 'abc'::name) AS abc,
	   bloom_index_contains('trust_ci_text_t', 'ABC'::name) AS "ABC";
SET enable_seqscan = off;
SELECT count(*) FROM trust_ci_text WHERE t = ('abc'::name COLLATE trust_ci);
SELECT count(*) FROM trust_ci_text WHERE t = ('ABC'::name COLLATE trust_ci);
RESET enable_seqscan;
CREATE TABLE trust_ci_name (n name COLLATE trust_ci);
INSERT INTO trust_ci_name SELECT 'key' || g FROM generate_series(1, 1000) g;
INSERT INTO trust_ci_name VALUES ('abc');
CREATE INDEX trust_ci_name_n ON trust_ci_name USING amqfilter (n);
SELECT count(*) FROM trust_ci_name WHERE n = ('ABC'::text COLLATE trust_ci);
SET enable_seqscan = off;
SELECT count(*) FROM trust_ci_name WHERE n = ('ABC'::text COLLATE trust_ci);
SELECT count(*) FROM trust_ci_name WHERE n = ('abc'::name COLLATE trust_ci);
RESET enable_seqscan;
SELECT bloom_index_contains('trust_ci_name_n', 'ABC'::text COLLATE trust_ci) AS "ABC",
	   bloom_index_contains('trust_ci_name_n', 'abc'::name) AS abc;
DROP TABLE trust_ci_text, trust_ci_name;
DROP COLLATION trust_ci;

-- 4. Every default hash operator class of PostgreSQL's has an amqfilter one
-- for its type; but oid8's, a type PostgreSQL 19 adds, which the extension's
-- SQL objects do not name yet (docs/limits.md).
SELECT h.opcname, h.opcintype::regtype
  FROM pg_opclass h JOIN pg_am a ON a.oid = h.opcmethod
 WHERE a.amname = 'hash' AND h.opcdefault
   AND h.opcnamespace = 'pg_catalog'::regnamespace
   AND NOT EXISTS (SELECT 1 FROM pg_opclass f JOIN pg_am m ON m.oid = f.opcmethod
					WHERE m.amname = 'amqfilter' AND f.opcdefault
					  AND f.opcintype = h.opcintype)
   AND h.opcintype::regtype::text <> 'oid8'
 ORDER BY 1;
CREATE TYPE trust_pair AS (a int, b text);
CREATE TABLE trust_rows (r trust_pair, m int4multirange);
INSERT INTO trust_rows SELECT ROW(g, 'x' || g)::trust_pair, int4multirange(int4range(g, g + 10))
  FROM generate_series(1, 2000) g;
CREATE INDEX trust_rows_r ON trust_rows USING amqfilter (r);
CREATE INDEX trust_rows_m ON trust_rows USING amqfilter (m);
SELECT bloom_index_contains('trust_rows_r', ROW(7, 'x7')::trust_pair) AS r_present,
	   bloom_index_contains('trust_rows_m', int4multirange(int4range(7, 17))) AS m_present;
SELECT count(*) FILTER (WHERE bloom_index_contains('trust_rows_r', ROW(g, 'y')::trust_pair)) < 100 AS r_absent_mostly_no,
	   count(*) FILTER (WHERE bloom_index_contains('trust_rows_m', int4multirange(int4range(g, g + 11)))) < 100 AS m_absent_mostly_no
  FROM generate_series(1, 2000) g;
SET enable_seqscan = off;
SELECT count(*) FROM trust_rows WHERE r = ROW(7, 'x7')::trust_pair;
SELECT count(*) FROM trust_rows WHERE m = int4multirange(int4range(7, 17));
RESET enable_seqscan;
SELECT count(*) FROM trust_rows WHERE NOT bloom_index_contains('trust_rows_r', r)
	OR NOT bloom_index_contains('trust_rows_m', m);
DROP TABLE trust_rows;
DROP TYPE trust_pair;

-- 5. Integers hash as 64-bit values.  These 50,000 bigints all fold to one
-- 32-bit value (high half xor low half = 12345), as PostgreSQL's int8 hash
-- folds them: absent ones of that kind were all "maybe".
CREATE TABLE trust_wide (k int8);
INSERT INTO trust_wide SELECT (g::int8 << 32) | (g # 12345) FROM generate_series(1, 50000) g;
CREATE INDEX trust_wide_k ON trust_wide USING amqfilter (k);
SELECT count(*) FILTER (WHERE bloom_index_contains('trust_wide_k', (g::int8 << 32) | (g # 12345)))
		< 1500 AS folded_absent_mostly_no
  FROM generate_series(50001, 100000) g;
SELECT count(*) AS wide_missed FROM trust_wide WHERE NOT bloom_index_contains('trust_wide_k', k);
-- equal values of any width still hash alike
INSERT INTO trust_wide VALUES (77), (-5), (2147483647), (-2147483648);
SELECT bloom_index_contains('trust_wide_k', 77::int2) AS int2,
	   bloom_index_contains('trust_wide_k', (-5)::int4) AS int4,
	   bloom_index_contains('trust_wide_k', 2147483647::int4) AS int4_max,
	   bloom_index_contains('trust_wide_k', (-2147483648)::int4) AS int4_min;
SET enable_seqscan = off;
SELECT count(*) FROM trust_wide WHERE k = 77::int2;
SELECT count(*) FROM trust_wide WHERE k = ANY (ARRAY[-5, 2147483647]::int4[]);
RESET enable_seqscan;
DROP TABLE trust_wide;

-- The rate of "maybe" for absent values: at most the option, and what
-- amqfilter_index_info reports within 20% of what 200,000 probes measure
-- (about 900 "maybe"s: three standard deviations are 10%); built, and
-- grown from empty.
CREATE TABLE trust_rate (k int8);
INSERT INTO trust_rate SELECT g::int8 * 7919 FROM generate_series(1, 200000) g;
CREATE INDEX trust_rate_built ON trust_rate USING amqfilter (k);
CREATE TABLE trust_rate_grown (k int8);
CREATE INDEX trust_rate_grown_k ON trust_rate_grown USING amqfilter (k);
INSERT INTO trust_rate_grown SELECT k FROM trust_rate;
SELECT i.index, m.measured <= 0.01 AS within_option,
	   abs(i.false_positive_rate - m.measured) / m.measured < 0.2 AS reported_matches
  FROM (VALUES ('trust_rate_built'), ('trust_rate_grown_k')) i0(index),
	   LATERAL (SELECT (count(*) FILTER (WHERE bloom_index_contains(i0.index::regclass, g::int8 * 7919 + 1)))::float8
					   / 200000 AS measured
				  FROM generate_series(1, 200000) g) m,
	   LATERAL (SELECT i0.index, false_positive_rate
				  FROM amqfilter_index_info(i0.index::regclass)) i;
DROP TABLE trust_rate, trust_rate_grown;
