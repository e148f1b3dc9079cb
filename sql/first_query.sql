--
-- A session's first query, as an ordinary role: planned before the library
-- loads (it loads when the planner opens an amqfilter index), it still
-- skips partitions and gets join filters, as every later query does; and
-- any role may load the library from $libdir/plugins, for the queries that
-- touch nothing of the extension's.
--
SET client_min_messages = warning;
SELECT current_user AS fq_owner \gset
CREATE ROLE fq_app LOGIN;
CREATE TABLE fq (id int8, k int8) PARTITION BY RANGE (id);
CREATE TABLE fq_1 PARTITION OF fq FOR VALUES FROM (0) TO (10000);
CREATE TABLE fq_2 PARTITION OF fq FOR VALUES FROM (10000) TO (20000);
CREATE TABLE fq_3 PARTITION OF fq FOR VALUES FROM (20000) TO (30000);
-- keys grow with id: a partition holds its own
INSERT INTO fq SELECT g, g / 10 FROM generate_series(0, 29999) g;
SET amqfilter.index_seed = 20260108;
CREATE INDEX fq_k ON fq USING amqfilter (k);
RESET amqfilter.index_seed;
CREATE TABLE fq_keys AS SELECT g::int8 AS k FROM generate_series(1500, 1520) g;
CREATE TABLE fq_plain AS SELECT * FROM fq;
ANALYZE fq, fq_keys, fq_plain;
GRANT SELECT ON fq, fq_keys, fq_plain TO fq_app;

-- a new session's first query: partitions removed when the plan starts
\c - fq_app
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT count(*) FROM fq WHERE k = 1505;
SELECT count(*) FROM fq WHERE k = 1505;
\c - fq_app
SELECT count(*) FROM fq WHERE k = -5;
-- a first query with a join filter set before the library loaded: the join
-- gets its filter, and the filter skips the partitions without the keys
\c - fq_app
SET amqfilter.join_filter = on;
SET max_parallel_workers_per_gather = 0;
SET enable_nestloop = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM fq f JOIN fq_keys x ON x.k = f.k;
SELECT count(*) FROM fq f JOIN fq_keys x ON x.k = f.k;
-- a query that touches nothing of the extension's does not load it: the
-- library from $libdir/plugins, which any role may load, does
\c - fq_app
LOAD 'amqfilter';
LOAD '$libdir/plugins/amqfilter';
SET amqfilter.join_filter = on;
SET max_parallel_workers_per_gather = 0;
SET enable_nestloop = off;
SET enable_mergejoin = off;
SET amqfilter.join_filter_min_probe_rows = 1000;
EXPLAIN (COSTS OFF) SELECT count(*) FROM fq_plain f JOIN fq_keys x ON x.k = f.k;
SELECT count(*) FROM fq_plain f JOIN fq_keys x ON x.k = f.k;
-- the library is loaded once, whichever of its names loaded it
SELECT bloom_contains(bloom_agg(k, 0.01), 1505::int8) FROM fq_keys;

-- the role preloads it for its every session itself (local_preload_libraries
-- names libraries of $libdir/plugins), settings beside it: a new session's
-- first query, a plain hash join, gets its filter
ALTER ROLE fq_app SET local_preload_libraries = 'amqfilter';
ALTER ROLE fq_app SET amqfilter.join_filter = on;
\c - fq_app
SET max_parallel_workers_per_gather = 0;
SET enable_nestloop = off;
SET enable_mergejoin = off;
SET amqfilter.join_filter_min_probe_rows = 1000;
EXPLAIN (COSTS OFF) SELECT count(*) FROM fq_plain f JOIN fq_keys x ON x.k = f.k;
SELECT count(*) FROM fq_plain f JOIN fq_keys x ON x.k = f.k;

\c - :fq_owner
DROP TABLE fq, fq_keys, fq_plain;
DROP ROLE fq_app;
