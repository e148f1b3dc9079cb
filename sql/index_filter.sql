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
DROP TABLE if_t, if_p, if_store CASCADE;
DROP FUNCTION if_owner_fn(text);
DROP ROLE if_reader;
DROP ROLE if_nobody;
