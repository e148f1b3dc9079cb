-- Aggregates: bloom_agg and bloom_union_agg.

CREATE TABLE events (part int, user_id int8);
INSERT INTO events SELECT g % 4, g FROM generate_series(1, 20000) g;
INSERT INTO events VALUES (0, NULL), (1, NULL);

-- NULL values are skipped; every inserted value is found
SELECT (bloom_info(f)).inserted,
       (SELECT count(*) FROM events e WHERE e.user_id IS NOT NULL AND NOT f @> e.user_id) AS false_negatives
  FROM (SELECT bloom_agg(user_id, 20000, 0.01) AS f FROM events) s;

-- a group of only NULLs gives an empty filter of the requested size, not NULL
SELECT layout, bits > 0 AS sized, capacity, inserted
  FROM bloom_info((SELECT bloom_agg(x, 50, 0.01) FROM (VALUES (NULL::int), (NULL)) v(x)));

-- zero rows: the sizeless empty filter, not NULL
SELECT f IS NULL AS is_null, (bloom_info(f)).layout
  FROM (SELECT bloom_agg(user_id, 100, 0.01) AS f FROM events WHERE false) s;
-- so an anti-join pre-filter keeps every row when the build side is empty
SELECT count(*) FROM events e
 WHERE NOT coalesce((SELECT bloom_agg(user_id, 100, 0.01) FROM events WHERE false) @> e.user_id, false);

-- one filter per partition
CREATE TABLE part_filters AS
  SELECT part, bloom_agg(user_id, 5000, 0.01) AS f FROM events GROUP BY part;
SELECT part, (bloom_info(f)).inserted FROM part_filters ORDER BY part;
-- which partitions may hold a key: its own always, others rarely
SELECT array_agg(part ORDER BY part) FROM part_filters WHERE f @> 4242::int8;
SELECT count(*) AS partitions_missing_their_keys
  FROM events e JOIN part_filters p USING (part)
 WHERE e.user_id IS NOT NULL AND NOT p.f @> e.user_id;

-- union of the partition filters equals the filter of the whole table
SELECT bloom_union_agg(f)::bytea = (SELECT bloom_agg(user_id, 5000, 0.01) FROM events)::bytea AS same
  FROM part_filters;
-- bloom_union_agg skips NULLs, returns the sizeless empty filter over zero rows
SELECT (bloom_info(bloom_union_agg(f))).inserted
  FROM (SELECT f FROM part_filters UNION ALL SELECT NULL) s;
SELECT (bloom_info(bloom_union_agg(f))).layout FROM part_filters WHERE false;
-- ... treats the sizeless empty filter as the identity
SELECT bloom_union_agg(f)::bytea = (SELECT bloom_union_agg(f) FROM part_filters)::bytea AS same
  FROM (SELECT f FROM part_filters
        UNION ALL SELECT bloom_agg(user_id, 1, 0.5) FROM events WHERE false) s;
-- ... and refuses filters of different geometry
SELECT bloom_union_agg(f) FROM (SELECT f FROM part_filters
                                UNION ALL SELECT bloom_empty(10, 0.5)) s;

-- n, p and layout must not change within a group, and must not be NULL
SELECT bloom_agg(x, x, 0.01) FROM generate_series(1, 3) x;
SELECT bloom_agg(x, 10, x / 10.0) FROM generate_series(1, 3) x;
SELECT bloom_agg(x, 10, 0.01, CASE WHEN x = 1 THEN 'blocked' ELSE 'classic' END)
  FROM generate_series(1, 3) x;
SELECT bloom_agg(x, NULL, 0.01) FROM generate_series(1, 3) x;
SELECT bloom_agg(x, 10, NULL) FROM generate_series(1, 3) x;
SELECT bloom_agg(x, 10, 0.01, NULL) FROM generate_series(1, 3) x;
-- invalid sizing is reported before anything is built
SELECT bloom_agg(x, 0, 0.01) FROM generate_series(1, 3) x;
SELECT bloom_agg(x, 10, 1.5) FROM generate_series(1, 3) x;
SELECT bloom_agg(x, 1000000000000000, 1e-12) FROM generate_series(1, 3) x;
SELECT bloom_agg(x, 10, 0.01, 'Blocked') FROM generate_series(1, 3) x;

-- the layout argument
SELECT (bloom_info(bloom_agg(x, 100, 0.01, 'classic'))).layout,
       (bloom_info(bloom_agg(x, 100, 0.01, 'blocked'))).layout AS explicit_blocked,
       (bloom_info(bloom_agg(x, 100, 0.01))).layout AS default_layout
  FROM generate_series(1, 10) x;

-- as a window function with a growing frame: each row sees the values so far
SELECT x, bloom_agg(x, 10, 0.01) OVER (ORDER BY x) @> 3 AS has3,
       (bloom_info(bloom_agg(x, 10, 0.01) OVER (ORDER BY x))).inserted
  FROM generate_series(1, 5) x ORDER BY x;

-- sorted and hashed grouping give the same filters
SET enable_hashagg = off;
CREATE TABLE sorted AS SELECT part, bloom_agg(user_id, 5000, 0.01)::bytea AS b FROM events GROUP BY part;
RESET enable_hashagg;
SET enable_sort = off;
CREATE TABLE hashed AS SELECT part, bloom_agg(user_id, 5000, 0.01)::bytea AS b FROM events GROUP BY part;
RESET enable_sort;
SELECT count(*) AS groups, bool_and(s.b = h.b) AS identical FROM sorted s JOIN hashed h USING (part);

-- the aggregate's batched adds (each row's line requested as it comes, the
-- bits set a batch at a time) give the bytes bloom_add gives one value at a
-- time: integers of every width, in and beyond the int4 range, and text, at
-- k = 7 (p = 0.01), 10 and 4; 600 values span three batches
CREATE TABLE agg_vals AS
  SELECT g, (g * 1000003)::int8 * CASE WHEN g % 2 = 0 THEN -5000 ELSE 1 END AS v8,
         (g * 7919 % 30000)::int2 AS v2, 'v' || g AS vt
    FROM generate_series(1, 600) g;
WITH RECURSIVE fold(i, f8, f2, ft) AS (
    SELECT 0, bloom_empty(600, 0.01), bloom_empty(600, 0.001), bloom_empty(600, 0.05)
  UNION ALL
    SELECT i + 1, bloom_add(f8, a.v8), bloom_add(f2, a.v2), bloom_add(ft, a.vt)
      FROM fold JOIN agg_vals a ON a.g = i + 1)
SELECT (bloom_info(f8)).hashes AS k8, f8 = (SELECT bloom_agg(v8, 600, 0.01) FROM agg_vals) AS int8_same,
       (bloom_info(f2)).hashes AS k2, f2 = (SELECT bloom_agg(v2, 600, 0.001) FROM agg_vals) AS int2_same,
       (bloom_info(ft)).hashes AS kt, ft = (SELECT bloom_agg(vt, 600, 0.05) FROM agg_vals) AS text_same
  FROM fold WHERE i = 600;
DROP TABLE agg_vals;
