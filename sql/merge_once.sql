-- A merge whose inputs are the same values on every row is computed once.
-- Each timed query below would merge two 30k-value filters for each of 30k
-- rows (a minute or more) if it recomputed the merge per row; the statement
-- timeout turns that into a failure.  The answers are checked against the
-- merge computed once (OFFSET 0 keeps the subquery from being pulled up).

CREATE SCHEMA merge_once;
SET search_path = merge_once, public;

CREATE TABLE nums AS SELECT g::int8 AS b FROM generate_series(1, 30000) g;
CREATE TABLE a AS SELECT g::int8 AS v FROM generate_series(1, 30000) g;
CREATE TABLE c AS SELECT g::int8 AS v FROM generate_series(20001, 50000) g;
ANALYZE nums, a, c;

SET statement_timeout = '5s';

-- the subquery is pulled up, and the merge of two InitPlans would sit in the
-- scan's filter: the merges' planner support makes it an InitPlan of its own
EXPLAIN (COSTS OFF)
SELECT count(*) FROM nums,
       (SELECT cuckoo_union((SELECT cuckoo_agg(v, 30000, 0.01) FROM a),
                            (SELECT cuckoo_agg(v, 30000, 0.01) FROM c)) f) u
 WHERE cuckoo_contains(f, b);

-- cuckoo_union, bloom |, bloom &: each gives the answer of the merge computed once
SELECT (SELECT count(*) FROM nums,
               (SELECT cuckoo_union((SELECT cuckoo_agg(v, 30000, 0.01) FROM a),
                                    (SELECT cuckoo_agg(v, 30000, 0.01) FROM c)) f) u
         WHERE cuckoo_contains(f, b)) =
       (SELECT count(*) FROM nums,
               (SELECT cuckoo_union((SELECT cuckoo_agg(v, 30000, 0.01) FROM a),
                                    (SELECT cuckoo_agg(v, 30000, 0.01) FROM c)) f OFFSET 0) u
         WHERE cuckoo_contains(f, b)) AS cuckoo_union_same;
SELECT (SELECT count(*) FROM nums,
               (SELECT (SELECT bloom_agg(v, 30000, 0.01) FROM a) |
                       (SELECT bloom_agg(v, 30000, 0.01) FROM c) f) u
         WHERE f @> b) =
       (SELECT count(*) FROM nums,
               (SELECT (SELECT bloom_agg(v, 30000, 0.01) FROM a) |
                       (SELECT bloom_agg(v, 30000, 0.01) FROM c) f OFFSET 0) u
         WHERE f @> b) AS bloom_union_same;
SELECT (SELECT count(*) FROM nums,
               (SELECT (SELECT bloom_agg(v, 30000, 0.01) FROM a) &
                       (SELECT bloom_agg(v, 30000, 0.01) FROM c) f) u
         WHERE f @> b) =
       (SELECT count(*) FROM nums,
               (SELECT (SELECT bloom_agg(v, 30000, 0.01) FROM a) &
                       (SELECT bloom_agg(v, 30000, 0.01) FROM c) f OFFSET 0) u
         WHERE f @> b) AS bloom_intersect_same;
-- no false negatives: every value of a or c (all of nums) is in the union
SELECT count(*) AS missed FROM nums,
       (SELECT cuckoo_union((SELECT cuckoo_agg(v, 30000, 0.01) FROM a),
                            (SELECT cuckoo_agg(v, 30000, 0.01) FROM c)) f) u
 WHERE NOT cuckoo_contains(f, b);
-- ... and every value of both (20001..30000) is in the intersection
SELECT count(*) AS missed FROM nums,
       (SELECT (SELECT bloom_agg(v, 30000, 0.01) FROM a) &
               (SELECT bloom_agg(v, 30000, 0.01) FROM c) f) u
 WHERE b BETWEEN 20001 AND 30000 AND NOT (f @> b);

-- stored filters, read from TOAST: columns, so the merge stays in the row's
-- expression, and its call site finds the same TOAST pointers on every row
CREATE TABLE stored (a bloom, c bloom, ca cuckoo, cc cuckoo);
INSERT INTO stored
SELECT (SELECT bloom_agg(v, 30000, 0.01) FROM a), (SELECT bloom_agg(v, 30000, 0.01) FROM c),
       (SELECT cuckoo_agg(v, 30000, 0.01) FROM a), (SELECT cuckoo_agg(v, 30000, 0.01) FROM c);
