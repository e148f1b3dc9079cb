-- Membership agrees with SQL equality: the type's default hash opclass, the
-- same hashing as bloom.  Each error is followed by its SQLSTATE.

CREATE SCHEMA cuckoo_hashing;
SET search_path = cuckoo_hashing, public;

-- integers of every width are the same member (one operator family), for
-- every probe: contains, <@, count and delete
SELECT cuckoo_agg(x, 100, 0.01) @> 5::int2 AS int2,
       cuckoo_agg(x, 100, 0.01) @> 5::int4 AS int4,
       cuckoo_agg(x, 100, 0.01) @> 5::int8 AS int8,
       5::int2 <@ cuckoo_agg(x, 100, 0.01) AS int2_contained,
       cuckoo_agg(x, 100, 0.01) @> (-5)::int2 AS neg_absent
  FROM (VALUES (5::int8), (7::int8)) v(x);
SELECT cuckoo_agg(x, 100, 0.01) @> (-5)::int8 AS int8,
       cuckoo_agg(x, 100, 0.01) @> (-5)::int4 AS int4
  FROM (VALUES ((-5)::int2)) v(x);
SELECT cuckoo_count(f, 5::int2) AS count_int2, cuckoo_count(f, 5::int4) AS count_int4,
       cuckoo_delete(f, 5::int2) @> 5::int8 AS one_copy_left,
       cuckoo_delete(cuckoo_delete(f, 5::int2), 5::int4) @> 5::int8 AS none_left
  FROM (SELECT cuckoo_agg(x, 100, 0.01) AS f FROM (VALUES (5::int8), (5::int8), (7::int8)) v(x)) s;
-- filters of equal values of any width are the same bytes
SELECT cuckoo_agg(g::int2, 1000, 0.01)::bytea = cuckoo_agg(g::int4, 1000, 0.01)::bytea AS int2_int4,
       cuckoo_agg(g::int4, 1000, 0.01)::bytea = cuckoo_agg(g::int8, 1000, 0.01)::bytea AS int4_int8
  FROM generate_series(-500, 500) g;
-- int8 values beyond the int4 range get a full 64-bit hash: PostgreSQL's own
-- int8 hash folds 4294967291 onto -5 and 4294967297 onto 0, a filter does not
SELECT cuckoo_agg(x, 100, 0.01) @> 4294967291::int8 AS folded_absent,
       cuckoo_agg(x, 100, 0.01) @> 4294967297::int8 AS folded_absent2,
       hashint8extended(4294967291, 0) = hashint4extended(-5, 0) AS pg_hash_folds
  FROM (VALUES (-5), (0)) v(x);
SELECT cuckoo_agg(x, 100, 0.01) @> 9007199254740993::int8 AS big,
       cuckoo_agg(x, 100, 0.01) @> (-9007199254740993)::int8 AS negative_big,
       cuckoo_agg(x, 100, 0.01) @> 9007199254740992::int8 AS neighbour_absent
  FROM (VALUES (9007199254740993::int8), (-9007199254740993)) v(x);
-- ... and so do domains over int8, so both sides of a join agree
CREATE DOMAIN order_id AS int8;
SELECT cuckoo_agg(x, 100, 0.01) @> 9007199254740993::int8 AS domain_to_base,
       cuckoo_agg(x::int8, 100, 0.01) @> 9007199254740993::order_id AS base_to_domain
  FROM (VALUES (9007199254740993::order_id)) v(x);

-- numeric equality ignores display scale
SELECT cuckoo_agg(x, 100, 0.01) @> 1.00::numeric AS scale,
       cuckoo_agg(x, 100, 0.01) @> 1.000000::numeric AS scale6,
       cuckoo_count(cuckoo_agg(x, 100, 0.01), 1::numeric) AS count,
       cuckoo_delete(cuckoo_agg(x, 100, 0.01), 1.000::numeric) @> 1.0::numeric AS deleted_by_other_scale
  FROM (VALUES (1.0::numeric)) v(x);
-- float4 and float8 share a family; -0 equals 0
SELECT cuckoo_agg(x, 100, 0.01) @> 0.5::float4 AS float4,
       cuckoo_agg(x, 100, 0.01) @> '-0'::float8 AS negzero
  FROM (VALUES (0.5::float8), (0::float8)) v(x);

-- text, under a deterministic collation, is its bytes; a probe needs the same type family
SELECT cuckoo_agg(x, 100, 0.01) @> 'apple'::text AS apple,
       cuckoo_agg(x, 100, 0.01) @> 'apple'::varchar AS varchar,
       cuckoo_agg(x, 100, 0.01) @> 'Apple'::text AS case_differs
  FROM (VALUES ('apple'::text)) v(x);

