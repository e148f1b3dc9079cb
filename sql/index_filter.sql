--
-- amqfilter_index_filter: the bloom value of what an amqfilter index
-- covers, built from its table as the caller, to store, merge or ship.
--
SET client_min_messages = warning;

CREATE TABLE if_t (k int8, name text);
INSERT INTO if_t SELECT g, 'Name' || g FROM generate_series(1, 5000) g;
CREATE INDEX if_k ON if_t USING amqfilter (k) WITH (false_positive_rate = 0.001);

-- the filter of the column: what bloom_agg(k, p) over the table gives, at
-- the index's rate; every value found, a bigint filter
SELECT amqfilter_index_filter('if_k') = (SELECT bloom_agg(k, 0.001) FROM if_t) AS same_as_bloom_agg,
       amqfilter_index_filter('if_k', 0.05) = (SELECT bloom_agg(k, 0.05) FROM if_t) AS same_at_p;
SELECT i.target_fpr, i.element, i.inserted
  FROM LATERAL bloom_info(amqfilter_index_filter('if_k')) i;
SELECT count(*) FILTER (WHERE NOT f @> k) AS missed
  FROM if_t, (SELECT amqfilter_index_filter('if_k') f) x;
-- absent values: "maybe" at about the rate (0.1%: 0 to 10 of 2,000)
SELECT count(*) FILTER (WHERE f @> v) BETWEEN 0 AND 10 AS rate_holds
  FROM generate_series(100001, 102000) v, (SELECT amqfilter_index_filter('if_k') f) x;
-- it is a value: stored, merged, compared
CREATE TABLE if_store (tbl regclass, f bloom);
INSERT INTO if_store SELECT 'if_t', amqfilter_index_filter('if_k', 0.01);
SELECT (SELECT f FROM if_store) @> 4242::int8 AS stored_finds;

-- an expression under a collation, and a predicate: only the rows and the
-- expression the index covers
CREATE INDEX if_lower ON if_t USING amqfilter (lower(name) COLLATE "C") WHERE k > 2500;
SELECT count(*) FILTER (WHERE k > 2500 AND NOT f @> lower(name)) AS covered_missed,
       count(*) FILTER (WHERE k <= 2500 AND f @> lower(name)) < 25 AS uncovered_mostly_absent,
       count(*) FILTER (WHERE k > 2500 AND f @> name) < 25 AS raw_names_mostly_absent
  FROM if_t, (SELECT amqfilter_index_filter('if_lower') f) x;

-- a partitioned table's index: every partition's rows
CREATE TABLE if_p (id int8, v text) PARTITION BY RANGE (id);
CREATE TABLE if_p1 PARTITION OF if_p FOR VALUES FROM (0) TO (1000);
CREATE TABLE if_p2 PARTITION OF if_p FOR VALUES FROM (1000) TO (2000);
INSERT INTO if_p SELECT g, 'v' || g FROM generate_series(0, 1999) g;
CREATE INDEX if_pv ON if_p USING amqfilter (v);
SELECT count(*) FILTER (WHERE NOT f @> v) AS missed, count(*) AS rows
  FROM if_p, (SELECT amqfilter_index_filter('if_pv') f) x;
-- one partition's index: that partition's rows
SELECT count(*) FILTER (WHERE NOT f @> v AND id < 1000) AS missed_own,
       count(*) FILTER (WHERE f @> v AND id >= 1000) < 30 AS others_mostly_absent
  FROM if_p, (SELECT amqfilter_index_filter(
                 (SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'if_p1'::regclass)) f) x;
-- an inheritance parent's index covers its own rows only
CREATE TABLE if_child (CHECK (k > 100000)) INHERITS (if_t);
INSERT INTO if_child VALUES (100001, 'child');
SELECT (amqfilter_index_filter('if_k', 0.000001) @> 100001::int8) AS child_row_in;

-- the caller's privileges and policies apply: a role under row-level
-- security gets the filter of the rows it may read
CREATE ROLE if_reader;
GRANT SELECT ON if_t TO if_reader;
ALTER TABLE if_t ENABLE ROW LEVEL SECURITY;
CREATE POLICY if_even ON if_t FOR SELECT TO if_reader USING (k % 2 = 0);
SET ROLE if_reader;
SELECT amqfilter_index_filter('if_k') = (SELECT bloom_agg(k, 0.001) FROM ONLY if_t) AS visible_rows_only,
       amqfilter_index_filter('if_k', 0.000001) @> 4243::int8 AS hidden_value;