SELECT count(*) = 30000 AS all_found FROM stored, nums WHERE (stored.a | stored.c) @> nums.b;
SELECT count(*) = 30000 AS all_found FROM stored, nums WHERE (stored.ca | stored.cc) @> nums.b;

RESET statement_timeout;

-- inputs that change from row to row are never answered from an earlier row:
-- filters of one value each, merged row by row
CREATE TABLE pairs AS
SELECT g AS id, bloom_add(bloom_empty(1000, 0.01), g::int8) AS x,
       bloom_add(bloom_empty(1000, 0.01), (g + 1000)::int8) AS y,
       cuckoo_add(cuckoo_empty(1000, 0.01), g::int8) AS cx,
       cuckoo_add(cuckoo_empty(1000, 0.01), (g + 1000)::int8) AS cy
  FROM generate_series(1, 200) g;
SELECT count(*) AS wrong FROM pairs
 WHERE NOT ((x | y) @> id::int8 AND (x | y) @> (id + 1000)::int8
            AND (cx | cy) @> id::int8 AND (cx | cy) @> (id + 1000)::int8
            AND (cuckoo_info(cx | cy)).items = 2);
-- the same InitPlans evaluated again for each outer row (an InitPlan inside a
-- correlated subquery): each outer row gets the merge of its own filters
CREATE TABLE groups AS SELECT k FROM generate_series(1, 5) k;
SELECT k,
       (SELECT count(*) FROM nums
         WHERE cuckoo_contains(cuckoo_union((SELECT cuckoo_agg(v, 1000, 0.01) FROM a WHERE v <= k * 10),
                                            (SELECT cuckoo_agg(v, 1000, 0.01) FROM c WHERE v <= 20000 + k * 10)),
                               b)
           AND (b <= k * 10 OR b BETWEEN 20001 AND 20000 + k * 10)) AS found,
       (SELECT count(*) FROM nums
         WHERE (SELECT bloom_agg(v, 1000, 0.01) FROM a WHERE v <= k * 10) |
               (SELECT bloom_agg(v, 1000, 0.01) FROM c WHERE v <= 20000 + k * 10) @> b
           AND (b <= k * 10 OR b BETWEEN 20001 AND 20000 + k * 10)) AS found_bloom
  FROM groups ORDER BY k;

-- The merge moved into a scalar subquery is evaluated one query level
-- further down, once.  Arguments that must not be evaluated there, or only
-- once, keep the merge where it was; arguments that name query levels (a
-- CTE read by a subquery) are moved with it and still find what they name.
-- Each answer is compared with the same filters merged by the union
-- aggregates, which the planner support does not touch.
CREATE TABLE probe AS SELECT g::int8 AS x FROM generate_series(1, 2000) g;
ANALYZE probe;

-- a CTE read twice (so not inlined), of this query
WITH f AS (SELECT bloom_agg(x, 1000, 0.01) FILTER (WHERE x <= 500) AS lo,
                  bloom_agg(x, 1000, 0.01) FILTER (WHERE x BETWEEN 1001 AND 1500) AS hi,
                  cuckoo_agg(x, 1000, 0.01) FILTER (WHERE x <= 500) AS clo,
                  cuckoo_agg(x, 1000, 0.01) FILTER (WHERE x BETWEEN 1001 AND 1500) AS chi
             FROM probe)
SELECT count(*) FILTER (WHERE ((SELECT lo FROM f) | (SELECT hi FROM f)) @> x) =
       count(*) FILTER (WHERE (SELECT bloom_union_agg(y) FROM (SELECT lo FROM f UNION ALL SELECT hi FROM f) u(y)) @> x)
         AS bloom_same,
       count(*) FILTER (WHERE ((SELECT clo FROM f) | (SELECT chi FROM f)) @> x) =
       count(*) FILTER (WHERE (SELECT cuckoo_union_agg(y) FROM (SELECT clo FROM f UNION ALL SELECT chi FROM f) u(y)) @> x)
         AS cuckoo_same,
       count(*) FILTER (WHERE (x <= 500 OR x BETWEEN 1001 AND 1500)
                          AND NOT (((SELECT lo FROM f) | (SELECT hi FROM f)) @> x
                                   AND ((SELECT clo FROM f) | (SELECT chi FROM f)) @> x)) AS missed
  FROM probe;
