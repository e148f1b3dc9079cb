-- Collations and what a filter's values are (hashing.c).  Under a
-- nondeterministic collation a value's hash depends on the collation; under
-- a deterministic one text hashes as its bytes.  A filter answers only
-- values hashed the way its own were: anything else, a probe, an addition or
-- a deletion, is an error, never a "no" for a value that was added.
CREATE SCHEMA coll_test;
SET search_path = coll_test, public;

-- case-insensitive; and insensitive to case and accents
CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE COLLATION ai (provider = icu, locale = 'und-u-ks-level1', deterministic = false);

-- the result of a query as text, or its SQLSTATE
CREATE FUNCTION outcome(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  result text;
BEGIN
  EXECUTE query INTO result;
  RETURN result;
EXCEPTION WHEN OTHERS THEN
  RETURN 'ERROR ' || SQLSTATE;
END $$;

-- an error's message, detail and hint, with the collation versions an ICU
-- library puts into identities masked (they differ between machines)
CREATE FUNCTION probe_error(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  state text;
  msg text;
  detail text;
  hint text;
  result text;
BEGIN
  EXECUTE query INTO result;
  RETURN NEXT 'no error: ' || coalesce(result, 'NULL');
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
                          detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
  RETURN NEXT state || ': ' || msg;
  RETURN NEXT 'DETAIL: ' || regexp_replace(detail, '@[0-9.]+', '@<version>', 'g');
  RETURN NEXT 'HINT: ' || hint;
END $$;

-- FNV-1a of an identity text, as docs/format.md defines the family id
CREATE FUNCTION fnv1a(s text) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  h bigint := 2166136261;
BEGIN
  FOR i IN 1 .. octet_length(s) LOOP
    h := ((h # get_byte(convert_to(s, 'UTF8'), i - 1)) * 16777619) % 4294967296;
  END LOOP;
  RETURN CASE WHEN h = 0 THEN 1 ELSE h END;
END $$;
-- the same filter bound to another family id, as 0.1 wrote it (a bloom
-- filter's id is at byte 8, a cuckoo filter's at byte 12)
CREATE FUNCTION with_family(f bytea, fam bigint, at int) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
  SELECT overlay(f PLACING decode(lpad(to_hex(fam & 255), 2, '0') || lpad(to_hex((fam >> 8) & 255), 2, '0')
                                  || lpad(to_hex((fam >> 16) & 255), 2, '0') || lpad(to_hex(fam >> 24), 2, '0'), 'hex')
                 FROM at + 1) $$;

-- 'apple' is added under one collation and probed under another, by every
-- function that hashes a value into or against a filter.  Each cell is the
-- answer for 'apple' itself: true where the filter's values and the probe
-- hash alike (any two deterministic collations, or the same collation),
-- an error everywhere else.  Never false.
CREATE TABLE ops (op text, query text);
INSERT INTO ops VALUES
  ('bloom @>',        'SELECT %1$s @> %2$s FROM (SELECT bloom_agg(x COLLATE %3$s, 10, 0.01) AS f FROM w) s'),
  ('bloom <@',        'SELECT %2$s <@ %1$s FROM (SELECT bloom_agg(x COLLATE %3$s, 10, 0.01) AS f FROM w) s'),
  ('bloom_contains',  'SELECT bloom_contains(%1$s, %2$s) FROM (SELECT bloom_agg(x COLLATE %3$s, 10, 0.01) AS f FROM w) s'),
  ('bloom_count',     'SELECT bloom_count(%1$s, %2$s) FROM (SELECT bloom_agg(x COLLATE %3$s, 10, 0.01, ''counting'') AS f FROM w) s'),
  ('bloom_add',       'SELECT bloom_count(bloom_add(%1$s, %2$s), %2$s) FROM (SELECT bloom_agg(x COLLATE %3$s, 10, 0.01, ''counting'') AS f FROM w) s'),
  ('bloom_delete',    'SELECT bloom_count(bloom_delete(%1$s, %2$s), %2$s) FROM (SELECT bloom_agg(x COLLATE %3$s, 10, 0.01, ''counting'') AS f FROM w) s'),
  ('cuckoo @>',       'SELECT %1$s @> %2$s FROM (SELECT cuckoo_agg(x COLLATE %3$s, 10, 0.01) AS f FROM w) s'),
  ('cuckoo <@',       'SELECT %2$s <@ %1$s FROM (SELECT cuckoo_agg(x COLLATE %3$s, 10, 0.01) AS f FROM w) s'),
  ('cuckoo_contains', 'SELECT cuckoo_contains(%1$s, %2$s) FROM (SELECT cuckoo_agg(x COLLATE %3$s, 10, 0.01) AS f FROM w) s'),
  ('cuckoo_count',    'SELECT cuckoo_count(%1$s, %2$s) FROM (SELECT cuckoo_agg(x COLLATE %3$s, 10, 0.01) AS f FROM w) s'),
  ('cuckoo_add',      'SELECT cuckoo_count(cuckoo_add(%1$s, %2$s), %2$s) FROM (SELECT cuckoo_agg(x COLLATE %3$s, 10, 0.01) AS f FROM w) s'),
  ('cuckoo_delete',   'SELECT cuckoo_count(cuckoo_delete(%1$s, %2$s), %2$s) FROM (SELECT cuckoo_agg(x COLLATE %3$s, 10, 0.01) AS f FROM w) s');
CREATE TABLE w (x text);
INSERT INTO w VALUES ('apple');
SELECT op, built,
       outcome(format(query, 'f', '(''apple''::text COLLATE "default")', built)) AS "default",
       outcome(format(query, 'f', '(''apple''::text COLLATE "C")', built)) AS "C",
       outcome(format(query, 'f', '(''apple''::text COLLATE ci)', built)) AS ci,
       outcome(format(query, 'f', '(''apple''::text COLLATE ai)', built)) AS ai
  FROM ops, (VALUES (1, '"default"'), (2, '"C"'), (3, 'ci'), (4, 'ai')) b(n, built)
 ORDER BY op, n;

-- under the filter's own nondeterministic collation, values equal under it
-- are members (the addition was 'apple')
SELECT op,
       outcome(format(query, 'f', '(''APPLE''::text COLLATE ci)', 'ci')) AS "APPLE under ci",
       outcome(format(query, 'f', '(''APPLE''::text COLLATE ai)', 'ai')) AS "APPLE under ai"
  FROM ops ORDER BY op;

-- a filter of a deterministic collation cannot answer for values equal
-- under a nondeterministic one: the error says so, and how to probe
SELECT probe_error($$SELECT bloom_agg(x, 10, 0.01) @> ('APPLE'::text COLLATE ci) FROM w$$);
SELECT probe_error($$SELECT cuckoo_add(cuckoo_agg(x, 10, 0.01), 'Cherry'::text COLLATE ci) FROM w$$);
-- containers of a collatable type likewise
SELECT probe_error($$SELECT bloom_agg(ARRAY[x], 10, 0.01) @> (ARRAY['APPLE'::text] COLLATE ci) FROM w$$);
-- the other ways round, unchanged: each names the filter's collation
SELECT probe_error($$SELECT bloom_agg(x COLLATE ci, 10, 0.01) @> 'apple'::text FROM w$$);
SELECT probe_error($$SELECT bloom_agg(x COLLATE ci, 10, 0.01) @> ('apple'::text COLLATE ai) FROM w$$);
-- filters of two collations are not merged
SELECT probe_error($$SELECT bloom_agg(x, 10, 0.01) | bloom_agg(x COLLATE ci, 10, 0.01) FROM w$$);

-- Filters written by 0.1 recorded no collation: a text filter's id is the
-- one a filter built under a deterministic collation carries now, whatever
-- collation 0.1 built it under, and an array filter's names no element type
-- at all.  They are taken to be deterministic ones: probed under a
-- deterministic collation as before, refused under a nondeterministic one.
-- (0.1 hashed such a probe under the probe's collation: "no" for 'apple' in
-- a filter built under the default collation.  text_ci, which 0.1 built
-- under ci, is refused too, and must be built again.)
CREATE TABLE legacy AS
SELECT with_family(bloom_agg(x, 10, 0.01)::bytea, fnv1a('pg_catalog.text_ops'), 8)::bloom AS text_det,
       with_family(bloom_agg(x COLLATE ci, 10, 0.01)::bytea, fnv1a('pg_catalog.text_ops'), 8)::bloom AS text_ci,
       with_family(bloom_agg(ARRAY[x], 10, 0.01)::bytea, fnv1a('pg_catalog.array_ops'), 8)::bloom AS array_det,
       with_family(cuckoo_agg(x, 10, 0.01)::bytea, fnv1a('pg_catalog.text_ops'), 12)::cuckoo AS cuckoo_det
  FROM w;
SELECT text_det @> 'apple'::text AS text_member, text_det @> ('apple'::text COLLATE "C") AS text_member_c,
       array_det @> ARRAY['apple'::text] AS array_member, cuckoo_det @> 'apple'::text AS cuckoo_member,
       bloom_add(text_det, 'cherry'::text) @> 'cherry'::text AS text_add
  FROM legacy;
SELECT outcome('SELECT text_det @> (''apple''::text COLLATE ci) FROM legacy') AS text_det,
       outcome('SELECT text_ci @> (''apple''::text COLLATE ci) FROM legacy') AS text_ci,
       outcome('SELECT array_det @> (ARRAY[''apple''::text] COLLATE ci) FROM legacy') AS array_det,
       outcome('SELECT cuckoo_det @> (''apple''::text COLLATE ci) FROM legacy') AS cuckoo_det,
       outcome('SELECT bloom_add(text_det, ''cherry''::text COLLATE ci) IS NOT NULL FROM legacy') AS text_add;
SELECT probe_error($$SELECT array_det @> (ARRAY['apple'::text] COLLATE ci) FROM legacy$$);

--
-- The filter index hashes under its column's collation.  A comparison under
-- another collation does not use it, and gets every row a sequential scan
-- gets; bloom_index_contains under a nondeterministic collation other than
-- the column's is an error.
--
CREATE TABLE words (w text);               -- the database's default collation
CREATE TABLE ci_words (w text COLLATE ci);
INSERT INTO words VALUES ('apple'), ('Banana');
INSERT INTO ci_words VALUES ('apple'), ('Banana');
CREATE INDEX words_w ON words USING amqfilter (w);
CREATE INDEX ci_words_w ON ci_words USING amqfilter (w);
ANALYZE words, ci_words;
CREATE TABLE queries (q text);
INSERT INTO queries VALUES
  ('SELECT string_agg(w, '','' ORDER BY w) FROM words WHERE w = ''apple'''),
  ('SELECT string_agg(w, '','' ORDER BY w) FROM words WHERE w = ''APPLE'' COLLATE ci'),
  ('SELECT string_agg(w, '','' ORDER BY w) FROM words WHERE w = ANY (ARRAY[''APPLE'', ''banana''] COLLATE ci)'),
  ('SELECT string_agg(w, '','' ORDER BY w) FROM ci_words WHERE w = ''APPLE'''),
  ('SELECT string_agg(w, '','' ORDER BY w) FROM ci_words WHERE w = ''APPLE'' COLLATE ai'),
  ('SELECT string_agg(w, '','' ORDER BY w) FROM ci_words WHERE w = ''APPLE'' COLLATE "C"');
-- the same rows with the index preferred as with a sequential scan only
CREATE FUNCTION rows_with(q text, seqscan boolean) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  result text;
BEGIN
  PERFORM set_config('enable_seqscan', CASE WHEN seqscan THEN 'on' ELSE 'off' END, true);
  PERFORM set_config('enable_bitmapscan', CASE WHEN seqscan THEN 'off' ELSE 'on' END, true);
  EXECUTE q INTO result;
  RETURN result;
END $$;
CREATE FUNCTION uses_index(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  line text;
  found boolean := false;
BEGIN
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'on', true);
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    found := found OR line LIKE '%Bitmap Index Scan%';
  END LOOP;
  RETURN found;
END $$;
SELECT substring(q FROM 'FROM (.*)$') AS query, uses_index(q),
       rows_with(q, false) AS index_preferred, rows_with(q, true) AS seqscan,
       rows_with(q, false) IS NOT DISTINCT FROM rows_with(q, true) AS same
  FROM queries;

SELECT bloom_index_contains('words_w', 'apple'::text) AS same_collation,
       bloom_index_contains('words_w', 'apple'::text COLLATE "C") AS other_deterministic,
       bloom_index_contains('ci_words_w', 'APPLE'::text COLLATE ci) AS ci_under_ci,
       bloom_index_contains('ci_words_w', 'APPLE'::text) AS ci_column_default_value;
SELECT probe_error($$SELECT bloom_index_contains('words_w', 'APPLE'::text COLLATE ci)$$);
SELECT probe_error($$SELECT bloom_index_contains('ci_words_w', 'APPLE'::text COLLATE ai)$$);

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA coll_test CASCADE;
RESET client_min_messages;
