--
-- Cuckoo filters at the limits: filters of many tables are inspected and
-- merged in time linear in their size, and a merge needs memory for its
-- result only, not for both inputs.
--
CREATE SCHEMA cuckoo_limits;
SET search_path = cuckoo_limits, public;

-- One value added 45,000 times: its bucket pair holds copies, the counter
-- section counts the rest; one table, where every 9 copies used to take a
-- new table (5,001 of them).
CREATE TABLE many_tables AS
  SELECT cuckoo_agg(1, 1, 0.5) AS f FROM generate_series(1, 45000);
SELECT tables, items, bytes, cuckoo_count(f, 1) AS count
  FROM many_tables, cuckoo_info(f);

-- Values stored many times at n = 1M, p = 1%: 100,000 distinct values, one
-- value 20,000 times and ten more 5,000 times each.  The filter keeps its
-- one table and grows by its counter section only (768 bytes).
CREATE TABLE hot AS
SELECT cuckoo_agg(v, 1000000, 0.01) AS f
  FROM (SELECT g AS v FROM generate_series(1, 100000) g
        UNION ALL SELECT -1 FROM generate_series(1, 20000)
        UNION ALL SELECT -2 - (g % 10) FROM generate_series(1, 50000) g) s;
SELECT i.tables, i.items, i.bytes - p.bytes AS grown_by,
       cuckoo_count(f, -1) AS hot, cuckoo_count(f, -5) AS warm,
       cuckoo_count(f, 7) AS once
  FROM hot, cuckoo_info(f) i, cuckoo_params(1000000, 0.01) p;
-- a parallel-style union of two halves holds the same multiset
SELECT cuckoo_count(u, -1) AS hot, cuckoo_count(u, -5) AS warm,
       (cuckoo_info(u)).items
  FROM (SELECT cuckoo_union(a, b) AS u
          FROM (SELECT cuckoo_agg(v, 1000000, 0.01) AS a
                  FROM (SELECT -1 AS v FROM generate_series(1, 10000)
                        UNION ALL SELECT -5 FROM generate_series(1, 2500)) x) xa,
               (SELECT cuckoo_agg(v, 1000000, 0.01) AS b
                  FROM (SELECT -1 AS v FROM generate_series(1, 10000)
                        UNION ALL SELECT -5 FROM generate_series(1, 2500)) y) yb) s;
-- the counted copies survive text and binary round trips
SELECT f::text::cuckoo::bytea = f::bytea AS text_round_trip,
       f::bytea::cuckoo::bytea = f::bytea AS bytea_round_trip,
       get_byte(f::bytea, 4) AS format_version
  FROM hot;
-- deleting takes counted copies first, then the slots', down to none
WITH RECURSIVE d(i, f) AS (
  SELECT 0, cuckoo_agg(v, 1000, 0.01)
    FROM (SELECT -1 AS v FROM generate_series(1, 2000)
          UNION ALL SELECT g FROM generate_series(1, 500) g) s
  UNION ALL
  SELECT i + 1, cuckoo_delete(f, -1) FROM d WHERE i < 2000)
SELECT i, cuckoo_count(f, -1) AS copies, (cuckoo_info(f)).items,
       (SELECT count(*) FROM generate_series(1, 500) g WHERE NOT f @> g) AS lost
  FROM d WHERE i IN (0, 1, 1992, 2000) ORDER BY i;

-- Few values with many copies, whose bucket pairs other values share: the
-- copies past those the pairs hold are counted, so the filter has the
-- tables and table bytes of the filter of its distinct values, and grows by
-- its counter section only.  (Only pairs holding nothing but one value used
-- to be counted: 20,000 rows of g % 10 took 308 tables, 825,504 bytes;
-- 1,000,000 rows 15,385 tables, 41,231,864 bytes.)
CREATE TABLE few AS
SELECT rows, cuckoo_agg(g % 10, 2000, 0.01) AS f,
       (SELECT cuckoo_agg(v, 2000, 0.01) FROM generate_series(0, 9) v) AS d
  FROM (VALUES (20000), (1000000)) r(rows), generate_series(1, rows) g
 GROUP BY rows;
SELECT rows, i.tables, i.items, i.bytes, i.tables = j.tables AS same_tables,
       i.bytes - j.bytes AS counter_section,
       (SELECT array_agg(cuckoo_count(f, v) ORDER BY v)
          FROM generate_series(0, 9) v) AS counts
  FROM few, cuckoo_info(f) i, cuckoo_info(d) j ORDER BY rows;
-- Mixes cost what their distinct values cost, in tables: 1,000 values with
-- 1,000 copies each at n = 2,000 (was 251 tables, 2,643,472 bytes), and
-- 100,000 values with 100 copies each at n = 1M (was 26 tables, 34,212,464
-- bytes); the counter section holds an entry per value with copies counted.
SELECT 1000 AS values, i.tables, i.bytes, i.tables = j.tables AS same_tables,
       i.bytes - j.bytes AS counter_section,
       cuckoo_count(f, 7) AS count_7, cuckoo_count(f, 999) AS count_999
  FROM (SELECT cuckoo_agg(g % 1000, 2000, 0.01) AS f
          FROM generate_series(1, 1000000) g) s,
       (SELECT cuckoo_agg(g, 2000, 0.01) AS d FROM generate_series(0, 999) g) t,
       cuckoo_info(f) i, cuckoo_info(d) j;
