-- Forced parallel aggregation: combine, serialize and deserialize run, and
-- the result holds the same values as the serial build.  The bytes may
-- differ: a cuckoo filter's layout depends on insertion order, and merging
-- the workers' filters inserts in another order than a serial scan.

CREATE SCHEMA cuckoo_parallel;
SET search_path = cuckoo_parallel, public;

CREATE TABLE big (id int8, grp int);
INSERT INTO big SELECT g, g % 3 FROM generate_series(1, 200000) g;
INSERT INTO big VALUES (NULL, 0);
ANALYZE big;

-- serial reference
SET max_parallel_workers_per_gather = 0;
CREATE TABLE serial_result AS
  SELECT cuckoo_agg(id, 200000, 0.01) AS sized,
         cuckoo_agg(id, 1000, 0.01) AS grown
    FROM big;
CREATE TABLE serial_groups AS
  SELECT grp, cuckoo_agg(id, 100000, 0.01) AS f FROM big GROUP BY grp;
SELECT (cuckoo_info(sized)).items AS sized_items, (cuckoo_info(sized)).tables AS sized_tables,
       (cuckoo_info(grown)).items AS grown_items, (cuckoo_info(grown)).tables > 1 AS grew
  FROM serial_result;

-- forced parallel
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
-- the grown filters warn that they are overfilled; their rate depends on
-- how the workers split the rows, so the numbers would differ run to run
SET client_min_messages = error;

EXPLAIN (COSTS OFF)
  SELECT cuckoo_agg(id, 200000, 0.01), cuckoo_agg(id, 1000, 0.01) FROM big;
CREATE TABLE parallel_result AS
  SELECT cuckoo_agg(id, 200000, 0.01) AS sized,
         cuckoo_agg(id, 1000, 0.01) AS grown
    FROM big;
-- the same items as the serial build, the same geometry, every value found:
-- also when each worker's filter grew and the merge had to fold growth tables
SELECT (cuckoo_info(p.sized)).items = (cuckoo_info(s.sized)).items AS sized_same_items,
       (cuckoo_info(p.sized)).buckets = (cuckoo_info(s.sized)).buckets AS sized_same_buckets,
       (cuckoo_info(p.grown)).items = (cuckoo_info(s.grown)).items AS grown_same_items,
       (cuckoo_info(p.grown)).tables > 1 AS grown_grew,
       (SELECT count(*) FROM big b WHERE b.id IS NOT NULL AND NOT p.sized @> b.id) AS sized_false_negatives,
       (SELECT count(*) FROM big b WHERE b.id IS NOT NULL AND NOT p.grown @> b.id) AS grown_false_negatives
  FROM parallel_result p, serial_result s;
-- and answers absent values about as often as the serial build
SELECT abs(p - s) < 0.005 AS similar_false_positive_rate
  FROM (SELECT (SELECT count(*) FROM generate_series(1000001, 1200000) g WHERE p.sized @> g) / 200000.0 AS p,
               (SELECT count(*) FROM generate_series(1000001, 1200000) g WHERE s.sized @> g) / 200000.0 AS s
          FROM parallel_result p, serial_result s) r;

-- grouped, with a partial aggregate per worker
EXPLAIN (COSTS OFF)
  SELECT grp, cuckoo_agg(id, 100000, 0.01) FROM big GROUP BY grp;
CREATE TABLE parallel_groups AS
  SELECT grp, cuckoo_agg(id, 100000, 0.01) AS f FROM big GROUP BY grp;
SELECT count(*) AS groups,
       bool_and((cuckoo_info(p.f)).items = (cuckoo_info(s.f)).items) AS same_items,
       sum((SELECT count(*) FROM big b
             WHERE b.grp = p.grp AND b.id IS NOT NULL AND NOT p.f @> b.id)) AS false_negatives
  FROM parallel_groups p JOIN serial_groups s USING (grp);
-- ... also with n underestimated 100 times: growth in every worker's group
SELECT grp, (cuckoo_info(f)).items, (cuckoo_info(f)).tables > 1 AS grew,
       (SELECT count(*) FROM big b WHERE b.grp = s.grp AND b.id IS NOT NULL AND NOT f @> b.id) AS false_negatives
  FROM (SELECT grp, cuckoo_agg(id, 1000, 0.01) AS f FROM big GROUP BY grp) s
 ORDER BY grp;

-- cuckoo_union_agg in parallel over stored filters
CREATE TABLE many_filters AS
  SELECT grp, id / 1000 AS chunk, cuckoo_agg(id, 20000, 0.01) AS f
    FROM big WHERE id IS NOT NULL GROUP BY grp, id / 1000;
ANALYZE many_filters;
EXPLAIN (COSTS OFF) SELECT cuckoo_union_agg(f) FROM many_filters;
SELECT (cuckoo_info(u)).items, (cuckoo_info(u)).items = (SELECT sum((cuckoo_info(f)).items) FROM many_filters) AS sum_of_parts,
       (SELECT count(*) FROM big b WHERE b.id IS NOT NULL AND NOT u @> b.id) AS false_negatives
  FROM (SELECT cuckoo_union_agg(f) AS u FROM many_filters) s;

-- no rows at all, in parallel: the sizeless empty filter
SELECT (cuckoo_info(cuckoo_agg(id, 100, 0.01))).tables FROM big WHERE id < 0;
SELECT (cuckoo_info(cuckoo_union_agg(f))).tables FROM many_filters WHERE chunk < 0;

-- mismatched sizing is caught even when the rows are split among workers
-- (which row trips it depends on the split, so only the message is shown)
\set VERBOSITY terse
SELECT cuckoo_agg(id, CASE WHEN id < 100000 THEN 200000 ELSE 100000 END, 0.01) FROM big;
\set VERBOSITY default

RESET parallel_leader_participation;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
RESET max_parallel_workers_per_gather;