-- other hashable types: uuid, date, timestamptz, bytea, arrays, composites, booleans
SELECT cuckoo_agg(x, 10, 0.01) @> 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS uuid
  FROM (VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid)) v(x);
SELECT cuckoo_agg(x, 10, 0.01) @> '2024-02-29'::date AS date
  FROM (VALUES ('2024-02-29'::date)) v(x);
SELECT cuckoo_agg(x, 10, 0.01) @> '2024-01-01 12:00:00+02'::timestamptz AS same_instant
  FROM (VALUES ('2024-01-01 10:00:00+00'::timestamptz)) v(x);
SELECT cuckoo_agg(x, 10, 0.01) @> '\xdeadbeef'::bytea AS bytea
  FROM (VALUES ('\xdeadbeef'::bytea)) v(x);
SELECT cuckoo_agg(x, 10, 0.01) @> ARRAY[1, 2, 3] AS arr,
       cuckoo_agg(x, 10, 0.01) @> ARRAY[3, 2, 1] AS arr_order
  FROM (VALUES (ARRAY[1, 2, 3])) v(x);
CREATE TYPE pair AS (a int, b text);
SELECT cuckoo_agg(x, 10, 0.01) @> ROW(1, 'a')::pair AS rec,
       cuckoo_agg(x, 10, 0.01) @> ROW(1, 'b')::pair AS rec_absent
  FROM (VALUES (ROW(1, 'a')::pair)) v(x);
SELECT cuckoo_agg(x, 10, 0.01) @> true AS t, cuckoo_agg(x, 10, 0.01) @> false AS f
  FROM (VALUES (true)) v(x);

-- a domain uses its base type
CREATE DOMAIN positive_int AS int CHECK (VALUE > 0);
SELECT cuckoo_agg(x, 10, 0.01) @> 3 AS domain_member
  FROM (VALUES (3::positive_int)) v(x);

-- a case-insensitive collation: membership follows the collation's equality,
-- for probes, counts and deletes alike
CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SELECT cuckoo_agg(x COLLATE ci, 10, 0.01) @> ('APPLE'::text COLLATE ci) AS ci_member,
       cuckoo_agg(x, 10, 0.01) @> 'APPLE'::text AS default_collation,
       'apple' COLLATE ci = 'APPLE' COLLATE ci AS equal_under_ci
  FROM (VALUES ('apple'::text)) v(x);
SELECT cuckoo_count(f, 'APPLE'::text COLLATE ci) AS ci_count,
       cuckoo_delete(f, 'APPLE'::text COLLATE ci) @> ('Apple'::text COLLATE ci) AS one_left,
       cuckoo_delete(cuckoo_delete(f, 'APPLE'::text COLLATE ci), 'aPPLE'::text COLLATE ci)
         @> ('Apple'::text COLLATE ci) AS none_left
  FROM (SELECT cuckoo_agg(x COLLATE ci, 10, 0.01) AS f FROM (VALUES ('apple'::text), ('Apple')) v(x)) s;

-- probes of an incompatible type are errors, never a silent "no"
SELECT cuckoo_agg(x, 100, 0.01) @> 5 FROM (VALUES ('5'::text)) v(x);
\echo :LAST_ERROR_SQLSTATE
SELECT 'a'::text <@ cuckoo_agg(x, 100, 0.01) FROM (VALUES (1)) v(x);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_agg(x, 100, 0.01) @> 1.0::numeric FROM (VALUES (1)) v(x);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_count(cuckoo_agg(x, 100, 0.01), 1.0::float8) FROM (VALUES (1)) v(x);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_add(cuckoo_agg(x, 100, 0.01), 'a'::text) FROM (VALUES (1)) v(x);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_delete(cuckoo_agg(x, 100, 0.01), 'a'::text) FROM (VALUES (1)) v(x);
\echo :LAST_ERROR_SQLSTATE
-- a NULL of another type is ignored like any NULL: no answer is given
SELECT cuckoo_add(f, NULL::text)::bytea = f::bytea AS add_ignored,
       cuckoo_delete(f, NULL::text)::bytea = f::bytea AS delete_ignored
  FROM (SELECT cuckoo_agg(x, 100, 0.01) AS f FROM (VALUES (1)) v(x)) s;

-- a type without a hash opclass, and an anonymous record: errors whatever
-- the data, even for a NULL value or a filter with no values
SELECT cuckoo_agg(x, 10, 0.01) FROM (VALUES ('(1,1)'::point)) v(x);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_agg(x, 10, 0.01) FROM (VALUES (ROW(1, 'a'::text))) v(x);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_empty(10, 0.01) @> '(1,1)'::point;
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_add(cuckoo_empty(10, 0.01), NULL::point);
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_delete(cuckoo_empty(10, 0.01), '(1,1)'::point);
\echo :LAST_ERROR_SQLSTATE
