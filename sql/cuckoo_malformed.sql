-- Crafted malformed cuckoo values: one per validation rule, in the order
-- amq_cuckoo_open checks them, through every gate, each with its SQLSTATE.
-- Header (docs/format.md), offsets from 0, integers little-endian:
--   0 magic "AMQC" | 4 version | 5 bucket size | 6 hash scheme | 7 fingerprint bits
--   8 flags (4) | 12 family (4) | 16 seed (8) | 24 capacity (8)
--   32 target fpr (8, float) | 40 tables (4) | 44 counter entries (4, version 2)
--   48..63 reserved
-- then each table: 0 buckets (8) | 8 items (8) | 16 victim bucket (8)
--   24 victim fingerprint (4) | 28 reserved (4) | 32 ceil(4 * buckets * f / 64) + 1 words
-- Rules, in check order:
--    1 at least a header          2 magic                 3 version (0A000)
--    4 hash scheme                5 flags, reserved bytes
--    6 header geometry: bucket size 4, 4 <= f <= 32, capacity >= 1,
--      0 < p < 1; the sizeless empty filter (0 tables) has every field
--      zero, its family too (case 54, listed with rule 14's cases)
--   then each table in turn:
--    7 its header fits            8 1 <= buckets <= the size limit, and
--                                   buckets = (the first table's) * 2^k
--    9 its words fit             10 victim: fp fits f bits, bucket in range,
--                                   no bucket without a fingerprint
--   11 items <= 4 * buckets + 1  12 reserved field zero
--   13 padding bits and the spare word zero
--   and at the end:
--   14 no family but items
--   15 exact total length

CREATE SCHEMA cuckoo_malformed;
SET search_path = cuckoo_malformed, public;

-- patch(bytes, offset, hex): overwrite bytes at a 0-based offset
CREATE FUNCTION patch(b bytea, off int, hex text) RETURNS bytea
  LANGUAGE sql IMMUTABLE STRICT
  AS $$ SELECT overlay(b PLACING decode(hex, 'hex') FROM off + 1) $$;
-- the SQLSTATE, message and detail of a cast, or 'accepted'
CREATE FUNCTION try_bytea(b bytea) RETURNS text LANGUAGE plpgsql AS $$
DECLARE detail text;
BEGIN
  PERFORM b::cuckoo;
  RETURN 'accepted';
EXCEPTION WHEN others THEN
  GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ' ' || SQLERRM || coalesce(' -- ' || nullif(detail, ''), '');
END $$;
CREATE FUNCTION try_text(t text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE detail text;
BEGIN
  PERFORM t::cuckoo;
  RETURN 'accepted';
EXCEPTION WHEN others THEN
  GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ' ' || SQLERRM || coalesce(' -- ' || nullif(detail, ''), '');
END $$;

-- the specimens:
--   s: one value in a filter of 2 buckets of 4-bit fingerprints: 64 + 32 +
--      2 words = 112 bytes, the value's fingerprint in bucket 1 slot 0
--   t: ten values in the same geometry: a second table of 4 buckets at
--      offset 112, 160 bytes in all
--   e: the sizeless empty filter, 64 bytes
CREATE TABLE specimen AS
  SELECT cuckoo_add(cuckoo_empty(5, 0.5), 1)::bytea AS s,
         (SELECT cuckoo_agg(g, 5, 0.5) FROM generate_series(1, 10) g)::bytea AS t,
         (SELECT cuckoo_agg(g, 5, 0.5) FROM generate_series(1, 0) g)::bytea AS e;
SELECT length(s) AS s_bytes, (cuckoo_info(s::cuckoo)).buckets AS s_buckets,
       (cuckoo_info(s::cuckoo)).fingerprint_bits AS s_f, s::cuckoo @> 1 AS s_valid,
       length(t) AS t_bytes, (cuckoo_info(t::cuckoo)).tables AS t_tables,
       (cuckoo_info(t::cuckoo)).buckets AS t_buckets,
       length(e) AS e_bytes, (cuckoo_info(e::cuckoo)).tables AS e_tables
  FROM specimen;
-- the specimen's table header and words
SELECT substr(s, 65, 32) AS s_table_header, substr(s, 97, 16) AS s_words FROM specimen;

-- every rule broken once (some twice, to pin both ends)
CREATE TABLE cases AS
SELECT n, rule, what, v FROM specimen sp, LATERAL (VALUES
  ( 1,  1, 'no bytes at all',                     '\x'::bytea),
  ( 2,  1, 'magic only',                          '\x414d5143'::bytea),
  ( 3,  1, '63 bytes, one short of a header',     substr(sp.s, 1, 63)),
  ( 4,  2, 'magic "AMQB" (bloom''s)',             patch(sp.s, 3, '42')),
  ( 5,  2, 'magic "XMQC"',                        patch(sp.s, 0, '58')),
  ( 6,  3, 'version 3',                           patch(sp.s, 4, '03')),
  ( 7,  3, 'version 0',                           patch(sp.s, 4, '00')),
  ( 8,  4, 'hash scheme 0',                       patch(sp.s, 6, '00')),
  ( 9,  4, 'hash scheme 2',                       patch(sp.s, 6, '02')),
  (10,  5, 'flags 1',                             patch(sp.s, 8, '01')),
  (11,  5, 'flags 2^31',                          patch(sp.s, 11, '80')),
  (12,  5, 'reserved byte 44',                    patch(sp.s, 44, '01')),
  (13,  5, 'reserved byte 63',                    patch(sp.s, 63, '01')),
  (14,  6, 'bucket size 3',                       patch(sp.s, 5, '03')),
  (15,  6, 'bucket size 0',                       patch(sp.s, 5, '00')),
  (16,  6, '3-bit fingerprints',                  patch(sp.s, 7, '03')),
  (17,  6, '33-bit fingerprints',                 patch(sp.s, 7, '21')),
  (18,  6, 'capacity 0',                          patch(sp.s, 24, '0000000000000000')),
  (19,  6, 'p = 0',                               patch(sp.s, 32, '0000000000000000')),
  (20,  6, 'p = 1',                               patch(sp.s, 32, '000000000000f03f')),
  (21,  6, 'p = NaN',                             patch(sp.s, 32, '000000000000f87f')),
  (22,  6, 'p = -1',                              patch(sp.s, 32, '000000000000f0bf')),
  (23,  6, 'sizeless, capacity 1',                patch(sp.e, 24, '01')),
  (24,  6, 'sizeless, 4-bit fingerprints',        patch(sp.e, 7, '04')),
  (25,  6, 'sizeless, bucket size 4',             patch(sp.e, 5, '04')),
  (26,  6, 'sizeless, a seed',                    patch(sp.e, 16, '01')),
  (27,  6, 'sizeless, p = 0.5',                   patch(sp.e, 32, '000000000000e03f')),
  (28,  7, 'header and half a table header',      substr(sp.s, 1, 80)),
  (29,  7, '2 tables over a one-table body',      patch(sp.s, 40, '02')),
  (30,  7, '2^32 - 1 tables over a one-table body', patch(sp.s, 40, 'ffffffff')),
  (31,  7, '3 tables over a two-table body',      patch(sp.t, 40, '03')),
  (32,  8, '0 buckets',                           patch(sp.s, 64, '0000000000000000')),
  (33,  8, '2^30 buckets: past the size limit',   patch(sp.s, 64, '0000004000000000')),
  (34,  8, '2^64 - 1 buckets',                    patch(sp.s, 64, 'ffffffffffffffff')),
  (35,  8, 'second table, 0 buckets',             patch(sp.t, 112, '0000000000000000')),
  (36,  8, 'second table, 1 bucket: fewer than the first', patch(sp.t, 112, '01')),
  (37,  8, 'second table, 3 buckets: not 2 * 2^k', patch(sp.t, 112, '03')),
  (38,  8, 'second table, 6 buckets: 2 * 3',      patch(sp.t, 112, '06')),
  (39,  9, '2^28 buckets (128 MB) over a short body', patch(sp.s, 64, '0000001000000000')),
  (40,  9, '5 buckets: 3 words needed, 2 given',  patch(sp.s, 64, '05')),
  (41,  9, 'one byte short',                      substr(sp.s, 1, 111)),
  (42, 10, 'victim bucket 2 of 2',                patch(patch(sp.s, 80, '02'), 88, '01')),
  (43, 10, 'victim fingerprint 16 (f = 4)',       patch(sp.s, 88, '10')),
  (44, 10, 'victim bucket 1 without fingerprint', patch(sp.s, 80, '01')),
  (45, 11, 'items 10 > 4 * 2 + 1',                patch(sp.s, 72, '0a')),
  (46, 11, 'items 2^64 - 1',                      patch(sp.s, 72, 'ffffffffffffffff')),
  (47, 12, 'table reserved 1',                    patch(sp.s, 92, '01')),
  (48, 12, 'second table reserved 2^31',          patch(sp.t, 143, '80')),
  (49, 13, 'bit 32 of 32 slot bits set',          patch(sp.s, 100, '01')),
  (50, 13, 'bit 63 set',                          patch(sp.s, 103, '80')),
  (51, 13, 'spare word nonzero',                  patch(sp.s, 104, '01')),
  (52, 13, 'second table, spare word nonzero',    patch(sp.t, 159, '01')),
  (53, 14, 'no family, one item',                 patch(sp.s, 12, '00000000')),
  (54,  6, 'sizeless, a family',                  patch(sp.e, 12, '01000000')),
  (55, 15, 'one byte long',                       sp.s || '\x00'::bytea),
  (56, 15, 'sizeless, one byte long',             sp.e || '\x00'::bytea),
  (57, 15, '100,000 bytes more than claimed',     sp.s || decode(repeat('00', 100000), 'hex')),
  -- valid values, some at the edge of a rule
  (58,  0, 'the specimen s',                      sp.s),
  (59,  0, 'the specimen t',                      sp.t),
  (60,  0, 'the specimen e',                      sp.e),
  (61,  0, 'victim fingerprint 15 in bucket 1',   patch(patch(sp.s, 80, '01'), 88, '0f')),
  (62,  0, 'items 9 = 4 * 2 + 1',                 patch(sp.s, 72, '09')),
  (63,  0, '32-bit fingerprints (more words needed: a length error otherwise)',
                                                  patch(sp.s, 7, '20') || decode(repeat('00', 24), 'hex'))
) v(n, rule, what, v);

-- through the bytea cast (and so any binary gate): 22P03, or 0A000 for versions
SELECT n, rule, what, try_bytea(v) FROM cases ORDER BY n;
-- through text input: 22P02, or 0A000 for versions
SELECT n, rule, try_text(translate(encode(v, 'base64'), E'\n', '')) FROM cases ORDER BY n;

-- the full report of one, with its hint
SELECT patch(s, 4, '03')::cuckoo FROM specimen;
\echo :LAST_ERROR_SQLSTATE

-- text that is not canonical base64
SELECT t, try_text(t) FROM (VALUES
  (''),
  ('QU1RQw'),        -- missing padding
  ('QU1R Qw=='),     -- whitespace
  ('QU1RQx=='),      -- nonzero pad bits
  ('QU=RQw=='),      -- padding inside
  ('*U1RQw=='),      -- outside the alphabet
  ('QU1RQw===')      -- too much padding
) v(t);

-- through binary input: COPY ... FORMAT binary calls cuckoo_recv (each COPY
-- runs twice: psql shows the SQLSTATE of a \copy only at VERBOSITY sqlstate)
CREATE TABLE crafted (b bytea);
CREATE TABLE sink (f cuckoo);
INSERT INTO crafted SELECT v FROM cases WHERE n = 17;
\copy crafted TO 'results/cuckoo_crafted.bin' WITH (FORMAT binary)
\copy sink FROM 'results/cuckoo_crafted.bin' WITH (FORMAT binary)
\set VERBOSITY sqlstate
\copy sink FROM 'results/cuckoo_crafted.bin' WITH (FORMAT binary)
\set VERBOSITY default
TRUNCATE crafted;
INSERT INTO crafted SELECT v FROM cases WHERE n = 45;
\copy crafted TO 'results/cuckoo_crafted.bin' WITH (FORMAT binary)
\copy sink FROM 'results/cuckoo_crafted.bin' WITH (FORMAT binary)
\set VERBOSITY sqlstate
\copy sink FROM 'results/cuckoo_crafted.bin' WITH (FORMAT binary)
\set VERBOSITY default
TRUNCATE crafted;
INSERT INTO crafted SELECT v FROM cases WHERE n = 57;
\copy crafted TO 'results/cuckoo_crafted.bin' WITH (FORMAT binary)
\copy sink FROM 'results/cuckoo_crafted.bin' WITH (FORMAT binary)
\set VERBOSITY sqlstate
\copy sink FROM 'results/cuckoo_crafted.bin' WITH (FORMAT binary)
\set VERBOSITY default
TRUNCATE crafted;
INSERT INTO crafted SELECT v FROM cases WHERE n = 6;
\copy crafted TO 'results/cuckoo_crafted.bin' WITH (FORMAT binary)
\copy sink FROM 'results/cuckoo_crafted.bin' WITH (FORMAT binary)
\set VERBOSITY sqlstate
\copy sink FROM 'results/cuckoo_crafted.bin' WITH (FORMAT binary)
\set VERBOSITY default
-- and a valid value passes
TRUNCATE crafted;
INSERT INTO crafted SELECT v FROM cases WHERE n = 59;
\copy crafted TO 'results/cuckoo_crafted.bin' WITH (FORMAT binary)
\copy sink FROM 'results/cuckoo_crafted.bin' WITH (FORMAT binary)
SELECT f @> 1 AS valid, (cuckoo_info(f)).items FROM sink;

-- a stored value that fails the check is corruption (XX001), whichever
-- function reads it.  To store one, bypass the input checks with bytea's own
-- input function declared as returning cuckoo.
CREATE FUNCTION unchecked_cuckoo(cstring) RETURNS cuckoo
  LANGUAGE internal IMMUTABLE STRICT AS 'byteain';
CREATE TABLE stored (n int, f cuckoo);
INSERT INTO stored SELECT n, unchecked_cuckoo(('\x' || encode(v, 'hex'))::cstring)
  FROM cases WHERE n IN (45, 53, 58);
CREATE FUNCTION try_stored(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE detail text;
BEGIN
  EXECUTE sql;
  RETURN 'accepted';
EXCEPTION WHEN others THEN
  GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ' ' || SQLERRM || coalesce(' -- ' || nullif(detail, ''), '');
END $$;
SELECT n, fn, try_stored(format('SELECT %s FROM cuckoo_malformed.stored WHERE n = %s', expr, n)) AS result
  FROM (SELECT DISTINCT n FROM stored) s,
       (VALUES (1, 'contains', 'f @> 1'),
               (2, 'contained_by', '1 <@ f'),
               (3, 'count', 'cuckoo_count(f, 1)'),
               (4, 'add', 'cuckoo_add(f, 2)'),
               (5, 'delete', 'cuckoo_delete(f, 1)'),
               (6, 'union', 'f | cuckoo_empty(5, 0.5)'),
               (7, 'info', 'cuckoo_info(f)'),
               (8, 'text output', 'f::text'),
               (9, 'bytea cast', 'f::bytea'),
               (10, 'union_agg', 'cuckoo_union_agg(f)')) e(o, fn, expr)
 ORDER BY n, o;
-- binary output (cuckoo_send) checks too
\copy (SELECT f FROM stored WHERE n = 45) TO 'results/cuckoo_stored.bin' WITH (FORMAT binary)
\set VERBOSITY sqlstate
\copy (SELECT f FROM stored WHERE n = 45) TO 'results/cuckoo_stored.bin' WITH (FORMAT binary)
\set VERBOSITY default
