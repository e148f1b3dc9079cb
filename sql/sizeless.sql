--
-- bloom_agg(value, p [, layout]) and cuckoo_agg(value, p): filters sized from
-- the values they see.  Against the same aggregate sized by hand for the
-- exact distinct count: bytes within 5%, the rate at or under p; NULLs and
-- zero rows; parallel builds byte-identical to serial ones; builds that do
-- not fit in work_mem (spilled, or rid of duplicates) identical to ones that
-- do.
--
-- serial unless said otherwise: a cuckoo filter's bytes depend on the order
-- its values arrive in
SET max_parallel_workers_per_gather = 0;
CREATE TABLE sz (id int8, grp int, t text);
INSERT INTO sz SELECT g, g % 3, 'v' || (g % 50000) FROM generate_series(1, 200000) g;
INSERT INTO sz VALUES (NULL, 0, NULL);
ANALYZE sz;

-- bytes against the sized form, for 1 .. 200,000 distinct values
SELECT n,
       pg_column_size(bloom_agg(v, 0.01)) <= 1.05 * pg_column_size(bloom_agg(v, n, 0.01)) AS bloom_within,
       pg_column_size(cuckoo_agg(v, 0.01)) <= 1.05 * pg_column_size(cuckoo_agg(v, n, 0.01)) AS cuckoo_within,
       (bloom_info(bloom_agg(v, 0.01))).capacity >= n AS sized_for_all
  FROM (VALUES (1), (10), (1000), (50000), (200000)) c(n),
       LATERAL (SELECT g::int8 AS v FROM generate_series(1, c.n) g) s
 GROUP BY n ORDER BY n;
-- duplicates count once: 50,000 distinct text values in 200,000 rows
SELECT (bloom_info(bloom_agg(t, 0.01))).capacity BETWEEN 50000 AND 52000 AS text_capacity
  FROM sz;

-- the rate of "maybe" for absent values at or under p (three standard
-- deviations over 200,000 probes)
WITH f AS (SELECT bloom_agg(id, 0.01) AS b, bloom_agg(id, 0.001, 'classic') AS c,
                  cuckoo_agg(id, 0.01) AS k FROM sz)
SELECT count(*) FILTER (WHERE f.b @> v)::float8 / 200000 <= 0.01 + 3 * sqrt(0.01 * 0.99 / 200000) AS blocked_within,
       count(*) FILTER (WHERE f.c @> v)::float8 / 200000 <= 0.001 + 3 * sqrt(0.001 * 0.999 / 200000) AS classic_within,
       count(*) FILTER (WHERE f.k @> v)::float8 / 200000 <= 0.01 + 3 * sqrt(0.01 * 0.99 / 200000) AS cuckoo_within
  FROM f, generate_series(1000001::int8, 1200000) v;
-- and no false negative
SELECT count(*) AS false_negatives
  FROM sz, (SELECT bloom_agg(id, 0.01) AS b, cuckoo_agg(id, 0.01) AS k FROM sz) f
 WHERE sz.id IS NOT NULL AND NOT (f.b @> sz.id AND f.k @> sz.id);

-- NULLs are skipped; no value at all (zero rows, or only NULLs) gives the
-- sizeless empty filter, which holds nothing
SELECT (bloom_info(bloom_agg(id, 0.01))).layout AS only_nulls,
       (cuckoo_info(cuckoo_agg(id, 0.01))).bytes AS cuckoo_only_nulls
  FROM sz WHERE id IS NULL;
SELECT (bloom_info(bloom_agg(id, 0.01))).bytes AS zero_rows,
       (cuckoo_info(cuckoo_agg(id, 0.01))).bytes AS cuckoo_zero_rows
  FROM sz WHERE false;
SELECT bloom_agg(id, 0.01) @> 1::int8 AS holds_nothing FROM sz WHERE false;

