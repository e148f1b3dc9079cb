-- Text, binary and bytea round trips, storage, and the detoast cache.

CREATE TABLE io (id int, f bloom);
INSERT INTO io
  SELECT 1, bloom_agg(g, 1000, 0.01) FROM generate_series(1, 1000) g
  UNION ALL SELECT 2, bloom_agg(g, 1000, 0.01, 'classic') FROM generate_series(1, 1000) g
  UNION ALL SELECT 3, bloom_empty(10, 0.5)
  UNION ALL SELECT 4, bloom_agg(g, 10, 0.5) FROM generate_series(1, 0) g
  UNION ALL SELECT 5, bloom_agg(t, 100, 0.001) FROM (VALUES ('a'::text), ('b')) v(t);

-- the text form is canonical base64 of the bytes and round-trips exactly
SELECT id, f::text = translate(encode(f::bytea, 'base64'), E'\n', '') AS is_base64,
       f::text::bloom::bytea = f::bytea AS text_round_trip
  FROM io ORDER BY id;
-- the sizeless empty filter has one short text form
SELECT f::text FROM io WHERE id = 4;
-- bytes begin with the magic and version (docs/format.md)
SELECT id, substr(f::bytea, 1, 8) AS header_start FROM io ORDER BY id;
-- bytea -> bloom -> bytea is the identity
SELECT id, f::bytea::bloom::bytea = f::bytea AS bytea_round_trip FROM io ORDER BY id;

-- binary COPY out and back in: byte-identical, answers the same
\copy io TO 'results/bloom_io.bin' WITH (FORMAT binary)
CREATE TABLE io_bin (LIKE io);
\copy io_bin FROM 'results/bloom_io.bin' WITH (FORMAT binary)
SELECT count(*) AS rows, bool_and(a.f::bytea = b.f::bytea) AS identical
  FROM io a JOIN io_bin b USING (id);
SELECT b.f @> 500 AS found FROM io_bin b WHERE id = 1;

-- text COPY out and back in
\copy io TO 'results/bloom_io.txt'
CREATE TABLE io_txt (LIKE io);
\copy io_txt FROM 'results/bloom_io.txt'
SELECT count(*) AS rows, bool_and(a.f::bytea = b.f::bytea) AS identical
  FROM io a JOIN io_txt b USING (id);

-- the column is stored uncompressed
SELECT attstorage FROM pg_attribute WHERE attrelid = 'io'::regclass AND attname = 'f';

-- a filter large enough to be TOASTed out of line, probed per row through an
-- InitPlan: the cache keyed by the TOAST pointer must give the same answers
CREATE TABLE big_filter AS
  SELECT 1 AS id, bloom_agg(g, 200000, 0.01) AS f FROM generate_series(1, 200000) g;
SELECT pg_column_size(f) > 100000 AS toasted_size FROM big_filter;
SELECT count(*) AS found FROM generate_series(1, 200000) g
 WHERE (SELECT f FROM big_filter WHERE id = 1) @> g;
-- two different TOASTed filters in one query: each row probes its own
INSERT INTO big_filter
  SELECT 2, bloom_agg(g, 200000, 0.01) FROM generate_series(300001, 500000) g;
SELECT id, count(*) FILTER (WHERE f @> k) AS hits
  FROM big_filter, (VALUES (1), (400000)) v(k)
 GROUP BY id ORDER BY id;
SELECT (bloom_info(f)).inserted FROM big_filter ORDER BY id;
