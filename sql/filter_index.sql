--
-- The amqfilter index access method: plain "column = value" skips the
-- tables (partitions) whose filter rules the value out, and answers exactly
-- as without the index, for every value, through inserts that grow it.
--
SET client_min_messages = warning;
-- answers for absent values are shown: the same seed every run
SET amqfilter.index_seed = 20260101;

-- every operator class is valid
SELECT count(*) AS classes, bool_and(amvalidate(c.oid)) AS valid
  FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod WHERE a.amname = 'amqfilter';

CREATE TABLE fi (id int8, c int8, t text, d date) PARTITION BY RANGE (id);
CREATE TABLE fi_1 PARTITION OF fi FOR VALUES FROM (0) TO (5000);
CREATE TABLE fi_2 PARTITION OF fi FOR VALUES FROM (5000) TO (10000);
CREATE TABLE fi_3 PARTITION OF fi FOR VALUES FROM (10000) TO (15000);
CREATE TABLE fi_4 PARTITION OF fi FOR VALUES FROM (15000) TO (20000);
-- every c once, scattered over the partitions; some NULLs
INSERT INTO fi SELECT g, CASE WHEN g % 1000 = 999 THEN NULL ELSE (g * 7919) % 20000 END,
                      't' || ((g * 7919) % 20000), date '2020-01-01' + (g % 400)
  FROM generate_series(0, 19999) g;
-- the same rows, without an index, to compare with
CREATE TABLE fi_plain AS SELECT * FROM fi;
CREATE INDEX ON fi_plain (c);
CREATE INDEX ON fi_plain (t);
CREATE INDEX fi_c ON fi USING amqfilter (c);
CREATE INDEX fi_t ON fi USING amqfilter (t) WITH (false_positive_rate = 0.001);
CREATE INDEX fi_d ON fi USING amqfilter (d);
ANALYZE fi;

-- sized from what the build saw: an entry for each distinct value of each
-- partition (and its range)
SELECT c.relname, i.generations, i.build_entries,
       i.target_false_positive_rate,
       i.false_positive_rate <= i.target_false_positive_rate AS within_target,
       i.entries = i.build_entries AS entries_as_built
  FROM pg_class c, amqfilter_index_info(c.oid) i
 WHERE c.relname ~ '^fi_[0-9]_(c|t)_idx$' ORDER BY c.relname;

-- a value no partition holds: no partition is read (index_skip.sql)
EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT * FROM fi WHERE c = -5;
-- a value one partition holds: that one is read where the index says
-- the value is, the others not at all
EXPLAIN (COSTS OFF) SELECT * FROM fi WHERE c = 7919;
SELECT * FROM fi WHERE c = 7919;
-- a value known only at run time: every partition gets a bitmap scan,
-- which reads its table only if its filter says "maybe"
PREPARE fi_q(int8) AS SELECT id FROM fi WHERE c = $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE fi_q(7919);
EXECUTE fi_q(7919);
EXECUTE fi_q(-5);
RESET plan_cache_mode;

-- Exactly the plain query's answers, for every seventh value, present and
-- absent, through the index alone (no plain scans allowed)
SET enable_seqscan = off;
SELECT count(*) AS mismatches
  FROM generate_series(-200, 20200, 7) v
 WHERE (SELECT count(*) FROM fi WHERE c = v) <> (SELECT count(*) FROM fi_plain WHERE c = v);
SELECT count(*) AS mismatches
  FROM generate_series(-200, 20200, 7) v
 WHERE (SELECT count(*) FROM fi WHERE t = 't' || v) <> (SELECT count(*) FROM fi_plain WHERE t = 't' || v);