-- layouts that count keep every copy: 2 of each value here, below the
-- counters' limits (3 for dleft, 15 for counting, where a count stops)
SELECT bloom_count(bloom_agg(id % 100000, 0.01, 'counting'), 1) AS counting_copies,
       bloom_count(bloom_agg(id % 100000, 0.01, 'dleft'), 1) AS dleft_copies,
       cuckoo_count(cuckoo_agg(id % 100000, 0.01), 1) AS cuckoo_copies,
       count(*) FILTER (WHERE id % 100000 = 1) AS rows_of_1
  FROM sz;

-- groups, each sized for its own values
SELECT grp, (bloom_info(bloom_agg(id, 0.01))).capacity BETWEEN count(DISTINCT id) AND 1.05 * count(DISTINCT id) AS sized
  FROM sz GROUP BY grp ORDER BY grp;

-- memory: with work_mem far below 200,000 hashes (room for 8,192), the
-- hashes go to a temporary file, or, for a set whose distinct values fit
-- in half the room (id % 3000), are sorted down; the filters are those
-- built in memory
CREATE TABLE sz_ref AS
  SELECT bloom_agg(id, 0.01)::bytea AS b, bloom_agg(id % 3000, 0.01)::bytea AS bt,
         cuckoo_agg(id, 0.01)::bytea AS k, bloom_agg(grp, 0.01, 'counting')::bytea AS c
    FROM sz;
SET work_mem = '64kB';
SELECT s.b = r.b AS spilled_same, s.bt = r.bt AS deduplicated_same,
       s.k = r.k AS cuckoo_same, s.c = r.c AS counting_same
  FROM (SELECT bloom_agg(id, 0.01)::bytea AS b, bloom_agg(id % 3000, 0.01)::bytea AS bt,
               cuckoo_agg(id, 0.01)::bytea AS k, bloom_agg(grp, 0.01, 'counting')::bytea AS c
          FROM sz) s, sz_ref r;
-- groups never finalized (a LIMIT) leave no temporary file behind
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT bloom_agg(id, 0.01) FROM sz GROUP BY grp LIMIT 1;
SELECT (bloom_info(bloom_agg(id, 0.01))).capacity > 0 AS built FROM sz GROUP BY grp LIMIT 1;
RESET enable_sort;
RESET work_mem;

-- forced parallel: partial states carry their hashes to the leader, and the
-- result is byte-identical to the serial one (a cuckoo filter's bytes depend
-- on the order values arrive in: the same size and the same values)
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) SELECT bloom_agg(id, 0.01), cuckoo_agg(id, 0.01) FROM sz;
SELECT s.b = r.b AS bloom_identical, s.c = r.c AS counting_identical,
       (cuckoo_info(s.k::cuckoo)).bytes = (cuckoo_info(r.k::cuckoo)).bytes AS cuckoo_same_size,
       (cuckoo_info(s.k::cuckoo)).items = (cuckoo_info(r.k::cuckoo)).items AS cuckoo_same_items
  FROM (SELECT bloom_agg(id, 0.01)::bytea AS b, cuckoo_agg(id, 0.01)::bytea AS k,
               bloom_agg(grp, 0.01, 'counting')::bytea AS c
          FROM sz) s, sz_ref r;
-- and spilling in the workers too
SET work_mem = '64kB';
SELECT s.b = r.b AS parallel_spilled_identical,
       s.bt = r.bt AS parallel_deduplicated_identical
  FROM (SELECT bloom_agg(id, 0.01)::bytea AS b, bloom_agg(id % 3000, 0.01)::bytea AS bt
          FROM sz) s, sz_ref r;
RESET work_mem;
SET max_parallel_workers_per_gather = 0;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;

-- errors, before anything is kept
SELECT bloom_agg(id, 0) FROM sz;
SELECT bloom_agg(id, 1.5) FROM sz;
SELECT bloom_agg(id, NULL::float8) FROM sz;
SELECT bloom_agg(id, 0.01, 'sparse') FROM sz;
SELECT cuckoo_agg(id, 0) FROM sz;
SELECT bloom_agg(point(id, id), 0.01) FROM sz;

RESET max_parallel_workers_per_gather;
DROP TABLE sz, sz_ref;
