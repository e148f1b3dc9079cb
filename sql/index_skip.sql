--
-- Partitions an amqfilter index rules out are not scanned: with a constant
-- they get no plan but an AmqFilter Scan and the AmqFilter Append drops
-- them when the plan starts; with a generic plan's parameter, at start-up;
-- with a nested loop's outer value, at each rescan.  Never a row lost,
-- cached plans included.
--
SET client_min_messages = warning;
-- answers for absent values are shown: the same seed every run
SET amqfilter.index_seed = 20260104;
-- the planner's hooks from this session's first query on
LOAD 'amqfilter';

-- EXPLAIN's lines, without costs (and timing, with ANALYZE)
CREATE FUNCTION sk_explain(q text, with_analyze boolean DEFAULT false) RETURNS SETOF text
LANGUAGE plpgsql SET search_path = public AS $$
DECLARE
  r text;
BEGIN
  FOR r IN EXECUTE format('EXPLAIN (COSTS OFF%s) %s',
                          CASE WHEN with_analyze THEN ', ANALYZE, BUFFERS OFF, TIMING OFF, SUMMARY OFF' ELSE '' END,
                          q) LOOP
    RETURN NEXT r;
  END LOOP;
END $$;

CREATE TABLE sk (id int8, k int8, t text) PARTITION BY RANGE (id);
DO $$
BEGIN
  FOR i IN 0..11 LOOP
    EXECUTE format('CREATE TABLE sk_%s PARTITION OF sk FOR VALUES FROM (%s) TO (%s)',
                   i, i * 1000, (i + 1) * 1000);
  END LOOP;
END $$;
-- every k once, scattered over the partitions
INSERT INTO sk SELECT g, (g * 7919) % 12000, 't' || ((g * 7919) % 12000)
  FROM generate_series(0, 11999) g;
CREATE INDEX sk_k ON sk USING amqfilter (k);
CREATE INDEX sk_t ON sk USING amqfilter (t);
CREATE TABLE sk_plain AS SELECT * FROM sk;
ANALYZE sk, sk_plain;

-- a constant no partition holds: none is read, none is listed
EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM sk WHERE k = -5;
-- one partition holds it: only that one is listed, and read where its
-- index says the value is
EXPLAIN (COSTS OFF) SELECT * FROM sk WHERE k = 7919;
SELECT * FROM sk WHERE k = 7919;
-- the constant on the left, of another integer type; a text key
SELECT id FROM sk WHERE 7919 = k;
SELECT id FROM sk WHERE k = 7919::int4;
EXPLAIN (COSTS OFF) SELECT id FROM sk WHERE t = 't7919';
SELECT id FROM sk WHERE t = 't7919';
-- a computed target list (the scan projects it), no columns at all
SELECT k + 1 AS k1, upper(t) AS t FROM sk WHERE k = 7919;
SELECT count(*) FROM sk WHERE k = 7919;
SELECT count(*) FROM sk WHERE k = -5;
-- turned off: the plain plan, a bitmap scan of each partition
SET amqfilter.index_skip = off;
SELECT count(*) AS partitions_listed
  FROM sk_explain('SELECT count(*) FROM sk WHERE k = -5') l WHERE l ~ 'Bitmap Heap Scan';
RESET amqfilter.index_skip;

-- the plain table's answers, for values present and absent, each planned
-- with its constant
CREATE FUNCTION sk_mismatches(step int) RETURNS int LANGUAGE plpgsql
SET search_path = public AS $$
DECLARE
  v int8;
  a int8[];
  b int8[];
  bad int := 0;
BEGIN
  FOR v IN SELECT generate_series(-100, 12100, step) LOOP
    EXECUTE format('SELECT array_agg(id ORDER BY id) FROM sk WHERE k = %s', v) INTO a;
    EXECUTE format('SELECT array_agg(id ORDER BY id) FROM sk_plain WHERE k = %s', v) INTO b;
    IF a IS DISTINCT FROM b THEN
      bad := bad + 1;
    END IF;
  END LOOP;
  RETURN bad;
END $$;
SELECT sk_mismatches(37) AS mismatches;

-- A cached plan made with a constant the index ruled out: the value
-- inserted since is found (PL/pgSQL keeps the plan of a statement with a
-- literal), in later transactions and in the same one.
CREATE FUNCTION sk_find_a() RETURNS int8[] LANGUAGE plpgsql SET search_path = public AS $$
BEGIN
  RETURN (SELECT array_agg(id ORDER BY id) FROM sk WHERE k = 424242);
END $$;
SELECT sk_find_a();
INSERT INTO sk VALUES (5555, 424242, 'new');
SELECT sk_find_a();
CREATE FUNCTION sk_find_b() RETURNS int8[] LANGUAGE plpgsql SET search_path = public AS $$
BEGIN
  RETURN (SELECT array_agg(id ORDER BY id) FROM sk WHERE k = 434343);
