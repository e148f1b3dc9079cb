-- Crafted malformed values: one per validation rule, through every gate,
-- each with its SQLSTATE.
-- Header (docs/format.md), offsets from 0, integers little-endian:
--   0 magic "AMQB" | 4 version | 5 layout | 6 hash scheme | 7 flags
--   8 family (4) | 12 hashes (2) | 14 reserved (2) | 16 seed (8)
--   24 nbits (8) | 32 capacity (8) | 40 target fpr (8, float) | 48 inserted (8)
--   56 bits

-- patch(bytes, offset, hex): overwrite bytes at a 0-based offset
CREATE FUNCTION patch(b bytea, off int, hex text) RETURNS bytea
  LANGUAGE sql IMMUTABLE STRICT
  AS $$ SELECT overlay(b PLACING decode(hex, 'hex') FROM off + 1) $$;
-- the SQLSTATE, message and detail of a cast, or 'accepted'
CREATE FUNCTION try_bytea(b bytea) RETURNS text LANGUAGE plpgsql AS $$
DECLARE detail text;
BEGIN
  PERFORM b::bloom;
  RETURN 'accepted';
EXCEPTION WHEN others THEN
  GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ' ' || SQLERRM || coalesce(' -- ' || nullif(detail, ''), '');
END $$;
CREATE FUNCTION try_text(t text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE detail text;
BEGIN
  PERFORM t::bloom;
  RETURN 'accepted';
EXCEPTION WHEN others THEN
  GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ' ' || SQLERRM || coalesce(' -- ' || nullif(detail, ''), '');
END $$;

-- the specimen: a classic filter of 64 bits (8 bytes of bits, 64 bytes in all)
CREATE TABLE specimen AS
  SELECT bloom_add(bloom_empty(10, 0.5, 'classic'), 1)::bytea AS b;
SELECT length(b) AS bytes, (bloom_info(b::bloom)).bits, b::bloom @> 1 AS valid
  FROM specimen;

-- every rule broken once
CREATE TABLE cases AS
SELECT n, rule, what, v FROM specimen s, LATERAL (VALUES
  ( 1, 1, 'no bytes at all',               '\x'::bytea),
  ( 2, 1, 'magic only',                    '\x414d5142'::bytea),
  ( 3, 1, '55 bytes, one short of a header', substr(s.b, 1, 55)),
  ( 4, 2, 'magic "XMQB"',                  patch(s.b, 0, '58')),
  ( 5, 3, 'version 2',                     patch(s.b, 4, '02')),
  ( 6, 3, 'version 0',                     patch(s.b, 4, '00')),
  ( 7, 4, 'layout 5',                      patch(s.b, 5, '05')),
  ( 8, 5, 'hash scheme 0',                 patch(s.b, 6, '00')),
  ( 9, 5, 'hash scheme 2',                 patch(s.b, 6, '02')),
  (10, 6, 'flags 1',                       patch(s.b, 7, '01')),
  (11, 6, 'reserved 1',                    patch(s.b, 14, '0100')),
  (12, 7, '0 hashes',                      patch(s.b, 12, '0000')),
  (13, 7, '65 hashes',                     patch(s.b, 12, '4100')),
  (14, 7, '0 bits',                        patch(s.b, 24, '0000000000000000')),
  (15, 7, '65 bits: not whole words',      patch(s.b, 24, '4100000000000000')),
  (16, 7, 'blocked, 64 bits: not a block', patch(s.b, 5, '01')),
  (17, 7, 'capacity 0',                    patch(s.b, 32, '0000000000000000')),
  (18, 7, 'p = 0',                         patch(s.b, 40, '0000000000000000')),
  (19, 7, 'p = 1',                         patch(s.b, 40, '000000000000f03f')),
  (20, 7, 'p = NaN',                       patch(s.b, 40, '000000000000f87f')),
  (21, 7, 'p = -1',                        patch(s.b, 40, '000000000000f0bf')),
  (22, 7, 'sizeless layout with fields set', patch(substr(s.b, 1, 56), 5, '00')),
  (23, 7, '2^60 bits over a short body',   patch(s.b, 24, '0000000000000010')),
  (24, 8, 'no family, one addition',       patch(s.b, 8, '00000000')),
  (25, 9, 'one byte short',                substr(s.b, 1, 63)),
  (26, 9, 'one byte long',                 s.b || '\x00'::bytea),
  (27, 9, '2^32 bits (512 MB) claimed, 64 bytes given', patch(s.b, 24, '0000000001000000')),
  (28, 9, '100,000 bytes more than claimed', s.b || decode(repeat('00', 100000), 'hex')),
  (29, 0, 'the specimen itself',           s.b)
) v(n, rule, what, v);

-- through the bytea cast (and so any binary gate): 22P03, or 0A000 for versions
SELECT n, rule, what, try_bytea(v) FROM cases ORDER BY n;
-- through text input: 22P02, or 0A000 for versions
SELECT n, rule, try_text(translate(encode(v, 'base64'), E'\n', '')) FROM cases ORDER BY n;

-- the full report of one, with its hint
SELECT patch(b, 4, '02')::bloom FROM specimen;

-- text that is not canonical base64
SELECT t, try_text(t) FROM (VALUES
  (''),
  ('QU1RQg'),        -- missing padding
  ('QU1R Qg=='),     -- whitespace
  ('QU1RQh=='),      -- nonzero pad bits
  ('QU=RQg=='),      -- padding inside
  ('*U1RQg=='),      -- outside the alphabet
  ('QU1RQg===')      -- too much padding
) v(t);

-- through binary input: COPY ... FORMAT binary calls bloom_recv
CREATE TABLE crafted (b bytea);
CREATE TABLE sink (f bloom);
INSERT INTO crafted SELECT v FROM cases WHERE n = 13;
\copy crafted TO 'results/bloom_crafted.bin' WITH (FORMAT binary)
\copy sink FROM 'results/bloom_crafted.bin' WITH (FORMAT binary)
TRUNCATE crafted;
INSERT INTO crafted SELECT v FROM cases WHERE n = 3;
\copy crafted TO 'results/bloom_crafted.bin' WITH (FORMAT binary)
\copy sink FROM 'results/bloom_crafted.bin' WITH (FORMAT binary)
TRUNCATE crafted;
INSERT INTO crafted SELECT v FROM cases WHERE n = 28;
\copy crafted TO 'results/bloom_crafted.bin' WITH (FORMAT binary)
\copy sink FROM 'results/bloom_crafted.bin' WITH (FORMAT binary)
-- and a valid value passes
TRUNCATE crafted;
INSERT INTO crafted SELECT v FROM cases WHERE n = 29;
\copy crafted TO 'results/bloom_crafted.bin' WITH (FORMAT binary)
\copy sink FROM 'results/bloom_crafted.bin' WITH (FORMAT binary)
SELECT f @> 1 AS valid FROM sink;
