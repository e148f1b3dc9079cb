-- Scalar functions of the cuckoo type: sizing, building, probing, deleting,
-- counting, growing, merging.  Each error is followed by its SQLSTATE.

CREATE SCHEMA cuckoo_basic;
SET search_path = cuckoo_basic, public;

-- sizing calculator: f = ceil(log2(8 / p)) bits, ceil(n / 3.8) buckets of four,
-- 64 + 32 header bytes, 8-byte words plus one spare word
SELECT n, p, buckets, fingerprint_bits, bytes, round(bits_per_key::numeric, 2) AS bits_per_key
  FROM (VALUES (1000000::int8, 0.01::float8), (100000, 0.001), (1000, 0.01), (1, 0.5),
               (1000, 0.9), (1000, 2e-9)) v(n, p),
       cuckoo_params(n, p)
 ORDER BY n, p;
-- what cuckoo_empty builds is what cuckoo_params promised
SELECT bool_and(i.buckets = c.buckets AND i.fingerprint_bits = c.fingerprint_bits
                AND i.bytes = c.bytes AND i.tables = 1) AS agrees
  FROM (VALUES (1::int8), (7), (1000), (123457)) v(n), (VALUES (0.5::float8), (0.01), (1e-6)) w(p),
       cuckoo_params(n, p) c, cuckoo_info(cuckoo_empty(n, p)) i;

