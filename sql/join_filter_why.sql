--
-- A hash join that gets no runtime filter says why under EXPLAIN VERBOSE,
-- in a node over its build side that does nothing else; plain EXPLAIN and
-- the plans that run have no such node.
--
LOAD 'amqfilter';
SET amqfilter.join_filter = on;
SET max_parallel_workers_per_gather = 0;
SET enable_mergejoin = off;
SET enable_nestloop = off;
CREATE TABLE jw_big AS SELECT g AS id, g % 1000 AS dim_id FROM generate_series(1, 100000) g;
CREATE TABLE jw_most AS SELECT g AS id FROM generate_series(0, 949) g;
CREATE TABLE jw_few AS SELECT g AS id FROM generate_series(0, 9) g;
ANALYZE jw_big, jw_most, jw_few;

-- estimated to keep 95% of the probe side's rows
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM jw_big b JOIN jw_most m ON m.id = b.dim_id;
EXPLAIN (COSTS OFF) SELECT count(*) FROM jw_big b JOIN jw_most m ON m.id = b.dim_id;
-- a probe side too small to gain; run, with its rows passed on
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
  SELECT count(*) FROM jw_most b JOIN jw_few m ON m.id = b.id;
SELECT count(*) FROM jw_most b JOIN jw_few m ON m.id = b.id;
-- a build side estimated past the keys a filter holds
SET amqfilter.join_filter_max_keys = 100;
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM jw_big b JOIN jw_most m ON m.id = b.dim_id;
RESET amqfilter.join_filter_max_keys;
-- a join that gets its filter shows it as before
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM jw_big b JOIN jw_few m ON m.id = b.dim_id;
SELECT count(*) FROM jw_big b JOIN jw_few m ON m.id = b.dim_id;
-- in a function's plan, planned under EXPLAIN's portal too: the same rows
CREATE FUNCTION jw_count() RETURNS bigint LANGUAGE sql STABLE
  AS $$ SELECT count(*) FROM jw_big b JOIN jw_most m ON m.id = b.dim_id $$;
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT jw_count();
SELECT jw_count();

DROP FUNCTION jw_count();
DROP TABLE jw_big, jw_most, jw_few;