-- built-in functions in an expression run for any reader
SELECT amqfilter_index_filter('if_lower') @> lower('Name4000') AS builtin_expression_runs;
RESET ROLE;
-- the owner's own function in an expression runs only for roles that may
-- act as the owner: for another it would run with that role's privileges
CREATE FUNCTION if_owner_fn(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN upper(t); END $$;
CREATE INDEX if_owner ON if_t USING amqfilter (if_owner_fn(name));
SELECT amqfilter_index_filter('if_owner') @> 'NAME7'::text AS owner_may;
SET ROLE if_reader;
SELECT amqfilter_index_filter('if_owner');
RESET ROLE;
CREATE ROLE if_nobody;
SET ROLE if_nobody;
SELECT amqfilter_index_filter('if_k');
RESET ROLE;

-- owner code that runs without being called by name: a domain's CHECK
-- constraint where a value is cast to the domain (in a predicate, in the
-- expression), and where a constant of a type made of the domain is read
-- in again from the query's text; refused as a function call is.  The
-- owner's function fails when it runs as the reader.
CREATE FUNCTION if_owner_check(v int8) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF current_user = 'if_reader' THEN
		RAISE EXCEPTION 'if_owner_check ran as %', current_user;
	END IF;
	RETURN v IS NOT NULL;
END $$;
CREATE DOMAIN if_checked AS int8 CHECK (if_owner_check(VALUE));
CREATE TYPE if_pair AS (a int8, b if_checked);
CREATE DOMAIN if_positive AS int8 CHECK (VALUE > 0);
CREATE TYPE if_mood AS ENUM ('low', 'high');
CREATE FUNCTION if_mood_rank(m if_mood) RETURNS int8 LANGUAGE sql IMMUTABLE AS $$ SELECT 7::int8 $$;
CREATE CAST (if_mood AS int8) WITH FUNCTION if_mood_rank(if_mood);
CREATE FUNCTION if_owner_ne(a int8, b int8) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$ SELECT a <> b $$;
CREATE OPERATOR <~> (LEFTARG = int8, RIGHTARG = int8, FUNCTION = if_owner_ne);
CREATE TABLE if_d (k int8, m if_mood);
INSERT INTO if_d SELECT g, 'low' FROM generate_series(1, 1000) g;
GRANT SELECT ON if_d TO if_reader;
CREATE INDEX if_d_pred ON if_d USING amqfilter (k) WHERE (k)::if_checked IS NOT NULL;
CREATE INDEX if_d_expr ON if_d USING amqfilter (((k)::if_checked));
CREATE INDEX if_d_row ON if_d USING amqfilter (k) WHERE k <> ('(1,5)'::if_pair).b;
CREATE INDEX if_d_array ON if_d USING amqfilter (k) WHERE k <> ALL ('{1,2}'::if_checked[]);
CREATE INDEX if_d_cast ON if_d USING amqfilter (k) WHERE (m)::int8 > 0;
CREATE INDEX if_d_op ON if_d USING amqfilter (k) WHERE k <~> 3;
-- PostgreSQL's own code only: a domain whose CHECK is built in, GREATEST, a
-- cast through text, an enum's I/O
CREATE INDEX if_d_builtin ON if_d USING amqfilter (((k)::if_positive))
	WHERE greatest(k, 0)::text <> '7' AND m <> 'high';
SELECT amqfilter_index_filter('if_d_pred') @> 5::int8 AS owner_pred,
       amqfilter_index_filter('if_d_expr') @> 5::int8 AS owner_expr;
SET ROLE if_reader;
SELECT amqfilter_index_filter('if_d_pred');
SELECT amqfilter_index_filter('if_d_expr');
SELECT amqfilter_index_filter('if_d_row');
SELECT amqfilter_index_filter('if_d_array');
SELECT amqfilter_index_filter('if_d_cast');
SELECT amqfilter_index_filter('if_d_op');
SELECT amqfilter_index_filter('if_d_builtin') @> 5::int8 AS builtin_runs;
RESET ROLE;
-- a function of constant arguments in the predicate: the stored
-- predicate is walked, not the relation cache's copy, in which PostgreSQL
-- has folded the call to its result (the query would fold it again, as
-- the reader)
CREATE TABLE if_f (k int8);
INSERT INTO if_f SELECT g FROM generate_series(1, 100) g;
GRANT SELECT ON if_f TO if_reader;
CREATE INDEX if_f_folded ON if_f USING amqfilter (k) WHERE if_owner_check(0);
SET ROLE if_reader;
SELECT amqfilter_index_filter('if_f_folded');
RESET ROLE;
DROP TABLE if_f;

-- a planted function of the same name as one the query uses is never called
CREATE SCHEMA if_evil;
CREATE FUNCTION if_evil.lower(text) RETURNS text LANGUAGE sql AS $$ SELECT 'planted' $$;
CREATE FUNCTION if_evil.bloom_agg(anyelement, double precision) RETURNS bloom
  LANGUAGE sql AS $$ SELECT NULL::bloom $$;
SET search_path = if_evil, public;
SELECT amqfilter_index_filter('if_lower') @> pg_catalog.lower('Name4000') AS not_planted;
RESET search_path;
-- an aggregate planted in the extension's schema, of closer argument types
-- than bloom_agg(anyelement, float8), is refused, not called
CREATE FUNCTION if_evil.sf(bloom, bigint, double precision) RETURNS bloom
  LANGUAGE sql AS $$ SELECT NULL::bloom $$;
CREATE AGGREGATE public.bloom_agg(bigint, double precision) (sfunc = if_evil.sf, stype = bloom);
SELECT amqfilter_index_filter('if_k');
DROP AGGREGATE public.bloom_agg(bigint, double precision);

-- what it takes
SELECT amqfilter_index_filter(NULL);
CREATE INDEX if_btree ON if_t (k);
SELECT amqfilter_index_filter('if_btree');
SELECT amqfilter_index_filter('if_k', 1.5);
-- bloom_index_contains answers for one index: not a partitioned table's
SELECT bloom_index_contains('if_pv', 'v1'::text);

DROP SCHEMA if_evil CASCADE;
DROP TABLE if_t, if_p, if_store, if_d CASCADE;
DROP FUNCTION if_owner_fn(text);
DROP OPERATOR <~> (int8, int8);
DROP FUNCTION if_owner_ne(int8, int8);
DROP CAST (if_mood AS int8);
DROP FUNCTION if_mood_rank(if_mood);
DROP TYPE if_pair, if_mood;
DROP DOMAIN if_checked, if_positive;
DROP FUNCTION if_owner_check(int8);
DROP ROLE if_reader;
DROP ROLE if_nobody;
