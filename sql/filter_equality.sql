-- Filters compare by their bytes (src/glue/filter_compare.c): = and <>, and btree
-- and hash operator classes, so that DISTINCT, GROUP BY, UNION, unique
-- constraints and hash and merge joins work on filter columns.  Before 0.2
-- each of these failed: "operator does not exist: bloom = bloom", "could not
-- identify an equality operator for type bloom", "data type bloom has no
-- default operator class for access method "btree"".

CREATE SCHEMA filter_equality;
SET search_path = filter_equality, public;

-- the same values, n, p and layout give the same bytes
SELECT bloom_agg(g, 100, 0.01) = bloom_agg(g, 100, 0.01) AS bloom_same,
       bloom_agg(g, 100, 0.01) <> bloom_agg(g, 100, 0.01) AS bloom_same_ne,
       cuckoo_agg(g, 100, 0.01) = cuckoo_agg(g, 100, 0.01) AS cuckoo_same,
       cuckoo_agg(g, 100, 0.01) <> cuckoo_agg(g, 100, 0.01) AS cuckoo_same_ne
  FROM generate_series(1, 50) g;
-- a value more, or the same values built with another n or layout: not equal
SELECT f = bloom_add(f, 51) AS one_more, f <> bloom_add(f, 51) AS one_more_ne,
       f = other_n AS other_n, f = other_layout AS other_layout
  FROM (SELECT bloom_agg(g, 100, 0.01) AS f, bloom_agg(g, 200, 0.01) AS other_n,
               bloom_agg(g, 100, 0.01, 'classic') AS other_layout
          FROM generate_series(1, 50) g) s;
SELECT f = cuckoo_add(f, 51) AS one_more, f <> cuckoo_add(f, 51) AS one_more_ne,
       f = other_n AS other_n, f = cuckoo_delete(cuckoo_add(f, 51), 51) AS added_and_deleted
  FROM (SELECT cuckoo_agg(g, 100, 0.01) AS f, cuckoo_agg(g, 200, 0.01) AS other_n
          FROM generate_series(1, 50) g) s;
-- the sizeless empty filter is one value; NULL compares as NULL
SELECT bloom_agg(g, 10, 0.01) = bloom_agg(g, 1000, 0.1) AS bloom_empties,
       cuckoo_agg(g, 10, 0.01) = cuckoo_agg(g, 1000, 0.1) AS cuckoo_empties
  FROM generate_series(1, 0) g;
SELECT (NULL::bloom = bloom_empty(10, 0.01)) IS NULL AS bloom_null,
       (cuckoo_empty(10, 0.01) <> NULL::cuckoo) IS NULL AS cuckoo_null;

-- The order: shorter first, then by bytes.  Total (exactly one of <, =, >
-- for every pair, and the other operators and cmp agree), meaningless
-- beyond equality.
CREATE TABLE ordered AS
SELECT n, bloom_agg(g, n, 0.01) AS b, cuckoo_agg(g, n, 0.01) AS c
  FROM (VALUES (10), (100), (1000)) v(n), generate_series(1, 10) g GROUP BY n
UNION ALL
SELECT 100, bloom_agg(g, 100, 0.01), cuckoo_agg(g, 100, 0.01) FROM generate_series(11, 20) g
UNION ALL
SELECT 0, bloom_agg(g, 1, 0.5), cuckoo_agg(g, 1, 0.5) FROM generate_series(1, 0) g;
SELECT bool_and((x.b < y.b)::int + (x.b = y.b)::int + (x.b > y.b)::int = 1
                AND (x.b <= y.b) = NOT (x.b > y.b) AND (x.b >= y.b) = NOT (x.b < y.b)
                AND bloom_cmp(x.b, y.b) = CASE WHEN x.b < y.b THEN -1 WHEN x.b = y.b THEN 0 ELSE 1 END
                AND (x.b < y.b) = (y.b > x.b)) AS bloom_total,
       bool_and((x.c < y.c)::int + (x.c = y.c)::int + (x.c > y.c)::int = 1
                AND (x.c <= y.c) = NOT (x.c > y.c) AND (x.c >= y.c) = NOT (x.c < y.c)
                AND cuckoo_cmp(x.c, y.c) = CASE WHEN x.c < y.c THEN -1 WHEN x.c = y.c THEN 0 ELSE 1 END
                AND (x.c < y.c) = (y.c > x.c)) AS cuckoo_total,
       bool_and(x.b < y.b AND x.c < y.c) FILTER (WHERE x.n < y.n) AS shorter_first,
       count(*) FILTER (WHERE x.b = y.b) AS bloom_equal_pairs,
       count(*) FILTER (WHERE x.c = y.c) AS cuckoo_equal_pairs
  FROM ordered x, ordered y;

