-- Forced parallel aggregation: combine, serialize and deserialize run, and
-- the result is byte-identical to the serial build.

CREATE TABLE big (id int8, grp int);
INSERT INTO big SELECT g, g % 3 FROM generate_series(1, 200000) g;
INSERT INTO big VALUES (NULL, 0);
ANALYZE big;

-- serial reference
SET max_parallel_workers_per_gather = 0;
CREATE TABLE serial_result AS
  SELECT bloom_agg(id, 200000, 0.01)::bytea AS blocked,
         bloom_agg(id, 200000, 0.01, 'classic')::bytea AS classic
    FROM big;
CREATE TABLE serial_groups AS
  SELECT grp, bloom_agg(id, 100000, 0.01)::bytea AS b FROM big GROUP BY grp;

-- forced parallel
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;

EXPLAIN (COSTS OFF)
  SELECT bloom_agg(id, 200000, 0.01), bloom_agg(id, 200000, 0.01, 'classic') FROM big;
SELECT p.blocked = s.blocked AS blocked_identical, p.classic = s.classic AS classic_identical
  FROM (SELECT bloom_agg(id, 200000, 0.01)::bytea AS blocked,
               bloom_agg(id, 200000, 0.01, 'classic')::bytea AS classic
          FROM big) p, serial_result s;

-- grouped, with a partial aggregate per worker
EXPLAIN (COSTS OFF)
  SELECT grp, bloom_agg(id, 100000, 0.01) FROM big GROUP BY grp;
SELECT count(*) AS groups, bool_and(p.b = s.b) AS identical
  FROM (SELECT grp, bloom_agg(id, 100000, 0.01)::bytea AS b FROM big GROUP BY grp) p
  JOIN serial_groups s USING (grp);

-- bloom_union_agg in parallel over stored filters
CREATE TABLE many_filters AS
  SELECT grp, id / 1000 AS chunk, bloom_agg(id, 200000, 0.01) AS f
    FROM big WHERE id IS NOT NULL GROUP BY grp, id / 1000;
ANALYZE many_filters;
EXPLAIN (COSTS OFF) SELECT bloom_union_agg(f) FROM many_filters;
SELECT bloom_union_agg(f)::bytea = (SELECT blocked FROM serial_result) AS identical
  FROM many_filters;

-- no rows at all, in parallel: the sizeless empty filter
SELECT (bloom_info(bloom_agg(id, 100, 0.01))).layout FROM big WHERE id < 0;

-- mismatched sizing is caught even when the rows are split among workers
-- (which row trips it depends on the split, so only the message is shown)
\set VERBOSITY terse
SELECT bloom_agg(id, CASE WHEN id < 100000 THEN 200000 ELSE 100000 END, 0.01) FROM big;
\set VERBOSITY default

RESET parallel_leader_participation;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
RESET max_parallel_workers_per_gather;
