-- Scalar functions of the bloom type: sizing, building, probing, merging.

-- sizing calculator: classic matches the textbook formula at 1% (k = 7, ~9.6 bits/key)
SELECT bits, bytes, hashes, round(bits_per_key::numeric, 2) AS bits_per_key
  FROM bloom_params(1000000, 0.01, 'classic');
-- blocked needs more bits for the same p, never fewer
SELECT b.bits >= c.bits AS blocked_not_smaller, b.bits % 512 = 0 AS whole_blocks
  FROM bloom_params(1000000, 0.01) b, bloom_params(1000000, 0.01, 'classic') c;
SELECT bits, hashes FROM bloom_params(1, 0.5);

-- invalid sizing is rejected before allocating
SELECT bloom_params(0, 0.01);
SELECT bloom_params(-5, 0.01);
SELECT bloom_params(100, 0);
SELECT bloom_params(100, 1);
SELECT bloom_params(100, 'NaN');
SELECT bloom_params(100, -0.1);
SELECT bloom_empty(1000000000000000, 1e-12);
SELECT bloom_empty(100, 0.01, 'bogus');
SELECT bloom_empty(100, 0.01, NULL) IS NULL AS strict;

-- an empty filter contains nothing and reports its geometry
SELECT layout, bits, bytes, hashes, capacity, target_fpr, inserted, bits_set, est_distinct, est_fpr
  FROM bloom_info(bloom_empty(1000, 0.01));
SELECT layout, bits, hashes FROM bloom_info(bloom_empty(1000, 0.01, 'classic'));
SELECT bloom_contains(bloom_empty(1000, 0.01), 42);

-- bloom_add returns a new filter; the argument is unchanged
CREATE TABLE kv (id int, f bloom);
INSERT INTO kv VALUES (1, bloom_empty(1000, 0.01)), (2, bloom_empty(1000, 0.01, 'classic'));
UPDATE kv SET f = bloom_add(bloom_add(bloom_add(f, 10), 20), 30);
SELECT id, f @> 10 AS has10, f @> 20 AS has20, f @> 30 AS has30,
       (bloom_info(f)).inserted FROM kv ORDER BY id;
-- NULL value: the filter stays as it is; NULL filter stays NULL
SELECT bloom_add(f, NULL::int)::bytea = f::bytea AS unchanged FROM kv WHERE id = 1;
SELECT bloom_add(NULL::bloom, 1) IS NULL AS null_filter;
-- NULL probe value gives NULL, as for any strict comparison
SELECT f @> NULL::int AS probe_null FROM kv WHERE id = 1;

-- both operators, both argument orders
SELECT f @> 10 AS a, 10 <@ f AS b, f @> 11 AS c, 11 <@ f AS d,
       bloom_contains(f, 20) AS e, bloom_contained_by(20, f) AS g
  FROM kv WHERE id = 1;

-- union and intersection
CREATE TABLE parts AS
  SELECT bloom_agg(g, 1000, 0.01) FILTER (WHERE g % 2 = 0) AS evens,
         bloom_agg(g, 1000, 0.01) FILTER (WHERE g % 3 = 0) AS threes
  FROM generate_series(1, 900) g;
-- no false negatives in the union
SELECT count(*) AS missing FROM parts, generate_series(1, 900) g
 WHERE (g % 2 = 0 OR g % 3 = 0) AND NOT (evens | threes) @> g;
SELECT bloom_union(evens, threes)::bytea = (evens | threes)::bytea AS same FROM parts;
SELECT (bloom_info(evens | threes)).inserted FROM parts;
-- no false negatives in the intersection
SELECT count(*) AS missing FROM parts, generate_series(1, 900) g
 WHERE g % 6 = 0 AND NOT (evens & threes) @> g;
SELECT bloom_intersect(evens, threes)::bytea = (evens & threes)::bytea AS same FROM parts;
-- union is idempotent on bits
SELECT (bloom_info(evens | evens)).bits_set = (bloom_info(evens)).bits_set AS idempotent FROM parts;

-- filters of different geometry cannot be merged
SELECT bloom_empty(1000, 0.01) | bloom_empty(1000, 0.01, 'classic');
SELECT bloom_empty(1000, 0.01) & bloom_empty(2000, 0.01);
-- filters of values of different types cannot be merged
SELECT bloom_add(bloom_empty(10, 0.1), 1) | bloom_add(bloom_empty(10, 0.1), 'a'::text);
-- an unbound filter (no values yet) merges with any
SELECT (bloom_add(bloom_empty(10, 0.1), 'a'::text) | bloom_empty(10, 0.1)) @> 'a'::text AS ok;

-- the sizeless empty filter from a zero-row aggregate
CREATE TABLE nothing (x int8);
SELECT layout, bits, bytes, hashes, capacity, target_fpr, inserted, bits_set, est_distinct, est_fpr
  FROM bloom_info((SELECT bloom_agg(x, 100, 0.01) FROM nothing));
SELECT (SELECT bloom_agg(x, 100, 0.01) FROM nothing) @> 1::int8 AS contains;
-- ... unions with anything, in both orders, and intersects to itself
SELECT ((SELECT bloom_agg(x, 100, 0.01) FROM nothing) | evens)::bytea = evens::bytea AS left_identity,
       (evens | (SELECT bloom_agg(x, 100, 0.01) FROM nothing))::bytea = evens::bytea AS right_identity,
       (bloom_info(evens & (SELECT bloom_agg(x, 100, 0.01) FROM nothing))).layout AS intersect
  FROM parts;
-- ... and cannot take values
SELECT bloom_add((SELECT bloom_agg(x, 100, 0.01) FROM nothing), 1);

-- bloom_info estimates on a filter at capacity
SELECT layout, inserted, abs(est_distinct - 10000) / 10000 < 0.05 AS distinct_within_5pct,
       est_fpr BETWEEN 0.005 AND 0.02 AS fpr_near_target
  FROM (SELECT (bloom_info(bloom_agg(g, 10000, 0.01, l))).*
          FROM generate_series(1, 10000) g, (VALUES ('blocked'), ('classic')) v(l)
         GROUP BY l) s
 ORDER BY layout;

-- duplicates count as additions but not as distinct values
SELECT inserted, round(est_distinct) AS est_distinct
  FROM bloom_info((SELECT bloom_agg(g % 10, 1000, 0.01) FROM generate_series(1, 1000) g));