-- = ANY, other integer widths, NULL
SELECT count(*) FROM fi WHERE c = ANY (ARRAY[1, 2, -3, NULL]);
SELECT count(*) FROM fi_plain WHERE c = ANY (ARRAY[1, 2, -3, NULL]);
SELECT count(*) FROM fi WHERE c = 7919::int4;
SELECT count(*) FROM fi WHERE c = ANY ('{7919, 3, -1}'::int2[]);
SELECT count(*) FROM fi WHERE c = NULL;
SELECT count(*) FROM fi WHERE c = ANY ('{}'::int8[]);
SELECT count(*) FROM fi WHERE d = '2020-02-01';
SELECT count(*) FROM fi_plain WHERE d = '2020-02-01';
-- IS NULL is not the index's: a plain scan answers it
RESET enable_seqscan;
EXPLAIN (COSTS OFF) SELECT count(*) FROM fi_1 WHERE c IS NULL;
SELECT count(*) FROM fi WHERE c IS NULL;

-- The rate of "maybe" for absent values, measured, within the target
-- (100,000 probes: the bound is the target plus three standard deviations)
SELECT count(*) FILTER (WHERE bloom_index_contains('fi_1_c_idx', v::int8))::float8 / 100000
       <= 0.01 + 3 * sqrt(0.01 * 0.99 / 100000) AS c_within,
       count(*) FILTER (WHERE bloom_index_contains('fi_1_t_idx', 'x' || v))::float8 / 100000
       <= 0.001 + 3 * sqrt(0.001 * 0.999 / 100000) AS t_within
  FROM generate_series(1000001, 1100000) v;

--
-- Inserts past the size the build chose: new generations, no false
-- negative, the rate at or under the target
--
CREATE TABLE fg (k int8);
INSERT INTO fg SELECT g FROM generate_series(1, 100) g;
CREATE INDEX fg_k ON fg USING amqfilter (k) WITH (false_positive_rate = 0.01);
SELECT generations, build_entries FROM amqfilter_index_info('fg_k');
INSERT INTO fg SELECT g FROM generate_series(101, 60000) g;
COPY fg FROM STDIN;
70001
70002
\.
SELECT generations > 1 AS grew, false_positive_rate <= target_false_positive_rate AS within_target,
       abs(entries - 60002) < 0.01 * 60002 AS an_entry_each
  FROM amqfilter_index_info('fg_k');
SELECT count(*) AS false_negatives FROM generate_series(1, 60000) v
 WHERE NOT bloom_index_contains('fg_k', v::int8);
SELECT bloom_index_contains('fg_k', 70001::int8), bloom_index_contains('fg_k', 70002::int4);
SELECT count(*) FILTER (WHERE bloom_index_contains('fg_k', v::int8))::float8 / 100000
       <= 0.01 + 3 * sqrt(0.01 * 0.99 / 100000) AS within_target
  FROM generate_series(1000001, 1100000) v;
-- the same values again, in blocks of their own: an entry each for their
-- new ranges, every row found
SELECT entries AS before FROM amqfilter_index_info('fg_k') \gset
INSERT INTO fg SELECT g % 60000 + 1 FROM generate_series(1, 60000) g;
SELECT entries - :before BETWEEN 0.99 * 60000 AND 60000 AS an_entry_each
  FROM amqfilter_index_info('fg_k');
SET enable_seqscan = off;
SELECT count(*) AS mismatches FROM generate_series(1, 60000, 7) v
 WHERE (SELECT count(*) FROM fg WHERE k = v) <> 2;
RESET enable_seqscan;
-- REINDEX sizes it again for what it holds: one generation
REINDEX INDEX fg_k;
SELECT generations, build_entries FROM amqfilter_index_info('fg_k');
-- deletes leave a "maybe" (the filter cannot forget), never a wrong answer
DELETE FROM fg WHERE k <= 10;
SET enable_seqscan = off;
SELECT count(*) FROM fg WHERE k = 5;
SELECT bloom_index_contains('fg_k', 5::int8);
VACUUM fg;
SELECT count(*) FROM fg WHERE k = 5;
RESET enable_seqscan;

