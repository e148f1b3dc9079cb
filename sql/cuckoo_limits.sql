--
-- Cuckoo filters at the limits: filters of many tables are inspected and
-- merged in time linear in their size, and a merge needs memory for its
-- result only, not for both inputs.
--
CREATE SCHEMA cuckoo_limits;
SET search_path = cuckoo_limits, public;

-- One value added 45,000 times: 9 copies fill a table's bucket pair, so the
-- filter grows to 5,001 tables, nearly all of one size.
CREATE TABLE many_tables AS
  SELECT cuckoo_agg(1, 1, 0.5) AS f FROM generate_series(1, 45000);
SELECT tables, items, bytes FROM cuckoo_info((SELECT f FROM many_tables));

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
-- ... but when what one holds does not fit in the other (nine copies of a
-- value fill its bucket pair and the victim slot), the union needs a second
-- table of that size, and the size limit stops it
SELECT (cuckoo_info(f | f)).items
  FROM (SELECT cuckoo_agg(1, n, 0.5) AS f FROM half, generate_series(1, 9) GROUP BY n) s;
\echo :LAST_ERROR_SQLSTATE
