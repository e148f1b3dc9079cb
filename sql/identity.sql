-- What a filter's values are (hashing.c): a probe with values hashed another
-- way is an error, never a silent "no"; types whose hashes a restore would
-- change are refused; enums hash by label.  The dump/restore and schema-move
-- halves of these checks are in test/restore.sh.
CREATE SCHEMA identity_test;
SET search_path = identity_test, public;

-- FNV-1a of an identity text, as docs/format.md defines the family id
CREATE FUNCTION fnv1a(s text) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  h bigint := 2166136261;
  b int;
BEGIN
  FOR i IN 1 .. octet_length(s) LOOP
    b := get_byte(convert_to(s, 'UTF8'), i - 1);
    h := ((h # b) * 16777619) % 4294967296;
  END LOOP;
  RETURN CASE WHEN h = 0 THEN 1 ELSE h END;
END $$;
-- the family id a bloom filter records (bytes 8..11, little-endian)
CREATE FUNCTION bloom_family(f bloom) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT get_byte(f::bytea, 8)::bigint + (get_byte(f::bytea, 9)::bigint << 8)
       + (get_byte(f::bytea, 10)::bigint << 16) + (get_byte(f::bytea, 11)::bigint << 24) $$;
-- the same filter bound to another family id
CREATE FUNCTION with_family(f bloom, fam bigint) RETURNS bloom LANGUAGE sql IMMUTABLE AS $$
  SELECT overlay(f::bytea PLACING decode(lpad(to_hex(fam & 255), 2, '0') || lpad(to_hex((fam >> 8) & 255), 2, '0')
                                         || lpad(to_hex((fam >> 16) & 255), 2, '0') || lpad(to_hex(fam >> 24), 2, '0'), 'hex')
                 FROM 9)::bloom $$;

-- an error's message, detail and hint, with the collation versions an ICU
-- library puts into identities masked (they differ between machines)
CREATE FUNCTION probe_error(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  state text;
  msg text;
  detail text;
  hint text;
BEGIN
  EXECUTE query;
  RETURN NEXT 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
                          detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
  RETURN NEXT state || ': ' || msg;
  RETURN NEXT 'DETAIL: ' || regexp_replace(detail, '@[0-9.]+', '@<version>', 'g');
  RETURN NEXT 'HINT: ' || hint;
END $$;

-- arrays share one operator family; their element types tell them apart
SELECT bloom_add(bloom_empty(10, 0.01), ARRAY[1]) @> ARRAY[1] AS same_element_type;
SELECT bloom_add(bloom_empty(10, 0.01), ARRAY[1]) @> ARRAY[1::bigint] AS int4_array_vs_int8_array;
SELECT bloom_add(bloom_empty(10, 0.01), ARRAY[1]) @> ARRAY['1'::text];
SELECT cuckoo_add(cuckoo_empty(10, 0.01), ARRAY[1]) @> ARRAY['1'::text];
-- ranges and composites likewise
SELECT bloom_add(bloom_empty(10, 0.01), int4range(1, 5)) @> int4range(1, 5) AS same_range;
SELECT bloom_add(bloom_empty(10, 0.01), int4range(1, 5)) @> numrange(1, 5);
CREATE TYPE kv AS (a int, b text);
CREATE TYPE kv2 AS (a text, b text);
SELECT bloom_agg(p, 10, 0.01) @> (1, 'x')::kv AS named_composite
  FROM (VALUES ((1, 'x')::kv)) v(p);
SELECT bloom_agg(p, 10, 0.01) @> ('1', 'x')::kv2 FROM (VALUES ((1, 'x')::kv)) v(p);

-- the identities: pg_catalog scalars keep the id 0.1 recorded
SELECT bloom_family(bloom_add(bloom_empty(10, 0.01), 1)) = fnv1a('pg_catalog.integer_ops') AS int_id_unchanged,
       bloom_family(bloom_add(bloom_empty(10, 0.01), ARRAY[1]))
         = fnv1a('pg_catalog.array_ops[pg_catalog.integer_ops]') AS array_id;

-- a nondeterministic collation is part of the identity: probing under
-- another collation is an error, not a silent "no"
CREATE COLLATION ident_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SELECT bloom_agg(x COLLATE ident_ci, 10, 0.01) @> ('APPLE'::text COLLATE ident_ci) AS ci_member
  FROM (VALUES ('apple'::text)) v(x);
SELECT probe_error($$SELECT bloom_agg(x COLLATE ident_ci, 10, 0.01) @> 'APPLE'::text
                      FROM (VALUES ('apple'::text)) v(x)$$);
SELECT probe_error($$SELECT cuckoo_agg(x COLLATE ident_ci, 10, 0.01) @> 'APPLE'::text
                      FROM (VALUES ('apple'::text)) v(x)$$);
-- the other way round, the hint asks for a deterministic collation
SELECT probe_error($$SELECT bloom_agg(x, 10, 0.01) @> (ARRAY['APPLE'::text] COLLATE ident_ci)
                      FROM (VALUES (ARRAY['apple'::text])) v(x)$$);
-- deterministic collations hash bytes: any of them may probe
SELECT bloom_agg(x COLLATE "C", 10, 0.01) @> 'apple'::text AS deterministic_ok
  FROM (VALUES ('apple'::text)) v(x);

-- enums hash by label, so a filter answers the same after a restore
-- renumbers the labels' OIDs (test/restore.sh does the restore)
CREATE TYPE mood AS ENUM ('sad', 'ok');
SELECT bloom_agg(m, 10, 0.01) @> 'ok'::mood AS enum_member,
       cuckoo_agg(m, 10, 0.01) @> 'ok'::mood AS enum_member_cuckoo,
       bloom_family(bloom_agg(m, 10, 0.01)) = fnv1a('enum mood') AS enum_id
  FROM unnest(enum_range(NULL::mood)) m;
CREATE DOMAIN mood_d AS mood;
SELECT bloom_agg(m::mood_d, 10, 0.01) @> 'sad'::mood AS domain_over_enum
  FROM unnest(enum_range(NULL::mood)) m;
-- a filter 0.1 wrote over an enum hashed the labels' OIDs and recorded the
-- id of "pg_catalog.enum_ops": it is probed as 0.1 probed it.  (0.1 hashed
-- an enum exactly as an int4 of its OID, which builds such a filter here.)
CREATE TABLE legacy AS
SELECT with_family(bloom_agg(oid::text::int, 10, 0.01), fnv1a('pg_catalog.enum_ops')) AS f
  FROM pg_enum WHERE enumtypid = 'mood'::regtype AND enumlabel = 'ok';
SELECT f @> 'ok'::mood AS legacy_member, f @> 'sad'::mood AS legacy_nonmember,
       bloom_add(f, 'sad'::mood) @> 'sad'::mood AS legacy_add
  FROM legacy;

-- a probe of the wrong type names what the filter holds, and the hint a
-- cast to it: '42' where that is a literal of the type, value elsewhere
SELECT bloom_agg(m, 10, 0.01) @> 'ok'::text FROM unnest(enum_range(NULL::mood)) m;
SELECT cuckoo_agg(d, 10, 0.01) @> '2024-01-01'::text
  FROM (VALUES ('2024-01-01'::date)) v(d);
SELECT bloom_agg(x, 10, 0.01) @> 1.5::float8 FROM (VALUES (1.5::real)) v(x);
-- what cannot be named is not guessed: every enum had one id in 0.1
SELECT f @> 1 FROM legacy;

-- bloom_info and cuckoo_info say what a filter's values are (NULL before the
-- first value); a composite type's id is not looked up
SELECT (SELECT element FROM bloom_info(bloom_add(bloom_empty(10, 0.01), 1::bigint))) AS int8,
       (SELECT element FROM bloom_info(bloom_add(bloom_empty(10, 0.01), ARRAY['a']))) AS text_array,
       (SELECT element FROM cuckoo_info(cuckoo_add(cuckoo_empty(10, 0.01), 'ok'::mood))) AS enum,
       (SELECT element FROM bloom_info(bloom_empty(10, 0.01))) AS nothing_yet;
SELECT (SELECT element FROM bloom_info(bloom_agg(x COLLATE ident_ci, 10, 0.01)))
         LIKE 'pg_catalog.text_ops collate i:und-u-ks-level2@%' AS nondeterministic
  FROM (VALUES ('apple'::text)) v(x);
SELECT element FROM legacy, LATERAL bloom_info(f);
SELECT element FROM bloom_info(bloom_add(bloom_empty(10, 0.01), (1, 'x')::kv));

-- types whose hash a restore would change are refused, with the reason
SELECT bloom_agg(m, 10, 0.01) FROM (VALUES (ARRAY['ok'::mood])) v(m);
SELECT cuckoo_agg(r, 10, 0.01) FROM (VALUES ('pg_class'::regclass)) v(r);
CREATE TYPE mood_kv AS (m mood, n int);
SELECT bloom_add(bloom_empty(10, 0.01), ('ok', 1)::mood_kv);
SELECT bloom_add(bloom_empty(10, 0.01), 'pg_catalog'::regnamespace);

-- an empty filter answers "no" to them without hashing
SELECT bloom_empty(10, 0.01) @> ARRAY['ok'::mood] AS empty_filter;

-- Identities are kept per backend, and forgotten when the catalogs change:
-- after a rename in this session, a probe names the type's new identity
-- (an enum's identity is its type name), not the one computed before.
CREATE TYPE hue AS ENUM ('red', 'green');
CREATE TABLE hue_filter AS SELECT bloom_agg(h, 10, 0.01) AS f
  FROM unnest(enum_range(NULL::hue)) h;
SELECT f @> 'red'::hue AS before_rename FROM hue_filter;
ALTER TYPE hue RENAME TO shade;
\set VERBOSITY sqlstate
SELECT f @> 'red'::shade FROM hue_filter;
\set VERBOSITY default
SELECT bloom_agg(h, 10, 0.01) @> 'green'::shade AS fresh_filter
  FROM unnest(enum_range(NULL::shade)) h;

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA identity_test CASCADE;
RESET client_min_messages;