END $$;
BEGIN;
SELECT sk_find_b();
INSERT INTO sk VALUES (7777, 434343, 'new');
SELECT sk_find_b();
COMMIT;
DELETE FROM sk WHERE k IN (424242, 434343) RETURNING id, k;

-- A generic plan: partitions removed at start-up, as EXPLAIN ANALYZE says;
-- EXPLAIN alone probes nothing.
PREPARE sk_q(int8) AS SELECT id FROM sk WHERE k = $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE sk_q(7919);
SELECT count(*) AS partitions_listed
  FROM sk_explain('EXECUTE sk_q(7919)') l WHERE l ~ 'Bitmap Heap Scan';
EXECUTE sk_q(7919);
EXECUTE sk_q(-5);
EXECUTE sk_q(NULL);
-- an expression of the parameter
PREPARE sk_e(int8) AS SELECT id FROM sk WHERE k = $1 * 7919 % 12000;
EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE sk_e(1);
EXECUTE sk_e(1);
RESET plan_cache_mode;
-- under plan_cache_mode = auto the generic plan wins after five custom ones
PREPARE sk_auto(int8) AS SELECT id FROM sk WHERE k = $1;
EXECUTE sk_auto(1);
EXECUTE sk_auto(2);
EXECUTE sk_auto(3);
EXECUTE sk_auto(4);
EXECUTE sk_auto(5);
EXECUTE sk_auto(6);
EXECUTE sk_auto(7);
SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'sk_auto';

-- A nested loop: each rescan scans only the partitions whose index may hold
-- the outer row's value, with the plain table's answers.
CREATE TABLE sk_keys (k int8);
INSERT INTO sk_keys VALUES (7919), (-5), (15838 % 12000), (424242), (NULL);
ANALYZE sk_keys;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
SELECT l FROM sk_explain('SELECT s.id FROM sk_keys x JOIN sk s ON s.k = x.k', true) l
 WHERE l ~ '(Nested Loop|AmqFilter|Partition)';
(SELECT s.id FROM sk_keys x JOIN sk s ON s.k = x.k
 EXCEPT ALL SELECT s.id FROM sk_keys x JOIN sk_plain s ON s.k = x.k)
UNION ALL
(SELECT s.id FROM sk_keys x JOIN sk_plain s ON s.k = x.k
 EXCEPT ALL SELECT s.id FROM sk_keys x JOIN sk s ON s.k = x.k);
-- a correlated subquery: its parameter, at each of its runs
SELECT count(*) AS values_checked,
       bool_and(a IS NOT DISTINCT FROM b) AS same
  FROM (SELECT (SELECT array_agg(id ORDER BY id) FROM sk WHERE k = v) a,
               (SELECT array_agg(id ORDER BY id) FROM sk_plain WHERE k = v) b
          FROM generate_series(-100, 12100, 41) v) s;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- a scrollable cursor keeps the plain Append (it can run backwards)
BEGIN;
DECLARE sk_c SCROLL CURSOR FOR SELECT id FROM sk WHERE k IN (7919) ORDER BY id;
FETCH ALL FROM sk_c;
FETCH BACKWARD 1 FROM sk_c;
COMMIT;

-- Partitions of partitions: one Append over the leaves, the same removal.
CREATE TABLE sk2 (id int8, k int8) PARTITION BY RANGE (id);
CREATE TABLE sk2_a PARTITION OF sk2 FOR VALUES FROM (0) TO (1000) PARTITION BY RANGE (id);
CREATE TABLE sk2_a1 PARTITION OF sk2_a FOR VALUES FROM (0) TO (500);
CREATE TABLE sk2_a2 PARTITION OF sk2_a FOR VALUES FROM (500) TO (1000);
CREATE TABLE sk2_b PARTITION OF sk2 FOR VALUES FROM (1000) TO (2000);
INSERT INTO sk2 SELECT g, g * 3 FROM generate_series(0, 1999) g;
CREATE INDEX ON sk2 USING amqfilter (k);
ANALYZE sk2;
EXPLAIN (COSTS OFF) SELECT id FROM sk2 WHERE k = 300;
SELECT id FROM sk2 WHERE k = 300;
SELECT id FROM sk2 WHERE k = 301;