-- a MATERIALIZED CTE, and a CTE the arguments' own subquery defines
WITH f AS MATERIALIZED (
       SELECT bloom_agg(x, 1000, 0.01) FILTER (WHERE x <= 500) AS lo,
              bloom_agg(x, 1000, 0.01) FILTER (WHERE x BETWEEN 1001 AND 1500) AS hi,
              cuckoo_agg(x, 1000, 0.01) FILTER (WHERE x <= 500) AS clo,
              cuckoo_agg(x, 1000, 0.01) FILTER (WHERE x BETWEEN 1001 AND 1500) AS chi
         FROM probe)
SELECT count(*) FILTER (WHERE ((WITH g AS (SELECT lo FROM f) SELECT lo FROM g) | (SELECT hi FROM f)) @> x) =
       count(*) FILTER (WHERE (SELECT bloom_union_agg(y) FROM (SELECT lo FROM f UNION ALL SELECT hi FROM f) u(y)) @> x)
         AS bloom_same,
       cuckoo_union((WITH g AS (SELECT clo FROM f) SELECT clo FROM g), (SELECT chi FROM f))::text =
       (SELECT cuckoo_union(clo, chi) FROM f)::text AS cuckoo_same_bytes,
       count(*) FILTER (WHERE (x <= 500 OR x BETWEEN 1001 AND 1500)
                          AND NOT (((SELECT lo FROM f) | (SELECT hi FROM f)) @> x
                                   AND cuckoo_union((SELECT clo FROM f), (SELECT chi FROM f)) @> x)) AS missed
  FROM probe;
-- a CTE of the query around the one that merges
WITH f AS (SELECT bloom_agg(x, 1000, 0.01) FILTER (WHERE x <= 500) AS lo,
                  bloom_agg(x, 1000, 0.01) FILTER (WHERE x BETWEEN 1001 AND 1500) AS hi,
                  cuckoo_agg(x, 1000, 0.01) FILTER (WHERE x <= 500) AS clo,
                  cuckoo_agg(x, 1000, 0.01) FILTER (WHERE x BETWEEN 1001 AND 1500) AS chi
             FROM probe)
SELECT (SELECT count(*) FROM probe WHERE ((SELECT lo FROM f) | (SELECT hi FROM f)) @> x) =
       (SELECT count(*) FROM probe
         WHERE (SELECT bloom_union_agg(y) FROM (SELECT lo FROM f UNION ALL SELECT hi FROM f) u(y)) @> x)
         AS bloom_same,
       (SELECT count(*) FROM probe WHERE ((SELECT clo FROM f) | (SELECT chi FROM f)) @> x) =
       (SELECT count(*) FROM probe
         WHERE (SELECT cuckoo_union_agg(y) FROM (SELECT clo FROM f UNION ALL SELECT chi FROM f) u(y)) @> x)
         AS cuckoo_same,
       (SELECT count(*) FROM probe
         WHERE (x <= 500 OR x BETWEEN 1001 AND 1500)
           AND NOT (((SELECT lo FROM f) | (SELECT hi FROM f)) @> x
                    AND ((SELECT clo FROM f) | (SELECT chi FROM f)) @> x)) AS missed;
-- ... and the merge of CTE reads is still computed once, in an InitPlan
EXPLAIN (COSTS OFF)
WITH f AS MATERIALIZED (SELECT bloom_agg(x, 1000, 0.01) FILTER (WHERE x <= 500) AS lo,
                               bloom_agg(x, 1000, 0.01) FILTER (WHERE x > 1000) AS hi
                          FROM probe)
SELECT count(*) FROM probe WHERE ((SELECT lo FROM f) | (SELECT hi FROM f)) @> x;

-- set-returning arguments make rows of the query they are in: the merge
-- stays there, one per row, as each row's own filter
SELECT count(*) = 2 * (SELECT count(*) FROM groups) AS all_rows,
       bool_and(m @> i) AS each_has_its_value,
       count(DISTINCT m::text) AS filters
  FROM (SELECT unnest(ARRAY[1, 2]::int8[]) AS i,
               bloom_empty(1000, 0.01) |
               unnest(ARRAY[bloom_add(bloom_empty(1000, 0.01), 1::int8),
                            bloom_add(bloom_empty(1000, 0.01), 2::int8)]) AS m
          FROM groups) s;
