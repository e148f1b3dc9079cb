-- Probes of stored filters through TOAST slices (filter_access.c): the
-- same answers as reading the whole value, far fewer blocks read, the
-- adaptive switch to one whole read, and crafted headers that lie about
-- the size, each an error.  amqfilter.probe_read fixes how probes read:
-- 'slices', 'whole' (as before 0.2) or 'auto' (the default).
CREATE SCHEMA slice_probe;
SET search_path = slice_probe, public;

-- filters of the even numbers 2 .. 100,000, stored out of line and
-- uncompressed (both types are STORAGE external): bloom in both layouts,
-- and a cuckoo filter sized for a fifth of them, so that it grew tables
CREATE TABLE filters (name text PRIMARY KEY, b bloom, c cuckoo);
INSERT INTO filters (name, b)
  SELECT 'blocked', bloom_agg(2 * g, 50000, 0.01) FROM generate_series(1, 50000) g;
INSERT INTO filters (name, b)
  SELECT 'classic', bloom_agg(2 * g, 50000, 0.01, 'classic') FROM generate_series(1, 50000) g;
INSERT INTO filters (name, c)
  SELECT 'cuckoo', cuckoo_agg(2 * g, 10000, 0.01) FROM generate_series(1, 50000) g;
SELECT name, coalesce((bloom_info(b)).layout, 'cuckoo') AS kind,
       (cuckoo_info(c)).tables AS tables,
       coalesce(pg_column_compression(b), pg_column_compression(c)) AS compression,
       coalesce(pg_column_size(b), pg_column_size(c)) > 8000 AS out_of_line_size
  FROM filters ORDER BY name;

-- every probe of 100,000 values (half of them members), once through
-- slices and once reading the whole value
CREATE FUNCTION answers(mode text) RETURNS TABLE (name text, v bigint,
    contains bool, operator bool, contained_by bool, count int)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('amqfilter.probe_read', mode, true);
  RETURN QUERY
    SELECT f.name, g, coalesce(bloom_contains(f.b, g), cuckoo_contains(f.c, g)),
           coalesce(f.b @> g, f.c @> g), coalesce(g <@ f.b, g <@ f.c),
           cuckoo_count(f.c, g)
      FROM filters f, generate_series(1::bigint, 100000) g;
END $$;
CREATE TABLE through_slices AS SELECT * FROM answers('slices');
CREATE TABLE through_whole AS SELECT * FROM answers('whole');
SELECT s.name, count(*) AS probes,
       count(*) FILTER (WHERE (s.contains, s.operator, s.contained_by, s.count)
                 IS DISTINCT FROM (w.contains, w.operator, w.contained_by, w.count)) AS differ,
       count(*) FILTER (WHERE s.v % 2 = 0 AND s.contains) = 50000 AS members_found,
       count(*) FILTER (WHERE s.v % 2 = 1 AND s.contains) < 1000 AS few_false_positives,
       sum(s.count) >= 50000 AS counts_cover_members
  FROM through_slices s JOIN through_whole w USING (name, v)
 GROUP BY s.name ORDER BY s.name;
SHOW amqfilter.probe_read;

-- blocks of the TOAST table one probe reads: a few through slices, every
-- block of the value when read whole; the statement's second probe of the
-- value reads nothing more (the transaction keeps what was read whole)
SET stats_fetch_consistency = none;
CREATE FUNCTION toast_blocks() RETURNS bigint LANGUAGE sql AS $$
  SELECT toast_blks_hit + toast_blks_read FROM pg_statio_all_tables
   WHERE relid = 'slice_probe.filters'::regclass $$;
