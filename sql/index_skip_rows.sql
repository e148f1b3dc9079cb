--
-- What partition skipping returns: every row the plain plan returns, once,
-- and in a form the nodes above can read, whatever the partitions' scans.
--
SET client_min_messages = warning;
SET amqfilter.index_seed = 20260104;
LOAD 'amqfilter';

-- A partition without an amqfilter index beside one that is ruled out:
-- the AmqFilter Append hands up the other's rows in the slots its scan
-- fills (a table's own kind), and the whole row is read above it.
CREATE TABLE sr_mixed (p int, k int, v text) PARTITION BY LIST (p);
CREATE TABLE sr_mixed_1 PARTITION OF sr_mixed FOR VALUES IN (1);
CREATE TABLE sr_mixed_2 PARTITION OF sr_mixed FOR VALUES IN (2);
CREATE TABLE sr_mixed_3 PARTITION OF sr_mixed FOR VALUES IN (3);
-- k = 5 only in sr_mixed_2 (odd g)
INSERT INTO sr_mixed SELECT 1 + g % 2, g % 50, 'v' || g FROM generate_series(1, 2000) g;
INSERT INTO sr_mixed SELECT 3, g % 50, 'w' || g FROM generate_series(1, 2000) g;
CREATE INDEX ON sr_mixed_1 USING amqfilter (k);
CREATE INDEX ON sr_mixed_3 (k);
ANALYZE sr_mixed;
EXPLAIN (COSTS OFF) SELECT * FROM sr_mixed WHERE k = 5;
SELECT count(*), md5(string_agg(x::text, ',' ORDER BY x.v))
  FROM (SELECT * FROM sr_mixed WHERE k = 5) x;
-- whole rows, a column past the first, an expression over them
SELECT x, x.v, length(x::text) FROM (SELECT * FROM sr_mixed WHERE k = 5) x ORDER BY x.v LIMIT 3;
SELECT k, count(*), max(v) FROM sr_mixed WHERE k = 5 GROUP BY k;
SET amqfilter.index_skip = off;
SELECT count(*), md5(string_agg(x::text, ',' ORDER BY x.v))
  FROM (SELECT * FROM sr_mixed WHERE k = 5) x;
RESET amqfilter.index_skip;
-- the same through a generic plan's parameter
PREPARE sr_mixed_q(int) AS
  SELECT count(*), md5(string_agg(x::text, ',' ORDER BY x.v)) FROM (SELECT * FROM sr_mixed WHERE k = $1) x;
SET plan_cache_mode = force_generic_plan;
EXECUTE sr_mixed_q(5);
RESET plan_cache_mode;
DEALLOCATE sr_mixed_q;

-- Generations of other range sizes: an index built with ranges of one
-- block, then of 64 (ALTER INDEX ... SET, and enough values for a new
-- generation).  A row in a block both generations' ranges cover is read
-- once: the ranges are merged before the table is read.
CREATE TABLE sr_gen (p int, k int) PARTITION BY LIST (p);
CREATE TABLE sr_gen_1 PARTITION OF sr_gen FOR VALUES IN (1);
CREATE TABLE sr_gen_2 PARTITION OF sr_gen FOR VALUES IN (2);
INSERT INTO sr_gen SELECT 1, g FROM generate_series(1, 100) g;
CREATE INDEX sr_gen_k ON sr_gen USING amqfilter (k) WITH (pages_per_range = 1);
ALTER INDEX sr_gen_1_k_idx SET (pages_per_range = 64);
INSERT INTO sr_gen SELECT 1, 1000 + g FROM generate_series(1, 6000) g;
INSERT INTO sr_gen VALUES (1, 42);
ANALYZE sr_gen;
SELECT generations, pages_per_range FROM amqfilter_index_info('sr_gen_1_k_idx');
SELECT pg_relation_size('sr_gen_1') / current_setting('block_size')::int AS table_blocks;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT count(*) FROM sr_gen WHERE k = 42;
SELECT count(*) FROM sr_gen WHERE k = 42;
SELECT count(*) FROM sr_gen WHERE k IN (42);
SELECT ctid, k FROM sr_gen WHERE k = 42 ORDER BY ctid;
SET amqfilter.index_skip = off;
SELECT count(*) FROM sr_gen WHERE k = 42;
RESET amqfilter.index_skip;

DROP TABLE sr_mixed, sr_gen;