--
-- Every write path is in the index right after it, and in the writing
-- transaction itself; DDL that rewrites or renames keeps answers right
--
CREATE TABLE fw (id int8 PRIMARY KEY, k int8, tag text) PARTITION BY RANGE (id);
CREATE TABLE fw_1 PARTITION OF fw FOR VALUES FROM (0) TO (1000);
CREATE TABLE fw_2 PARTITION OF fw FOR VALUES FROM (1000) TO (2000);
-- even ids: the odd ones are free for new rows
INSERT INTO fw SELECT 2 * g, 2 * g, 'seed' FROM generate_series(0, 999) g;
CREATE INDEX fw_k ON fw USING amqfilter (k);
-- rows of fw with k = v, through the filter index only
CREATE FUNCTION fw_found(v int8) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	SET LOCAL enable_seqscan = off;
	SELECT count(*) INTO n FROM fw WHERE k = v;
	RETURN n;
END $$;
BEGIN;
INSERT INTO fw VALUES (10, 900001, 'insert') ON CONFLICT (id) DO UPDATE SET k = EXCLUDED.k;
SELECT fw_found(900001) AS own_upsert;
COMMIT;
SELECT fw_found(900001) AS upsert;
INSERT INTO fw VALUES (1500, 900002, 'conflict') ON CONFLICT (id) DO UPDATE SET k = EXCLUDED.k;
SELECT fw_found(900002) AS upsert_conflict;
COPY fw FROM STDIN;
1997	900004	copy
\.
SELECT fw_found(900004) AS copy;
UPDATE fw SET id = 1901, k = 900005 WHERE id = 20;     -- moves to fw_2
SELECT fw_found(900005) AS update_moving;
MERGE INTO fw t USING (VALUES (30, 900006), (1999, 900007)) s(id, k) ON t.id = s.id
	WHEN MATCHED THEN UPDATE SET k = s.k
	WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.k, 'merge');
SELECT fw_found(900006) AS merge_1, fw_found(900007) AS merge_2;
BEGIN;
INSERT INTO fw VALUES (41, 900008, 'own');
SELECT fw_found(900008) AS own_insert;
SAVEPOINT s;
INSERT INTO fw VALUES (43, 900009, 'rolled back');
ROLLBACK TO SAVEPOINT s;
SELECT fw_found(900009) AS rolled_back;
COMMIT;
-- a rewrite with new values, a type change, a rename, VACUUM FULL, TRUNCATE
ALTER TABLE fw ALTER COLUMN k TYPE int8 USING k + 1000000;
SELECT fw_found(1900008) AS rewritten;
ALTER TABLE fw ALTER COLUMN k TYPE numeric;
SELECT count(*) FROM fw WHERE k = 1900008;
ALTER TABLE fw ALTER COLUMN k TYPE int8;
ALTER TABLE fw RENAME COLUMN k TO k2;
ALTER TABLE fw RENAME COLUMN tag TO k;
ALTER TABLE fw RENAME COLUMN k2 TO tag;
SET enable_seqscan = off;
SELECT count(*) FROM fw WHERE tag = 1900008;
EXPLAIN (COSTS OFF) SELECT count(*) FROM fw WHERE tag = 1900008;
RESET enable_seqscan;
VACUUM FULL fw_1;
TRUNCATE fw_2;
INSERT INTO fw VALUES (1234, 777, 'after truncate');
SET enable_seqscan = off;
SELECT count(*) FROM fw WHERE tag = 1900008;
SELECT count(*) FROM fw WHERE tag = 777;
RESET enable_seqscan;
DROP FUNCTION fw_found(int8);
DROP TABLE fw;

--
-- Collations: the index hashes under the column's, nondeterministic too
--
CREATE COLLATION fi_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE fc (k text COLLATE fi_ci);
INSERT INTO fc VALUES ('Alpha'), ('beta');
CREATE INDEX fc_k ON fc USING amqfilter (k);
SET enable_seqscan = off;
SELECT k FROM fc WHERE k = 'ALPHA';
SELECT k FROM fc WHERE k = 'Gamma';
EXPLAIN (COSTS OFF) SELECT k FROM fc WHERE k = 'ALPHA';
-- under another collation the index does not apply
EXPLAIN (COSTS OFF) SELECT k FROM fc WHERE k = 'ALPHA' COLLATE "C";
RESET enable_seqscan;