SELECT (SELECT array_agg(m::text ORDER BY k, i)
          FROM (SELECT k, generate_series(1, 3) AS i,
                       cuckoo_union(cuckoo_empty(1000, 0.01),
                                    cuckoo_add(cuckoo_empty(1000, 0.01), generate_series(1, 3)::int8)) AS m
                  FROM groups) s) =
       (SELECT array_agg(cuckoo_union(cuckoo_empty(1000, 0.01),
                                      cuckoo_add(cuckoo_empty(1000, 0.01), i::int8))::text ORDER BY k, i)
          FROM groups, generate_series(1, 3) i) AS cuckoo_same,
       (SELECT array_agg(m::text ORDER BY k, i)
          FROM (SELECT k, generate_series(1, 3) AS i,
                       bloom_empty(1000, 0.01) &
                       bloom_add(bloom_empty(1000, 0.01), generate_series(1, 3)::int8) AS m
                  FROM groups) s) =
       (SELECT array_agg((bloom_empty(1000, 0.01) &
                          bloom_add(bloom_empty(1000, 0.01), i::int8))::text ORDER BY k, i)
          FROM groups, generate_series(1, 3) i) AS bloom_intersect_same;

-- a CASE in an argument's subquery belongs to that subquery, which moves
-- whole: the merge is still computed once
EXPLAIN (COSTS OFF)
SELECT count(*) FROM probe
 WHERE ((SELECT CASE count(*) WHEN 0 THEN NULL ELSE bloom_agg(x, 1000, 0.01) END
           FROM probe WHERE x <= 500) |
        (SELECT bloom_agg(x, 1000, 0.01) FROM probe WHERE x > 1000)) @> x;

-- volatile functions, window functions and aggregates of this query change
-- from row to row or group to group: one filter each
CREATE SEQUENCE merge_seq;
SELECT count(DISTINCT m::text) = count(*) AS one_filter_per_row
  FROM (SELECT bloom_empty(1000, 0.01) | bloom_add(bloom_empty(1000, 0.01), nextval('merge_seq')) AS m
          FROM groups) t;
SELECT count(*) AS rows, count(DISTINCT m::text) AS filters, bool_and(m @> r) AS each_has_its_value
  FROM (SELECT cuckoo_empty(1000, 0.01) |
               cuckoo_add(cuckoo_empty(1000, 0.01), row_number() OVER (ORDER BY k)) AS m,
               row_number() OVER (ORDER BY k) AS r
          FROM groups) t;
SELECT k % 2 AS parity,
       (bloom_empty(1000, 0.01) | bloom_agg(k, 1000, 0.01)) @> min(k) AND
       (bloom_empty(1000, 0.01) | bloom_agg(k, 1000, 0.01)) @> max(k) AS bloom_has_its_values,
       (cuckoo_empty(1000, 0.01) | cuckoo_agg(k, 1000, 0.01)) @> min(k) AND
       (cuckoo_empty(1000, 0.01) | cuckoo_agg(k, 1000, 0.01)) @> max(k) AS cuckoo_has_its_values,
       (bloom_info(bloom_empty(1000, 0.01) | bloom_agg(k, 1000, 0.01))).inserted = count(*) AS counted
  FROM groups GROUP BY k % 2 ORDER BY 1;

-- an appendrel's restriction is simplified again for each child after the
-- query's subqueries are planned: where only then the merge's arguments no
-- longer name a column ($1 in a generic plan), it stays in the child's filter
CREATE TABLE parts AS
SELECT bloom_agg(v, 1000, 0.01) FILTER (WHERE v <= 500) AS lo,
       bloom_agg(v, 1000, 0.01) FILTER (WHERE v BETWEEN 20001 AND 20500) AS hi,
       cuckoo_agg(v, 1000, 0.01) FILTER (WHERE v <= 500) AS clo,
       cuckoo_agg(v, 1000, 0.01) FILTER (WHERE v BETWEEN 20001 AND 20500) AS chi
  FROM a;
PREPARE merge_arms(bloom, bloom, cuckoo, cuckoo) AS
SELECT count(*) AS n
  FROM (SELECT $1 AS f, $2 AS g, $3 AS cf, $4 AS cg, b FROM nums
        UNION ALL
        SELECT $2, $1, $4, $3, b FROM nums) u
 WHERE (f | g) @> b AND (cf | cg) @> b;
SET plan_cache_mode = force_custom_plan;
SELECT lo, hi, clo, chi FROM parts \gset
EXECUTE merge_arms(:'lo', :'hi', :'clo', :'chi') \gset custom_
SET plan_cache_mode = force_generic_plan;
EXECUTE merge_arms(:'lo', :'hi', :'clo', :'chi') \gset generic_
RESET plan_cache_mode;
SELECT :generic_n = :custom_n AS generic_same, :custom_n >= 2 * 1000 AS all_found;
DEALLOCATE merge_arms;

DROP SCHEMA merge_once CASCADE;