-- Row security: where a policy stands between a role and the table, the
-- planner does not probe, and a value only hidden rows hold plans as one
-- no row holds; the answers are the policy's.
CREATE ROLE sk_reader;
GRANT SELECT ON sk TO sk_reader;
GRANT EXECUTE ON FUNCTION sk_explain(text, boolean) TO sk_reader;
ALTER TABLE sk ENABLE ROW LEVEL SECURITY;
CREATE POLICY sk_low ON sk TO sk_reader USING (id < 6000);
SELECT k AS hidden_k FROM sk WHERE id = 6001 \gset
SET ROLE sk_reader;
SELECT array_agg(regexp_replace(a, '[0-9]+', 'N', 'g')) =
       array_agg(regexp_replace(b, '[0-9]+', 'N', 'g')) AS same_plan
  FROM (SELECT sk_explain(format('SELECT id FROM sk WHERE k = %s', :hidden_k)) a,
               sk_explain('SELECT id FROM sk WHERE k = 999999') b) s;
SELECT count(*) FROM sk WHERE k = :hidden_k;
RESET ROLE;
-- the owner (no policy applies) gets the probed plan
SELECT count(*) AS partitions_listed
  FROM sk_explain(format('SELECT id FROM sk WHERE k = %s', :hidden_k)) l
 WHERE l ~ 'AmqFilter Scan';
DROP POLICY sk_low ON sk;
ALTER TABLE sk DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON sk FROM sk_reader;
REVOKE ALL ON FUNCTION sk_explain(text, boolean) FROM sk_reader;
DROP ROLE sk_reader;

-- ALTER INDEX on the partitioned index reaches every partition's index,
-- and a partition created later inherits the options
ALTER INDEX sk_k SET (false_positive_rate = 0.001, max_generations = 8);
SELECT count(*) AS partitions,
       count(*) FILTER (WHERE c.reloptions = '{false_positive_rate=0.001,max_generations=8}') AS set
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'sk_k'::regclass;
CREATE TABLE sk_12 PARTITION OF sk FOR VALUES FROM (12000) TO (13000);
SELECT c.reloptions FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
 WHERE x.indrelid = 'sk_12'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'amqfilter')
   AND pg_get_indexdef(c.oid) ~ '\(k\)';
-- the new partition's index was built at the new rate
INSERT INTO sk SELECT g, g, 'x' FROM generate_series(12000, 12999) g;
SELECT target_false_positive_rate FROM amqfilter_index_info('sk_12_k_idx');
ALTER INDEX sk_k RESET (false_positive_rate, max_generations);
SELECT count(*) FILTER (WHERE c.reloptions IS NULL) AS reset
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'sk_k'::regclass;
ALTER INDEX sk_k SET (false_positive_rate = 2);
-- other ALTER INDEX statements are PostgreSQL's own
ALTER INDEX sk_k SET TABLESPACE pg_default;

-- amqfilter_index_info on the partitioned index: a row per partition's
-- index, and a total
SELECT count(*) FILTER (WHERE partition_index IS NOT NULL) AS partition_rows,
       count(*) FILTER (WHERE partition_index IS NULL) AS total_rows
  FROM amqfilter_index_info('sk_k');
SELECT i.entries = (SELECT sum(entries) FROM amqfilter_index_info('sk_k') WHERE partition_index IS NOT NULL) AS total_is_sum,
       i.bytes = (SELECT sum(pg_relation_size(partition_index)) FROM amqfilter_index_info('sk_k') WHERE partition_index IS NOT NULL) AS bytes_are_sizes,
       i.pages_per_range IS NULL AS no_single_range
  FROM amqfilter_index_info('sk_k') i WHERE i.partition_index IS NULL;
-- the partitions that may hold a value: the one that does; none for values
-- below every partition's least (the indexes' bounds rule them out without
-- their pages), nor for NULL
SELECT amqfilter_index_candidates('sk_k', 7919::int8);
SELECT count(*) AS absent_candidates
  FROM generate_series(-1000, -1) v, amqfilter_index_candidates('sk_k', v::int8);
SELECT count(*) FROM amqfilter_index_candidates('sk_k', NULL::int8);
SELECT amqfilter_index_candidates('sk_0_k_idx', 7919);
SELECT amqfilter_index_candidates('sk_k', 't7919'::text);
-- every present value names its partition
SELECT count(*) AS values_checked,
       bool_and(tableoid::regclass IN (SELECT amqfilter_index_candidates('sk_k', k))) AS named
  FROM sk WHERE id % 97 = 0;
-- the partitioned table's privileges, as for a query of it
CREATE ROLE sk_nobody;
SET ROLE sk_nobody;
SELECT count(*) FROM amqfilter_index_info('sk_k');
SELECT count(*) FROM amqfilter_index_candidates('sk_k', 7919::int8);
ALTER INDEX sk_k SET (false_positive_rate = 0.05);
RESET ROLE;
DROP ROLE sk_nobody;

DROP TABLE sk, sk_plain, sk_keys, sk2;
DROP FUNCTION sk_mismatches(int), sk_find_a(), sk_find_b(), sk_explain(text, boolean);