--
-- What PostgreSQL does with indexes works with this one
--
-- partitions attached or created later get the index; detached ones keep theirs
CREATE TABLE fi_5 (LIKE fi);
INSERT INTO fi_5 SELECT g, g, 't' || g, date '2021-01-01' FROM generate_series(20000, 20999) g;
ALTER TABLE fi ATTACH PARTITION fi_5 FOR VALUES FROM (20000) TO (21000);
CREATE TABLE fi_6 PARTITION OF fi FOR VALUES FROM (21000) TO (22000);
SELECT tablename, count(*) FROM pg_indexes WHERE tablename IN ('fi_5', 'fi_6') GROUP BY 1 ORDER BY 1;
SET enable_seqscan = off;
SELECT count(*) FROM fi WHERE c = 20500;
ALTER TABLE fi DETACH PARTITION fi_2;
SELECT count(*) FROM pg_indexes WHERE tablename = 'fi_2';
REINDEX INDEX CONCURRENTLY fi_1_c_idx;
SELECT count(*) FROM fi WHERE c = 7919;
CREATE INDEX CONCURRENTLY fi_plain_c ON fi_plain USING amqfilter (c);
DROP INDEX fi_plain_c_idx;
SELECT count(*) FROM fi_plain WHERE c = 7919;
RESET enable_seqscan;
-- an unlogged table's index (its empty form is the init fork)
CREATE UNLOGGED TABLE fu (k int4);
CREATE INDEX fu_k ON fu USING amqfilter (k);
INSERT INTO fu SELECT generate_series(1, 1000);
SET enable_seqscan = off;
SELECT count(*) FROM fu WHERE k = 500;
TRUNCATE fu;
INSERT INTO fu VALUES (7);
SELECT count(*) FROM fu WHERE k = 7;
RESET enable_seqscan;

--
-- Errors
--
CREATE INDEX ON fg USING amqfilter (k) WITH (false_positive_rate = 0);
CREATE INDEX ON fg USING amqfilter (k) WITH (false_positive_rate = 0.6);
CREATE INDEX ON fg USING amqfilter (k) WITH (fpr = 0.1);
CREATE TABLE fp (p point, a int, b int);
CREATE INDEX ON fp USING amqfilter (p);
CREATE INDEX ON fp USING amqfilter (a, b);
CREATE UNIQUE INDEX ON fp USING amqfilter (a);
SELECT bloom_index_contains('fg', 1);
CREATE INDEX fp_a_btree ON fp (a);
SELECT bloom_index_contains('fp_a_btree', 1);
SELECT bloom_index_contains('fg_k', 'one'::text);
SELECT bloom_index_contains('fg_k', NULL::int8);
-- the index summarizes every row: only roles that may read them all probe it
CREATE ROLE regress_fi_reader;
SET ROLE regress_fi_reader;
SELECT bloom_index_contains('fg_k', 1::int8);
SELECT * FROM amqfilter_index_info('fg_k');
RESET ROLE;
GRANT SELECT ON fg TO regress_fi_reader;
ALTER TABLE fg ENABLE ROW LEVEL SECURITY;
SET ROLE regress_fi_reader;
SELECT bloom_index_contains('fg_k', 1::int8);
RESET ROLE;
ALTER TABLE fg DISABLE ROW LEVEL SECURITY;
SET ROLE regress_fi_reader;
SELECT bloom_index_contains('fg_k', 11::int8), bloom_index_contains('fg_k', -1::int8);
RESET ROLE;
REVOKE SELECT ON fg FROM regress_fi_reader;
DROP ROLE regress_fi_reader;

DROP TABLE fi, fi_2, fi_plain, fg, fc, fu, fp;
DROP COLLATION fi_ci;