CREATE TABLE blocks (what text, n bigint);
CREATE FUNCTION measure(what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  -- the counts reach the shared statistics only between transactions
  INSERT INTO blocks VALUES (what, -toast_blocks());
  PERFORM pg_stat_force_next_flush();
END $$;
SELECT pg_stat_force_next_flush();
SELECT measure('one probe, slices');
SET amqfilter.probe_read = 'slices';
SELECT b @> 5::bigint, b @> 6::bigint FROM filters WHERE name = 'blocked';
SELECT pg_stat_force_next_flush();
UPDATE blocks SET n = n + toast_blocks() WHERE what = 'one probe, slices';
SELECT measure('one probe, whole');
SET amqfilter.probe_read = 'whole';
SELECT b @> 5::bigint, b @> 6::bigint FROM filters WHERE name = 'blocked';
SELECT pg_stat_force_next_flush();
UPDATE blocks SET n = n + toast_blocks() WHERE what = 'one probe, whole';
-- a scan probing one value 100,000 times: 'auto' reads slices until they
-- would cost more than one whole read, then reads it whole
SELECT measure('scan, auto');
SET amqfilter.probe_read = 'auto';
SELECT count(*) FROM generate_series(1::bigint, 100000) g
 WHERE (SELECT b FROM filters WHERE name = 'blocked') @> g;
SELECT pg_stat_force_next_flush();
UPDATE blocks SET n = n + toast_blocks() WHERE what = 'scan, auto';
SELECT measure('scan, slices');
SET amqfilter.probe_read = 'slices';
SELECT count(*) FROM generate_series(1::bigint, 100000) g
 WHERE (SELECT b FROM filters WHERE name = 'blocked') @> g;
SELECT pg_stat_force_next_flush();
UPDATE blocks SET n = n + toast_blocks() WHERE what = 'scan, slices';
RESET amqfilter.probe_read;
-- (the value's blocks: its 1,996-byte TOAST chunks, four to a page)
SELECT (SELECT n FROM blocks WHERE what = 'one probe, slices') <= 6 AS slices_read_few_blocks,
       (SELECT n FROM blocks WHERE what = 'one probe, whole') >= v.blocks AS whole_reads_every_block,
       (SELECT n FROM blocks WHERE what = 'one probe, whole') < 2 * v.blocks AS whole_read_once,
       (SELECT n FROM blocks WHERE what = 'scan, auto') >=
         (SELECT n FROM blocks WHERE what = 'one probe, whole') / 2 AS auto_switched_to_whole,
       (SELECT n FROM blocks WHERE what = 'scan, auto') * 20 <
         (SELECT n FROM blocks WHERE what = 'scan, slices') AS auto_reads_far_less
  FROM (SELECT ceil(ceil(length(b::bytea) / 1996.0) / 4) AS blocks
          FROM filters WHERE name = 'blocked') v;

-- a valid cuckoo value of 20,000 one-bucket tables: validating it through
-- slices would take 40,001 reads, more than reading its 960 kB whole, so a
-- probe reads it whole even when told to use slices
INSERT INTO filters
SELECT 'many tables',
       NULL,
       (overlay(cuckoo_empty(1, 0.5)::bytea PLACING '\x204e0000'::bytea FROM 41)
        || decode(repeat('0100000000000000' || repeat('00', 24 + 16), 19999), 'hex'))::cuckoo;
SELECT measure('many tables, slices');
SET amqfilter.probe_read = 'slices';
SELECT c @> 5::bigint AS has_5 FROM filters WHERE name = 'many tables';
SELECT pg_stat_force_next_flush();
UPDATE blocks SET n = n + toast_blocks() WHERE what = 'many tables, slices';
RESET amqfilter.probe_read;
SELECT n < 2000 AS read_whole_not_per_table FROM blocks WHERE what = 'many tables, slices';

-- compressed and in-line values take the whole-value path and answer alike
CREATE TABLE other_storage (name text, b bloom);
ALTER TABLE other_storage ALTER COLUMN b SET STORAGE extended;
INSERT INTO other_storage
  SELECT 'compressed', bloom_add(bloom_add(bloom_empty(1000000, 0.01), 1), 7);
INSERT INTO other_storage
  SELECT 'in-line', bloom_add(bloom_add(bloom_empty(100, 0.01), 1), 7);
SELECT name, pg_column_compression(b) IS NOT NULL AS compressed,
       b @> 1 AS has_1, b @> 7 AS has_7, b @> 2 AS has_2
  FROM other_storage ORDER BY name;
SET amqfilter.probe_read = 'slices';
SELECT name, b @> 1 AS has_1, b @> 7 AS has_7, b @> 2 AS has_2
  FROM other_storage ORDER BY name;
RESET amqfilter.probe_read;

-- Crafted headers that lie about the size, stored out of line.  Each is
-- an error (XX001) through slices, the error reading it whole gives, and
-- no read leaves the value.  To store them, bypass the input checks with
-- bytea's own input function declared as returning the type.
CREATE FUNCTION unchecked_bloom(cstring) RETURNS bloom
  LANGUAGE internal IMMUTABLE STRICT AS 'byteain';
CREATE FUNCTION unchecked_cuckoo(cstring) RETURNS cuckoo
  LANGUAGE internal IMMUTABLE STRICT AS 'byteain';
CREATE FUNCTION patch(b bytea, off int, hex text) RETURNS bytea
  LANGUAGE sql IMMUTABLE STRICT
  AS $$ SELECT overlay(b PLACING decode(hex, 'hex') FROM off + 1) $$;
-- the specimens: a blocked bloom filter of 39 blocks, 19,968 bits (2,552
-- bytes with its 56-byte header), and a cuckoo filter of 3 tables, the
-- first of 132 buckets, and a counter section of 16 entries (384 bytes):
-- where the filter was full, one value met an equal fingerprint in its
-- pair, and its copy was counted
CREATE TABLE specimen AS
  SELECT bloom_add(bloom_empty(2000, 0.01), 1)::bytea AS b,
         cuckoo_agg(g, 500, 0.01)::bytea AS c
    FROM generate_series(1, 3000) g;
SELECT length(b) AS bloom_bytes, (bloom_info(b::bloom)).bits,
       length(c) AS cuckoo_bytes, (cuckoo_info(c::cuckoo)).tables,
       (cuckoo_params(500, 0.01)).buckets AS first_table_buckets
  FROM specimen;
CREATE TABLE crafted (n int, what text, b bloom, c cuckoo);
-- bloom header, offsets from 0: 24 nbits (u64, little-endian)
INSERT INTO crafted (n, what, b) SELECT n, what, unchecked_bloom(('\x' || encode(v, 'hex'))::cstring)
  FROM specimen s, LATERAL (VALUES
  (1, 'bloom: 78 blocks, twice what it has',    patch(s.b, 24, '009c000000000000')),
  (2, 'bloom: 19 blocks, half what it has',      patch(s.b, 24, '0026000000000000')),
  (3, 'bloom: 2^32 bits (512 MB) claimed',       patch(s.b, 24, '0000000001000000')),
  (4, 'bloom: 40 blocks, one more than it has',  patch(s.b, 24, '0050000000000000')),
  (5, 'bloom: one byte cut off',                 substr(s.b, 1, length(s.b) - 1)),
  (6, 'bloom: 8 KB of zeros appended',           s.b || decode(repeat('00', 8192), 'hex')),
  (7, 'bloom: 2^62 bits, past the size limit',   patch(s.b, 24, '0000000000000040'))) v(n, what, v);
-- cuckoo header: 40 tables (u32); each table: 0 buckets (u64); first table at 64
INSERT INTO crafted (n, what, c) SELECT n, what, unchecked_cuckoo(('\x' || encode(v, 'hex'))::cstring)
  FROM specimen s, LATERAL (VALUES
  (8, 'cuckoo: 4 tables claimed, 3 present',     patch(s.c, 40, '04000000')),
  (9, 'cuckoo: 2 tables claimed, 3 present',     patch(s.c, 40, '02000000')),
  (10, 'cuckoo: counter section cut short',       substr(s.c, 1, length(s.c) - 8)),
  (11, 'cuckoo: 8 KB of zeros appended',         s.c || decode(repeat('00', 8192), 'hex')),
  -- (the table then ends in the next one's bytes: its padding is not zero)
  (12, 'cuckoo: first table 264 buckets, twice', patch(s.c, 64, '0801000000000000')),
  (13, 'cuckoo: first table 2^28 buckets',       patch(s.c, 64, '0000001000000000'))) v(n, what, v);
SELECT n, what, coalesce(pg_column_size(b), pg_column_size(c)) > 2100 AS out_of_line_size
  FROM crafted ORDER BY n;
CREATE FUNCTION try(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE detail text;
BEGIN
  EXECUTE sql;
  RETURN 'accepted';
EXCEPTION WHEN others THEN
  GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ' ' || SQLERRM || coalesce(' -- ' || nullif(detail, ''), '');
END $$;
SET amqfilter.probe_read = 'slices';
SELECT n, e.fn, try(format('SELECT %s FROM slice_probe.crafted WHERE n = %s', e.expr, n)) AS result
  FROM crafted,
       LATERAL (VALUES (1, 'contains', CASE WHEN b IS NULL THEN 'cuckoo_contains(c, 1)' ELSE 'bloom_contains(b, 1)' END),
                       (2, '@>', CASE WHEN b IS NULL THEN 'c @> 1' ELSE 'b @> 1' END),
                       (3, '<@', CASE WHEN b IS NULL THEN '1 <@ c' ELSE '1 <@ b' END),
                       (4, 'count', CASE WHEN b IS NULL THEN 'cuckoo_count(c, 1)' END)) e(o, fn, expr)
 WHERE e.expr IS NOT NULL
 ORDER BY n, e.o;
-- the same errors reading them whole
SET amqfilter.probe_read = 'whole';
SELECT n, try(format('SELECT %s FROM slice_probe.crafted WHERE n = %s',
                     CASE WHEN b IS NULL THEN 'c @> 1' ELSE 'b @> 1' END, n)) AS result
  FROM crafted ORDER BY n;
RESET amqfilter.probe_read;

-- the setting takes only its three values
SET amqfilter.probe_read = 'sometimes';

-- Filters in memory, not stored: the result of an InitPlan is the same
-- value on every row and is validated once while it stays the same; each
-- member of 1..1000 is found among 5000 probes.
SELECT count(*) AS bloom_members
  FROM generate_series(1, 5000) g
 WHERE (SELECT bloom_agg(x, 1000, 0.01) FROM generate_series(1, 1000) x) @> g
   AND g <= 1000;
SELECT count(*) AS cuckoo_members
  FROM generate_series(1, 5000) g
 WHERE (SELECT cuckoo_agg(x, 1000, 0.01) FROM generate_series(1, 1000) x) @> g
   AND g <= 1000;
-- A new value per row, at the address the last row's had (memory is reused
-- from row to row), of the same length but another geometry on every other
-- row: 7 or 4 hashes (classic, 960 bits both), 10- or 12-bit fingerprints
-- (cuckoo, 256 bytes both).  Each row's own value is in its own filter, so
-- every row counts; reusing the first row's validated view for a value
-- because it sits at the same address would miss about half of them.
SELECT 'bloom' AS type, (bloom_info(f)).bits AS size,
       (bloom_info(f)).hashes AS hashes_or_fp_bits
  FROM (VALUES (bloom_empty(100, 0.01, 'classic')),
               (bloom_empty(150, 0.05, 'classic'))) v(f)
UNION ALL
SELECT 'cuckoo', (cuckoo_info(f)).bytes, (cuckoo_info(f)).fingerprint_bits
  FROM (VALUES (cuckoo_empty(95, 0.002)), (cuckoo_empty(114, 0.01))) v(f);
SELECT count(*) AS bloom_own_value
  FROM generate_series(1, 2000) g
 WHERE bloom_add(CASE WHEN g % 2 = 1 THEN bloom_empty(100, 0.01, 'classic')
                      ELSE bloom_empty(150, 0.05, 'classic') END, g) @> g;
SELECT count(*) AS cuckoo_own_value
  FROM generate_series(1, 2000) g
 WHERE cuckoo_add(CASE WHEN g % 2 = 1 THEN cuckoo_empty(95, 0.002)
                       ELSE cuckoo_empty(114, 0.01) END, g) @> g;

RESET search_path;
DROP SCHEMA slice_probe CASCADE;
