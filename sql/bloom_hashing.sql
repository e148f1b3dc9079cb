-- Membership agrees with SQL equality: the type's default hash opclass.

-- integers of every width are the same member (one operator family)
SELECT bloom_agg(x, 100, 0.01) @> 5::int2 AS int2,
       bloom_agg(x, 100, 0.01) @> 5::int4 AS int4,
       bloom_agg(x, 100, 0.01) @> 5::int8 AS int8,
       bloom_agg(x, 100, 0.01) @> (-5)::int2 AS neg_absent
  FROM (VALUES (5::int8), (7::int8)) v(x);
SELECT bloom_agg(x, 100, 0.01) @> (-5)::int8 AS int8,
       bloom_agg(x, 100, 0.01) @> (-5)::int4 AS int4
  FROM (VALUES ((-5)::int2)) v(x);
-- filters of equal values of any width are the same bytes
SELECT bloom_agg(g::int2, 1000, 0.01)::bytea = bloom_agg(g::int4, 1000, 0.01)::bytea AS int2_int4,
       bloom_agg(g::int4, 1000, 0.01)::bytea = bloom_agg(g::int8, 1000, 0.01)::bytea AS int4_int8
  FROM generate_series(-500, 500) g;
-- int8 values beyond the int4 range get a full 64-bit hash: PostgreSQL's own
-- int8 hash folds 4294967291 onto -5 and 4294967297 onto 0, a filter does not
SELECT bloom_agg(x, 100, 0.01) @> 4294967291::int8 AS folded_absent,
       bloom_agg(x, 100, 0.01) @> 4294967297::int8 AS folded_absent2,
       hashint8extended(4294967291, 0) = hashint4extended(-5, 0) AS pg_hash_folds
  FROM (VALUES (-5), (0)) v(x);
SELECT bloom_agg(x, 100, 0.01) @> 9007199254740993::int8 AS big,
       bloom_agg(x, 100, 0.01) @> (-9007199254740993)::int8 AS negative_big,
       bloom_agg(x, 100, 0.01) @> 9007199254740992::int8 AS neighbour_absent
  FROM (VALUES (9007199254740993::int8), (-9007199254740993)) v(x);
-- the aggregate hashes integers a batch at a time (256 values): its filter
-- is the one adding them one by one gives, small and wide values alike
SELECT bloom_agg(x, 10000, 0.01)::bytea =
       bloom_union_agg(bloom_add(bloom_empty(10000, 0.01), x))::bytea AS batched_int8,
       bloom_agg(x, 10000, 0.01, 'dleft') @> 12884901933::int8 AS wide_member
  FROM (SELECT CASE WHEN g % 3 = 0 THEN g * 4294967311 ELSE -g END::int8 AS x
          FROM generate_series(1, 3000) g) v;
SELECT bloom_agg(x, 10000, 0.01, 'classic')::bytea =
       bloom_union_agg(bloom_add(bloom_empty(10000, 0.01, 'classic'), x))::bytea AS batched_int2
  FROM (SELECT (g % 700)::int2 AS x FROM generate_series(1, 3000) g) v;
-- ... and so do domains over int8, so both sides of a join agree
CREATE DOMAIN order_id AS int8;
SELECT bloom_agg(x, 100, 0.01) @> 9007199254740993::int8 AS domain_to_base,
       bloom_agg(x::int8, 100, 0.01) @> 9007199254740993::order_id AS base_to_domain
  FROM (VALUES (9007199254740993::order_id)) v(x);

-- numeric equality ignores display scale
SELECT bloom_agg(x, 100, 0.01) @> 1.00::numeric AS scale,
       bloom_agg(x, 100, 0.01) @> 1.000000::numeric AS scale6
  FROM (VALUES (1.0::numeric)) v(x);
-- float4 and float8 share a family; -0 equals 0
SELECT bloom_agg(x, 100, 0.01) @> 0.5::float4 AS float4,
       bloom_agg(x, 100, 0.01) @> '-0'::float8 AS negzero
  FROM (VALUES (0.5::float8), (0::float8)) v(x);

-- text, under a deterministic collation, is its bytes; a probe needs the same type family
SELECT bloom_agg(x, 100, 0.01) @> 'apple'::text AS apple,
       bloom_agg(x, 100, 0.01) @> 'apple'::varchar AS varchar,
       bloom_agg(x, 100, 0.01) @> 'Apple'::text AS case_differs
  FROM (VALUES ('apple'::text)) v(x);

-- other hashable types: uuid, date, timestamptz, bytea, arrays, composites, booleans
SELECT bloom_agg(x, 10, 0.01) @> 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS uuid
  FROM (VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid)) v(x);
SELECT bloom_agg(x, 10, 0.01) @> '2024-02-29'::date AS date
  FROM (VALUES ('2024-02-29'::date)) v(x);
SELECT bloom_agg(x, 10, 0.01) @> '2024-01-01 12:00:00+02'::timestamptz AS same_instant
  FROM (VALUES ('2024-01-01 10:00:00+00'::timestamptz)) v(x);
SELECT bloom_agg(x, 10, 0.01) @> '\xdeadbeef'::bytea AS bytea
  FROM (VALUES ('\xdeadbeef'::bytea)) v(x);
SELECT bloom_agg(x, 10, 0.01) @> ARRAY[1, 2, 3] AS arr,
       bloom_agg(x, 10, 0.01) @> ARRAY[3, 2, 1] AS arr_order
  FROM (VALUES (ARRAY[1, 2, 3])) v(x);
CREATE TYPE pair AS (a int, b text);
SELECT bloom_agg(x, 10, 0.01) @> ROW(1, 'a')::pair AS rec,
       bloom_agg(x, 10, 0.01) @> ROW(1, 'b')::pair AS rec_absent
  FROM (VALUES (ROW(1, 'a')::pair)) v(x);
SELECT bloom_agg(x, 10, 0.01) @> true AS t, bloom_agg(x, 10, 0.01) @> false AS f
  FROM (VALUES (true)) v(x);

-- a user-defined type with its own hash opclass works, a domain uses its base type
CREATE DOMAIN positive_int AS int CHECK (VALUE > 0);
SELECT bloom_agg(x, 10, 0.01) @> 3 AS domain_member
  FROM (VALUES (3::positive_int)) v(x);

-- a case-insensitive collation: membership follows the collation's equality
CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SELECT bloom_agg(x COLLATE ci, 10, 0.01) @> ('APPLE'::text COLLATE ci) AS ci_member,
       bloom_agg(x, 10, 0.01) @> 'APPLE'::text AS default_collation,
       'apple' COLLATE ci = 'APPLE' COLLATE ci AS equal_under_ci
  FROM (VALUES ('apple'::text)) v(x);

-- probes of an incompatible type are errors, never a silent "no"
SELECT bloom_agg(x, 100, 0.01) @> 5 FROM (VALUES ('5'::text)) v(x);
SELECT bloom_agg(x, 100, 0.01) @> 'a'::text FROM (VALUES (1)) v(x);
SELECT bloom_agg(x, 100, 0.01) @> 1.0::numeric FROM (VALUES (1)) v(x);
SELECT bloom_add(bloom_agg(x, 100, 0.01), 'a'::text) FROM (VALUES (1)) v(x);

-- a type without a hash opclass, and an anonymous record
SELECT bloom_agg(x, 10, 0.01) FROM (VALUES ('(1,1)'::point)) v(x);
SELECT bloom_agg(x, 10, 0.01) FROM (VALUES (ROW(1, 'a'::text))) v(x);
SELECT bloom_empty(10, 0.01) @> '(1,1)'::point;