SELECT 100000 AS values, i.tables, i.bytes, i.tables = j.tables AS same_tables,
       i.bytes - j.bytes AS counter_section,
       cuckoo_count(f, 7) AS count_7, cuckoo_count(f, 99999) AS count_99999
  FROM (SELECT cuckoo_agg(g % 100000, 1000000, 0.01) AS f
          FROM generate_series(1, 10000000) g) s,
       (SELECT cuckoo_agg(g, 1000000, 0.01) AS d
          FROM generate_series(0, 99999) g) t,
       cuckoo_info(f) i, cuckoo_info(d) j;
-- unions add the counts and keep the one table
SELECT rows, i.tables, i.items, cuckoo_count(f | f, 3) AS count_3
  FROM few, cuckoo_info(f | f) i ORDER BY rows;
-- deleting every copy of a value, counted or stored, leaves none of it,
-- and the other values keep theirs
WITH RECURSIVE d(i, f) AS (
  SELECT 0, f FROM few WHERE rows = 20000
  UNION ALL
  SELECT i + 1, cuckoo_delete(f, 3) FROM d WHERE i < 2000)
SELECT i, cuckoo_count(f, 3) AS count_3, f @> 3 AS contains_3,
       cuckoo_count(f, 4) AS count_4, (cuckoo_info(f)).items
  FROM d WHERE i IN (0, 1, 1999, 2000) ORDER BY i;

-- A crafted filter of 10,000 one-bucket tables, each bucket holding four
-- copies of the value 1: the header of a one-bucket filter holding 1, its
-- table count set to 10,000 (bytes 41..44), then 10,000 tables of a 32-byte
-- header (1 bucket, 4 items, no victim) and two words (the bucket's four
-- 4-bit slots, each the fingerprint of 1, then the zero padding word).
CREATE TABLE crafted AS
WITH one AS (SELECT cuckoo_add(cuckoo_empty(1, 0.5), 1)::bytea AS b)
SELECT (overlay(substr(b, 1, 64) PLACING '\x10270000'::bytea FROM 41)
        || decode(repeat('0100000000000000' || '0400000000000000' || repeat('00', 16)
                         || repeat(lpad(to_hex((get_byte(b, 96) & 15) * 17), 2, '0'), 2)
                         || repeat('00', 14), 10000), 'hex'))::cuckoo AS f
  FROM one;
SELECT tables, items, bytes, cuckoo_count(f, 1) AS count
  FROM crafted, cuckoo_info(f);

-- A valid filter of 100,000 empty one-bucket tables (4.8 MB).
CREATE TABLE empty_tables AS
SELECT (overlay(cuckoo_empty(1, 0.5)::bytea PLACING '\xa0860100'::bytea FROM 41)
        || decode(repeat('0100000000000000' || repeat('00', 24 + 16), 99999), 'hex'))::cuckoo AS f;

-- Merging such filters folds each fingerprint into a few tables of its
-- size, not into every one of them, and checks for interrupts as it goes;
-- inspecting them walks the tables once.  Each statement takes well under a
-- second; trying every table, or decoding from the first table for each
-- table, took from several seconds to minutes.
SET statement_timeout = '3s';
SELECT i.tables, i.items, cuckoo_count(u, 1) AS count
  FROM (SELECT f | f AS u FROM many_tables OFFSET 0) s, cuckoo_info(u) i;
SELECT i.tables, i.items, cuckoo_count(u, 1) AS count
  FROM (SELECT f | f AS u FROM crafted OFFSET 0) s, cuckoo_info(u) i;
SELECT i.tables, i.items, cuckoo_count(u, 1) AS count
  FROM (SELECT cuckoo_union_agg(f) AS u
          FROM (SELECT f FROM crafted UNION ALL SELECT f FROM crafted) c) s,
       cuckoo_info(u) i;
SELECT tables, buckets, items, bytes FROM empty_tables, cuckoo_info(f);
RESET statement_timeout;

-- Two filters each just over half the size limit (804,519,933 bytes): their
-- union needs the room of one, as nothing spills, and is built.
CREATE TABLE half (n int8);
INSERT INTO half VALUES (766000000);
SELECT bytes, bytes > 804519933 / 2 AS over_half FROM half, cuckoo_params(n, 0.5);
SELECT i.bytes, i.items, i.tables, u @> 1 AS contains_1
  FROM half,
       LATERAL (SELECT cuckoo_empty(n, 0.5) | cuckoo_add(cuckoo_empty(n, 0.5), 1) AS u
                OFFSET 0) s,
       cuckoo_info(u) i;
-- A filter 5 bytes below the size limit: eight copies of a value fill its
-- bucket pair; the ninth needs a counter section (384 bytes), which the
-- limit refuses rather than let pg_dump fail later
SELECT bytes, 804519933 - bytes AS below_limit FROM cuckoo_params(1528587665, 0.5);
SELECT (cuckoo_info(cuckoo_agg(1, 1528587665, 0.5))).items FROM generate_series(1, 8);
SELECT (cuckoo_info(cuckoo_agg(1, 1528587665, 0.5))).items FROM generate_series(1, 9);
\echo :LAST_ERROR_SQLSTATE