-- the operator classes are valid, and the 32-bit hash is the 64-bit one's
-- low half under seed 0 (what a hash operator class must give)
SELECT c.opcname, a.amname, amvalidate(c.oid)
  FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
 WHERE c.opcname IN ('bloom_ops', 'cuckoo_ops') ORDER BY 1, 2;
SELECT bool_and(bloom_hash(b)::bigint & 4294967295 = bloom_hash_extended(b, 0) & 4294967295
                AND cuckoo_hash(c)::bigint & 4294967295 = cuckoo_hash_extended(c, 0) & 4294967295)
         AS low_half,
       bool_and(bloom_hash_extended(b, 0) <> bloom_hash_extended(b, 1)) AS seeded
  FROM ordered;

-- A table of filter columns: rows i and i + 3 hold the same filters.
CREATE TABLE filt AS
SELECT i, bloom_agg(i % 3 * 1000 + g, 100, 0.01) AS b,
       cuckoo_agg(i % 3 * 1000 + g, 100, 0.01) AS c
  FROM generate_series(1, 6) i, generate_series(1, 20) g
 GROUP BY i;
ANALYZE filt;

-- DISTINCT, GROUP BY and UNION, hashed and sorted
SELECT count(DISTINCT b) AS bloom_distinct, count(DISTINCT c) AS cuckoo_distinct FROM filt;
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT min(i), max(i) FROM filt GROUP BY b;
SELECT min(i), max(i) FROM filt GROUP BY b ORDER BY 1;
SELECT min(i), max(i) FROM filt GROUP BY c ORDER BY 1;
EXPLAIN (COSTS OFF) SELECT DISTINCT c FROM filt;
SELECT count(*) FROM (SELECT DISTINCT c FROM filt) s;
RESET enable_sort;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT min(i), max(i) FROM filt GROUP BY c;
SELECT min(i), max(i) FROM filt GROUP BY c ORDER BY 1;
SELECT min(i), max(i) FROM filt GROUP BY b ORDER BY 1;
RESET enable_hashagg;
SELECT count(*) AS bloom_union FROM (SELECT b FROM filt UNION SELECT b FROM filt WHERE i < 3) u;
SELECT count(*) AS cuckoo_union FROM (SELECT c FROM filt UNION SELECT c FROM filt WHERE i > 4) u;

-- a unique constraint rejects a duplicate filter
CREATE TABLE uniq (b bloom UNIQUE, c cuckoo UNIQUE);
INSERT INTO uniq SELECT b, c FROM filt WHERE i <= 3;
\set VERBOSITY terse
INSERT INTO uniq SELECT b, NULL FROM filt WHERE i = 4;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO uniq SELECT NULL, c FROM filt WHERE i = 5;
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT count(*) FROM uniq;

