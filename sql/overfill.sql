--
-- A filter given more values than it was sized for says so: a WARNING, once
-- per statement, when its false-positive rate is past twice its p, and
-- bloom_info / cuckoo_info's column overfilled.  Never for a filter used
-- within its size.
--

-- 100 times its n: every bit set, "maybe" to everything
SELECT (bloom_info(bloom_agg(g, 1000, 0.01))).overfilled,
       round((bloom_info(bloom_agg(g, 1000, 0.01))).est_fpr::numeric, 2) AS est_fpr
  FROM generate_series(1, 100000) g;
-- twice its n, each layout (dleft has no room for the values past its n:
-- it errors instead) and cuckoo (which grows a table at a time, and passes
-- 2p only further out)
SELECT l, (bloom_info(bloom_agg(g, 1000, 0.01, l))).overfilled
  FROM (VALUES ('blocked'), ('classic'), ('counting')) v(l),
       generate_series(1, 2000) g
 GROUP BY l ORDER BY l;
SELECT bloom_agg(g, 1000, 0.01, 'dleft') IS NOT NULL FROM generate_series(1, 2000) g;
SELECT (cuckoo_info(cuckoo_agg(g, 1000, 0.01))).overfilled,
       (cuckoo_info(cuckoo_agg(g, 1000, 0.01))).tables
  FROM generate_series(1, 100000) g;

-- within its size: no warning, whatever the layout, duplicates or not
SELECT l, (bloom_info(bloom_agg(g, 1000, 0.01, l))).overfilled
  FROM (VALUES ('blocked'), ('classic'), ('counting'), ('dleft')) v(l),
       generate_series(1, 1000) g
 GROUP BY l ORDER BY l;
SELECT (bloom_info(bloom_agg(g % 1000, 1000, 0.01))).overfilled AS duplicates,
       (cuckoo_info(cuckoo_agg(g, 1000, 0.01))).overfilled AS cuckoo
  FROM generate_series(1, 1000) g;
-- and the filters that size themselves never are
SELECT n, (bloom_info(bloom_agg(g, 0.01))).overfilled AS bloom,
       (cuckoo_info(cuckoo_agg(g, 0.01))).overfilled AS cuckoo
  FROM (VALUES (1), (100), (100000)) c(n), LATERAL generate_series(1, c.n) g
 GROUP BY n ORDER BY n;
-- a filter without a size has no target to be past
SELECT (bloom_info(bloom_agg(g, 0.01))).overfilled AS bloom_empty,
       (cuckoo_info(cuckoo_agg(g, 0.01))).overfilled AS cuckoo_empty
  FROM generate_series(1, 0) g;

-- once per statement: three overfilled groups, one warning
SELECT g % 3 AS grp, (bloom_info(bloom_agg(g, 100, 0.01))).overfilled
  FROM generate_series(1, 30000) g GROUP BY 1 ORDER BY 1;

-- bloom_add row by row, in one statement: one warning when it passes 2p
CREATE TABLE of_filters (id int, f bloom, c cuckoo);
INSERT INTO of_filters VALUES (1, bloom_empty(100, 0.01), cuckoo_empty(100, 0.01));
CREATE FUNCTION of_fill(lo int, hi int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN lo..hi LOOP
    UPDATE of_filters SET f = bloom_add(f, i), c = cuckoo_add(c, i);
  END LOOP;
END $$;
SELECT of_fill(1, 100);     -- its size: silent
SELECT (bloom_info(f)).overfilled FROM of_filters;
SELECT of_fill(101, 1000);  -- ten times: bloom warns once (cuckoo grows)
SELECT (bloom_info(f)).overfilled, (cuckoo_info(c)).overfilled,
       (cuckoo_info(c)).tables > 1 AS cuckoo_grew
  FROM of_filters;
-- a hundred times: the first overfilled filter of a statement warns, and
-- bloom_info and cuckoo_info say which are
SELECT of_fill(1001, 10000);
SELECT (bloom_info(f)).overfilled, (cuckoo_info(c)).overfilled FROM of_filters;

-- a union past the size either side was built for warns; an intersection
-- never holds more than its inputs
CREATE TABLE of_parts (half int, f bloom, c cuckoo);
INSERT INTO of_parts
  SELECT g / 1001, bloom_agg(g, 1000, 0.01), cuckoo_agg(g, 1000, 0.01)
    FROM generate_series(1, 2000) g GROUP BY 1;
SELECT (bloom_info(f)).overfilled, (cuckoo_info(c)).overfilled FROM of_parts ORDER BY half;
SELECT (bloom_info(a.f | b.f)).overfilled AS union_overfilled
  FROM of_parts a, of_parts b WHERE a.half = 0 AND b.half = 1;
SELECT (bloom_info(a.f & b.f)).overfilled AS intersection_overfilled
  FROM of_parts a, of_parts b WHERE a.half = 0 AND b.half = 1;
SELECT (bloom_info(bloom_union_agg(f))).overfilled AS union_agg_overfilled FROM of_parts;
-- cuckoo: three more tables' worth
INSERT INTO of_parts
  SELECT 2 + g / 1001, NULL, cuckoo_agg(g, 1000, 0.01)
    FROM generate_series(2001, 6000) g GROUP BY 1;
SELECT (cuckoo_info(cuckoo_union_agg(c))).overfilled AS cuckoo_union_agg_overfilled FROM of_parts;
CREATE TABLE of_cuckoo AS
  SELECT cuckoo_union_agg(c) FILTER (WHERE half <> 1) AS rest,
         cuckoo_union_agg(c) FILTER (WHERE half = 1) AS one
    FROM of_parts;
SELECT (cuckoo_info(rest)).items AS rest_items, (cuckoo_info(one)).items AS one_items,
       (cuckoo_info(rest)).overfilled AS rest_overfilled FROM of_cuckoo;
SELECT (cuckoo_info(rest | one)).overfilled AS cuckoo_union_overfilled FROM of_cuckoo;
-- the same union into a filter sized for both: silent
SELECT (bloom_info(a.f | b.f)).overfilled AS union_overfilled
  FROM (SELECT bloom_agg(g, 2000, 0.01) f FROM generate_series(1, 1000) g) a,
       (SELECT bloom_agg(g, 2000, 0.01) f FROM generate_series(1001, 2000) g) b;

-- a warning, not an error: client_min_messages silences it
SET client_min_messages = error;
SELECT (bloom_info(bloom_agg(g, 10, 0.01))).overfilled FROM generate_series(1, 10000) g;
RESET client_min_messages;

DROP FUNCTION of_fill(int, int);
DROP TABLE of_filters, of_parts, of_cuckoo;