-- invalid sizing is rejected before allocating
SELECT cuckoo_params(0, 0.01);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_params(-5, 0.01);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_params(100, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_params(100, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_params(100, 'NaN');
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_params(100, -0.1);
\echo :LAST_ERROR_SQLSTATE
-- 32-bit fingerprints reach no lower rate than 2^-29
SELECT cuckoo_params(100, 1e-12);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_empty(100, 1e-9);
\echo :LAST_ERROR_SQLSTATE
SELECT fingerprint_bits FROM cuckoo_params(100, 2e-9);
-- the size limit
SELECT cuckoo_empty(1000000000000000, 0.01);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_params(1000000000000000, 0.01);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_empty(100, NULL) IS NULL AS strict, cuckoo_params(NULL, 0.01) IS NULL AS strict_params;

-- an empty filter contains nothing and reports its geometry
SELECT * FROM cuckoo_info(cuckoo_empty(1000, 0.01));
SELECT cuckoo_contains(cuckoo_empty(1000, 0.01), 42) AS contains,
       cuckoo_count(cuckoo_empty(1000, 0.01), 42) AS count;

-- cuckoo_add returns a new filter; the argument is unchanged
CREATE TABLE kv (id int, f cuckoo);
INSERT INTO kv VALUES (1, cuckoo_empty(1000, 0.01)), (2, cuckoo_empty(10, 0.5));
UPDATE kv SET f = cuckoo_add(cuckoo_add(cuckoo_add(f, 10), 20), 30);
SELECT id, f @> 10 AS has10, f @> 20 AS has20, f @> 30 AS has30, f @> 40 AS has40,
       (cuckoo_info(f)).items FROM kv ORDER BY id;
SELECT (cuckoo_info(cuckoo_add(f, 40))).items AS new_value, (cuckoo_info(f)).items AS argument
  FROM kv WHERE id = 1;

-- NULL value: add and delete leave the filter as it is; NULL filter stays NULL
SELECT cuckoo_add(f, NULL::int)::bytea = f::bytea AS add_unchanged,
       cuckoo_delete(f, NULL::int)::bytea = f::bytea AS delete_unchanged
  FROM kv WHERE id = 1;
SELECT cuckoo_add(NULL::cuckoo, 1) IS NULL AS add, cuckoo_delete(NULL::cuckoo, 1) IS NULL AS delete,
       cuckoo_contains(NULL::cuckoo, 1) IS NULL AS contains, cuckoo_count(NULL::cuckoo, 1) IS NULL AS count,
       cuckoo_union(NULL::cuckoo, cuckoo_empty(10, 0.5)) IS NULL AS union_left,
       (cuckoo_empty(10, 0.5) | NULL::cuckoo) IS NULL AS union_right,
       cuckoo_info(NULL::cuckoo) IS NULL AS info;
-- NULL probe value gives NULL, as for any strict comparison
SELECT f @> NULL::int AS probe_null, NULL::int <@ f AS contained_null,
       cuckoo_count(f, NULL::int) AS count_null
  FROM kv WHERE id = 1;

-- both operators, both argument orders
SELECT f @> 10 AS a, 10 <@ f AS b, f @> 11 AS c, 11 <@ f AS d,
       cuckoo_contains(f, 20) AS e, cuckoo_contained_by(20, f) AS g
  FROM kv WHERE id = 1;

-- deleting removes one copy; a value certainly absent leaves the bytes as they were
SELECT f @> 11 AS has11,
       cuckoo_delete(f, 11)::bytea = f::bytea AS delete_absent_unchanged,
       cuckoo_delete(f, 20) @> 20 AS has20_after_delete,
       cuckoo_delete(f, 20) @> 10 AS has10_after_delete,
       cuckoo_delete(f, 20) @> 30 AS has30_after_delete,
       (cuckoo_info(cuckoo_delete(f, 20))).items AS items_after_delete
  FROM kv WHERE id = 1;
-- add then delete restores the bytes
SELECT cuckoo_delete(cuckoo_add(f, 40), 40)::bytea = f::bytea AS round_trip FROM kv WHERE id = 1;
-- deleting from a filter that has no values yet changes nothing, whatever the type
SELECT cuckoo_delete(cuckoo_empty(10, 0.5), 'x'::text)::bytea = cuckoo_empty(10, 0.5)::bytea AS unbound_unchanged;

-- duplicates are stored as copies: 20 copies of one value in a filter whose
-- bucket pair holds 8; the copies past those are counted in the filter's
-- counter section, so it keeps its one table
CREATE TABLE copies AS
  WITH RECURSIVE r(i, f) AS (
    SELECT 0, cuckoo_empty(100, 0.01)
    UNION ALL SELECT i + 1, cuckoo_add(f, 7) FROM r WHERE i < 20)
  SELECT i, f FROM r;
SELECT i, cuckoo_count(f, 7) AS count, f @> 7 AS contains, items, tables, buckets
  FROM copies, cuckoo_info(f) WHERE i IN (0, 1, 9, 10, 20) ORDER BY i;
-- deleting the 20 copies one by one
CREATE TABLE deleted AS
  WITH RECURSIVE r(i, f) AS (
    SELECT 0, f FROM copies WHERE i = 20
    UNION ALL SELECT i + 1, cuckoo_delete(f, 7) FROM r WHERE i < 21)
  SELECT i, f FROM r;
SELECT i, cuckoo_count(f, 7) AS count, f @> 7 AS contains, items, tables
  FROM deleted, cuckoo_info(f) WHERE i IN (1, 19, 20, 21) ORDER BY i;
-- a 21st delete finds nothing to remove
SELECT a.f::bytea = b.f::bytea AS unchanged FROM deleted a, deleted b WHERE a.i = 20 AND b.i = 21;

-- counts never fall below the copies added: 1000 values, 10 distinct
SELECT items, bool_and(c >= 100) AS never_under, sum(c) >= 1000 AS total_at_least
  FROM (SELECT cuckoo_agg(g % 10, 1000, 0.01) AS f FROM generate_series(1, 1000) g) s,
       cuckoo_info(f), LATERAL (SELECT cuckoo_count(f, v) AS c FROM generate_series(0, 9) v) c
 GROUP BY items;

-- a stored filter grows when cuckoo_add finds it full: tables are appended,
-- each twice the size of the last, and nothing is lost
CREATE TABLE grown (f cuckoo);
INSERT INTO grown VALUES (cuckoo_empty(10, 0.01));
CREATE TABLE growth_log (added int, tables int, buckets int8, items int8);
DO $$
BEGIN
  FOR i IN 1..200 LOOP
    UPDATE grown SET f = cuckoo_add(f, i);
    IF i IN (10, 12, 50, 200) THEN
      INSERT INTO growth_log SELECT i, tables, buckets, items FROM grown, cuckoo_info(f);
    END IF;
  END LOOP;
END $$;
SELECT * FROM growth_log ORDER BY added;
SELECT count(*) AS false_negatives FROM grown, generate_series(1, 200) g WHERE NOT f @> g;

-- deleting values from a grown filter never hides the others: 20,000 values
-- in a filter sized for 1,000, then every odd one deleted
CREATE TABLE grown_deleted AS
  SELECT cuckoo_agg(g, 1000, 0.01) AS f FROM generate_series(1, 20000) g;
SELECT tables, items FROM grown_deleted, cuckoo_info(f);
DO $$
DECLARE
  filter cuckoo;
BEGIN
  SELECT f INTO filter FROM grown_deleted;
  FOR i IN 1..20000 BY 2 LOOP
    filter := cuckoo_delete(filter, i);
  END LOOP;
  UPDATE grown_deleted SET f = filter;
END $$;
SELECT (cuckoo_info(f)).items,
       (SELECT count(*) FROM generate_series(2, 20000, 2) g WHERE NOT f @> g) AS false_negatives
  FROM grown_deleted;
-- the smallest case: 30 values in a filter sized for one (three tables of
-- 1, 2 and 4 buckets), then one value deleted: no other value may be lost
SELECT d AS deleted, k AS lost
  FROM (SELECT cuckoo_agg(g, 1, 0.5) AS f FROM generate_series(1, 30) g) s,
       generate_series(1, 30) d, generate_series(1, 30) k
 WHERE k <> d AND NOT cuckoo_delete(f, d) @> k
 ORDER BY 1, 2;

-- copies and growth at 4-bit fingerprints (many collisions): 3,000 values
-- added twice to a filter sized for 100; deleting each odd value once leaves
-- every value present, deleting it again leaves every even value present
CREATE TABLE twice AS
  SELECT cuckoo_agg(g, 100, 0.5) AS f FROM generate_series(1, 3000) g, generate_series(1, 2) c;
SELECT tables > 1 AS grew, items FROM twice, cuckoo_info(f);
CREATE TABLE twice_log (round int, items int8, lost int8);
DO $$
DECLARE
  filter cuckoo;
BEGIN
  SELECT f INTO filter FROM twice;
  FOR r IN 1..2 LOOP
    FOR i IN 1..3000 BY 2 LOOP
      filter := cuckoo_delete(filter, i);
    END LOOP;
    INSERT INTO twice_log
      SELECT r, (cuckoo_info(filter)).items, count(*)
        FROM generate_series(1, 3000) g
       WHERE (r = 1 OR g % 2 = 0) AND NOT filter @> g;
  END LOOP;
END $$;
SELECT * FROM twice_log ORDER BY round;

-- union of disjoint filters
CREATE TABLE parts AS
  SELECT cuckoo_agg(g, 1000, 0.01) FILTER (WHERE g % 2 = 0) AS evens,
         cuckoo_agg(g, 1000, 0.01) FILTER (WHERE g % 2 = 1) AS odds
  FROM generate_series(1, 900) g;
SELECT (cuckoo_info(evens | odds)).items, (cuckoo_info(evens | odds)).tables,
       (SELECT count(*) FROM generate_series(1, 900) g WHERE NOT (evens | odds) @> g) AS false_negatives,
       cuckoo_union(evens, odds)::bytea = (evens | odds)::bytea AS same
  FROM parts;
-- copies add up
SELECT cuckoo_count(evens, 2) AS once, cuckoo_count(evens | evens, 2) AS twice,
       (cuckoo_info(evens | evens)).items
  FROM parts;
-- union of filters that grew, and of a grown filter with a fresh one
SELECT (cuckoo_info(u)).items, (cuckoo_info(u)).tables,
       (SELECT count(*) FROM generate_series(1, 3000) g WHERE NOT u @> g) AS false_negatives
  FROM (SELECT cuckoo_agg(g, 100, 0.01) FILTER (WHERE g <= 1000)
             | cuckoo_agg(g, 100, 0.01) FILTER (WHERE g > 1000) AS u
          FROM generate_series(1, 3000) g) s;
SELECT (cuckoo_info(u)).items,
       (SELECT count(*) FROM generate_series(1, 200) g WHERE NOT u @> g) AS false_negatives
  FROM (SELECT cuckoo_add(cuckoo_empty(10, 0.01), 0) | f AS u FROM grown) s;
-- an unbound filter (no values yet) merges with any
SELECT (cuckoo_add(cuckoo_empty(10, 0.1), 'a'::text) | cuckoo_empty(10, 0.1)) @> 'a'::text AS ok;

-- filters of different geometry cannot be merged; the error names both
SELECT cuckoo_empty(1000, 0.01) | cuckoo_empty(2000, 0.01);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_empty(1000, 0.01) | cuckoo_empty(1000, 0.001);
\echo :LAST_ERROR_SQLSTATE
-- filters of values of different types cannot be merged
SELECT cuckoo_add(cuckoo_empty(10, 0.1), 1) | cuckoo_add(cuckoo_empty(10, 0.1), 'a'::text);
\echo :LAST_ERROR_SQLSTATE

-- the sizeless empty filter from a zero-row aggregate
CREATE TABLE nothing (x int8);
SELECT * FROM cuckoo_info((SELECT cuckoo_agg(x, 100, 0.01) FROM nothing));
SELECT (SELECT cuckoo_agg(x, 100, 0.01) FROM nothing) @> 1::int8 AS contains,
       cuckoo_count((SELECT cuckoo_agg(x, 100, 0.01) FROM nothing), 1::int8) AS count,
       cuckoo_delete((SELECT cuckoo_agg(x, 100, 0.01) FROM nothing), 1::int8)::bytea
         = (SELECT cuckoo_agg(x, 100, 0.01) FROM nothing)::bytea AS delete_unchanged;
-- ... unions with anything, in both orders
SELECT ((SELECT cuckoo_agg(x, 100, 0.01) FROM nothing) | evens)::bytea = evens::bytea AS left_identity,
       (evens | (SELECT cuckoo_agg(x, 100, 0.01) FROM nothing))::bytea = evens::bytea AS right_identity,
       (cuckoo_info((SELECT cuckoo_agg(x, 100, 0.01) FROM nothing)
                    | (SELECT cuckoo_agg(x, 100, 0.01) FROM nothing))).tables AS both_empty
  FROM parts;
-- ... and cannot take values
SELECT cuckoo_add((SELECT cuckoo_agg(x, 100, 0.01) FROM nothing), 1);
\echo :LAST_ERROR_SQLSTATE

-- cuckoo_info on a filter at capacity: load near the design load of 0.95,
-- the estimated rate within the target
SELECT items, tables, round(load_factor::numeric, 3) AS load_factor,
       est_fpr > 0 AND est_fpr <= target_fpr AS est_within_target
  FROM cuckoo_info((SELECT cuckoo_agg(g, 10000, 0.01) FROM generate_series(1, 10000) g));

-- every object of the extension has a comment (casts excepted: their
-- functions carry it; and the array types PostgreSQL makes for the types,
-- members of the extension since PostgreSQL 17)
SELECT pg_describe_object(d.classid, d.objid, 0) AS uncommented
  FROM pg_depend d
  LEFT JOIN pg_description c ON c.classoid = d.classid AND c.objoid = d.objid AND c.objsubid = 0
 WHERE d.refclassid = 'pg_extension'::regclass
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'amqfilter')
   AND d.deptype = 'e'
   AND d.classid IN ('pg_proc'::regclass, 'pg_type'::regclass, 'pg_operator'::regclass)
   AND NOT (d.classid = 'pg_type'::regclass AND d.objid IN (SELECT typarray FROM pg_type))
   AND c.description IS NULL
 ORDER BY 1;
-- ... and the query above sees the cuckoo objects
SELECT d.classid::regclass AS catalog, count(*) > 0 AS has_cuckoo_objects
  FROM pg_depend d
 WHERE d.refclassid = 'pg_extension'::regclass
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'amqfilter')
   AND d.deptype = 'e'
   AND pg_describe_object(d.classid, d.objid, 0) LIKE '%cuckoo%'
   AND d.classid IN ('pg_proc'::regclass, 'pg_type'::regclass, 'pg_operator'::regclass)
 GROUP BY 1 ORDER BY 1;