-- a hash join and a merge join on filter columns
SET enable_mergejoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT x.i, y.i FROM filt x JOIN filt y ON x.b = y.b WHERE x.i < y.i;
SELECT x.i, y.i FROM filt x JOIN filt y ON x.b = y.b WHERE x.i < y.i ORDER BY 1;
SELECT x.i, y.i FROM filt x JOIN filt y ON x.c = y.c WHERE x.i < y.i ORDER BY 1;
RESET enable_mergejoin;
SET enable_hashjoin = off;
EXPLAIN (COSTS OFF) SELECT x.i, y.i FROM filt x JOIN filt y ON x.c = y.c WHERE x.i < y.i;
SELECT x.i, y.i FROM filt x JOIN filt y ON x.c = y.c WHERE x.i < y.i ORDER BY 1;
SELECT x.i, y.i FROM filt x JOIN filt y ON x.b = y.b WHERE x.i < y.i ORDER BY 1;
RESET enable_hashjoin;
RESET enable_nestloop;

-- Filters stored out of line (TOAST): 2 has the bytes of 1, 3 its length
-- and one value more, 4 another length.
CREATE TABLE big (id int, b bloom, c cuckoo);
INSERT INTO big SELECT 1, bloom_agg(g, 100000, 0.01), cuckoo_agg(g, 100000, 0.01)
  FROM generate_series(1, 1000) g;
INSERT INTO big SELECT 2, b, c FROM big WHERE id = 1;
INSERT INTO big SELECT 3, bloom_add(b, 0), cuckoo_add(c, 0) FROM big WHERE id = 1;
INSERT INTO big SELECT 4, bloom_agg(g, 200000, 0.01), cuckoo_agg(g, 200000, 0.01)
  FROM generate_series(1, 1000) g;
SELECT pg_relation_size(reltoastrelid) > 4 * 100000 AS toasted
  FROM pg_class WHERE oid = 'big'::regclass;
SELECT x.id, y.id, x.b = y.b AS b_eq, x.b <> y.b AS b_ne, x.c = y.c AS c_eq,
       x.c <> y.c AS c_ne, bloom_hash(x.b) = bloom_hash(y.b) AS b_hash_eq,
       cuckoo_hash(x.c) = cuckoo_hash(y.c) AS c_hash_eq,
       CASE WHEN octet_length(x.b::bytea) <> octet_length(y.b::bytea)
            THEN x.b < y.b END AS b_lt_by_length
  FROM big x, big y WHERE x.id < y.id ORDER BY 1, 2;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SELECT x.id, y.id FROM big x JOIN big y ON x.b = y.b AND x.c = y.c WHERE x.id < y.id;
RESET enable_mergejoin;
RESET enable_nestloop;
-- a btree entry cannot hold a filter above about 2.7 kB; a hash index
-- holds only the hash, so an exclusion constraint keeps large filters unique
\set VERBOSITY terse
CREATE TABLE big_btree (b bloom UNIQUE);
INSERT INTO big_btree SELECT b FROM big WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE big_unique (b bloom, c cuckoo,
                         EXCLUDE USING hash (b WITH =), EXCLUDE USING hash (c WITH =));
INSERT INTO big_unique SELECT b, c FROM big WHERE id IN (1, 3, 4);
INSERT INTO big_unique SELECT b, NULL FROM big WHERE id = 2;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO big_unique SELECT NULL, c FROM big WHERE id = 2;
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT count(*) FROM big_unique;

-- Values of more than one slice (3 MB) are compared and hashed slice by
-- slice: two equal ones, and one whose last byte differs.
CREATE TABLE huge AS
SELECT f, (overlay(f::bytea PLACING '\x01'::bytea FROM octet_length(f::bytea)))::bloom AS g
  FROM bloom_empty(3000000, 0.01) f;
SELECT octet_length(f::bytea) > 3 * 1024 * 1024 AS two_slices,
       f = (SELECT f FROM huge) AS equal, f = g AS last_byte, f < g AS last_byte_order,
       bloom_hash(f) = bloom_hash((SELECT f FROM huge)) AS hash_equal,
       bloom_hash(f) <> bloom_hash(g) AS hash_differs
  FROM huge;

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA filter_equality CASCADE;
RESET client_min_messages;
