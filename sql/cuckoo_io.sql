-- Text, binary and bytea round trips, storage, and the detoast cache.

CREATE SCHEMA cuckoo_io;
SET search_path = cuckoo_io, public;

CREATE TABLE io (id int, f cuckoo);
INSERT INTO io
  SELECT 1, cuckoo_agg(g, 1000, 0.01) FROM generate_series(1, 1000) g
  UNION ALL SELECT 2, cuckoo_empty(10, 0.5)
  UNION ALL SELECT 3, cuckoo_agg(g, 10, 0.5) FROM generate_series(1, 0) g
  UNION ALL SELECT 4, cuckoo_agg(t, 100, 0.001) FROM (VALUES ('a'::text), ('b')) v(t)
  -- grown: several tables
  UNION ALL SELECT 5, cuckoo_agg(g, 10, 0.01) FROM generate_series(1, 500) g
  -- one bucket, five copies: the fifth is the table's victim
  UNION ALL SELECT 6, cuckoo_agg(7, 1, 0.5) FROM generate_series(1, 5) g
  -- 32-bit fingerprints
  UNION ALL SELECT 7, cuckoo_agg(g, 100, 2e-9) FROM generate_series(1, 100) g;
SELECT id, tables, items, fingerprint_bits FROM io, cuckoo_info(f) ORDER BY id;

-- the text form is canonical base64 of the bytes and round-trips exactly
SELECT id, f::text = translate(encode(f::bytea, 'base64'), E'\n', '') AS is_base64,
       f::text::cuckoo::bytea = f::bytea AS text_round_trip
  FROM io ORDER BY id;
-- the sizeless empty filter has one short text form
SELECT f::text FROM io WHERE id = 3;
-- bytes begin with the magic, version, bucket size, hash scheme and
-- fingerprint width (docs/format.md); version 2 once copies of a value are
-- counted (row 6)
SELECT id, substr(f::bytea, 1, 8) AS header_start FROM io ORDER BY id;
-- bytea -> cuckoo -> bytea is the identity
SELECT id, f::bytea::cuckoo::bytea = f::bytea AS bytea_round_trip FROM io ORDER BY id;

-- binary COPY out and back in: byte-identical, answers the same
\copy io TO 'results/cuckoo_io.bin' WITH (FORMAT binary)
CREATE TABLE io_bin (LIKE io);
\copy io_bin FROM 'results/cuckoo_io.bin' WITH (FORMAT binary)
SELECT count(*) AS rows, bool_and(a.f::bytea = b.f::bytea) AS identical
  FROM io a JOIN io_bin b USING (id);
SELECT b.f @> 500 AS found FROM io_bin b WHERE id = 1;
SELECT cuckoo_count(b.f, 7) AS copies FROM io_bin b WHERE id = 6;

-- text COPY out and back in
\copy io TO 'results/cuckoo_io.txt'
CREATE TABLE io_txt (LIKE io);
\copy io_txt FROM 'results/cuckoo_io.txt'
SELECT count(*) AS rows, bool_and(a.f::bytea = b.f::bytea) AS identical
  FROM io a JOIN io_txt b USING (id);
SELECT count(*) AS false_negatives FROM io_txt b, generate_series(1, 500) g
 WHERE id = 5 AND NOT b.f @> g;

-- the column is stored uncompressed
SELECT attstorage FROM pg_attribute WHERE attrelid = 'io'::regclass AND attname = 'f';

-- a filter large enough to be TOASTed out of line, probed per row through an
-- InitPlan: the cache keyed by the TOAST pointer must give the same answers
CREATE TABLE big_filter AS
  SELECT 1 AS id, cuckoo_agg(g, 200000, 0.01) AS f FROM generate_series(1, 200000) g;
SELECT pg_column_size(f) > 100000 AS toasted_size FROM big_filter;
SELECT count(*) AS found FROM generate_series(1, 200000) g
 WHERE (SELECT f FROM big_filter WHERE id = 1) @> g;
-- two different TOASTed filters in one query: each row probes its own
INSERT INTO big_filter
  SELECT 2, cuckoo_agg(g, 200000, 0.01) FROM generate_series(300001, 500000) g;
SELECT id, count(*) FILTER (WHERE f @> k) AS hits, sum(cuckoo_count(f, k)) AS copies
  FROM big_filter, (VALUES (1), (400000)) v(k)
 GROUP BY id ORDER BY id;
-- updates of a TOASTed filter: add and delete read it, the stored row changes
UPDATE big_filter SET f = cuckoo_add(cuckoo_delete(f, 1), 600000) WHERE id = 1;
SELECT (cuckoo_info(f)).items, f @> 1 AS has1, f @> 2 AS has2, f @> 600000 AS has600000
  FROM big_filter WHERE id = 1;
SELECT (cuckoo_info(f)).items AS other_unchanged, f @> 400000 AS has400000
  FROM big_filter WHERE id = 2;
