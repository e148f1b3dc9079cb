-- The anti-join recipe: the filter turns the join key of rows it rules out
-- into NULL, so those rows skip the exact check (and the hash join's batch
-- files) and are kept.  It must answer exactly as the plain NOT EXISTS does,
-- with NULL keys on either side and over an empty build side, and plan as a
-- hash anti-join, never as a per-row subquery.

CREATE SCHEMA antijoin;
SET search_path = antijoin, public;

CREATE TABLE t AS
SELECT CASE WHEN g % 97 = 0 THEN NULL ELSE g::int8 END AS id FROM generate_series(1, 20000) g;
CREATE TABLE small AS
SELECT CASE WHEN g % 50 = 0 THEN NULL ELSE (g * 10)::int8 END AS id FROM generate_series(1, 2000) g;
CREATE TABLE empty_side (id int8);
ANALYZE t, small, empty_side;

-- one join, no subplan
EXPLAIN (COSTS OFF)
SELECT count(*) FROM t
 WHERE NOT EXISTS (SELECT 1 FROM small s
                    WHERE s.id = CASE WHEN ((SELECT bloom_agg(id, 2000, 0.01) FROM small) @> t.id) IS NOT FALSE
                                      THEN t.id END);

-- the same rows as the plain NOT EXISTS: bloom, cuckoo, and over an empty build side
SELECT (SELECT count(*) FROM t WHERE NOT EXISTS (SELECT 1 FROM small s WHERE s.id = t.id)) AS plain,
       (SELECT count(*) FROM t
         WHERE NOT EXISTS (SELECT 1 FROM small s
                            WHERE s.id = CASE WHEN ((SELECT bloom_agg(id, 2000, 0.01) FROM small) @> t.id) IS NOT FALSE
                                              THEN t.id END)) AS bloom,
       (SELECT count(*) FROM t
         WHERE NOT EXISTS (SELECT 1 FROM small s
                            WHERE s.id = CASE WHEN ((SELECT cuckoo_agg(id, 2000, 0.01) FROM small) @> t.id) IS NOT FALSE
                                              THEN t.id END)) AS cuckoo;
SELECT (SELECT count(*) FROM t WHERE NOT EXISTS (SELECT 1 FROM empty_side s WHERE s.id = t.id)) AS plain,
       (SELECT count(*) FROM t
         WHERE NOT EXISTS (SELECT 1 FROM empty_side s
                            WHERE s.id = CASE WHEN ((SELECT bloom_agg(id, 2000, 0.01) FROM empty_side) @> t.id) IS NOT FALSE
                                              THEN t.id END)) AS bloom;
-- row for row, NULL keys included (they are kept, as by the plain query)
SELECT count(*) AS differ FROM (
  (SELECT id FROM t WHERE NOT EXISTS (SELECT 1 FROM small s WHERE s.id = t.id)
   EXCEPT ALL
   SELECT id FROM t
    WHERE NOT EXISTS (SELECT 1 FROM small s
                       WHERE s.id = CASE WHEN ((SELECT bloom_agg(id, 2000, 0.01) FROM small) @> t.id) IS NOT FALSE
                                         THEN t.id END))
  UNION ALL
  (SELECT id FROM t
    WHERE NOT EXISTS (SELECT 1 FROM small s
                       WHERE s.id = CASE WHEN ((SELECT bloom_agg(id, 2000, 0.01) FROM small) @> t.id) IS NOT FALSE
                                         THEN t.id END)
   EXCEPT ALL
   SELECT id FROM t WHERE NOT EXISTS (SELECT 1 FROM small s WHERE s.id = t.id))) d;
SELECT count(*) AS null_keys_kept FROM t
 WHERE id IS NULL
   AND NOT EXISTS (SELECT 1 FROM small s
                    WHERE s.id = CASE WHEN ((SELECT bloom_agg(id, 2000, 0.01) FROM small) @> t.id) IS NOT FALSE
                                      THEN t.id END);

DROP SCHEMA antijoin CASCADE;
