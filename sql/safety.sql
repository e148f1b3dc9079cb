--
-- Safety: requests that cannot be met fail before anything is allocated, and
-- long aggregates stop promptly when the statement is cancelled.
--

-- An impossible filter: rejected by the sizing check, so the statement
-- fails at once instead of trying to allocate petabytes.
SELECT bloom_empty(1000000000000000, 1e-12);
SELECT bloom_agg(g, 1000000000000000, 1e-12) FROM generate_series(1, 3) g;
SELECT bloom_params(1000000000000000, 0.01);
SELECT cuckoo_empty(1000000000000000, 1e-12);
SELECT cuckoo_empty(1000000000000000, 0.01);
SELECT cuckoo_agg(g, 1000000000000000, 0.01) FROM generate_series(1, 3) g;
SELECT cuckoo_params(1000000000000000, 0.01);

-- Cancellation: 10^8 rows streamed into each aggregate would take many
-- seconds; statement_timeout must stop them (SQLSTATE 57014), and the
-- session must be usable right after.
SET statement_timeout = '300ms';
SELECT bloom_agg(a.g::int8 * 1000 + b.g, 100000000, 0.01)
  FROM generate_series(1, 100000) a(g), generate_series(1, 1000) b(g);
SELECT cuckoo_agg(a.g::int8 * 1000 + b.g, 100000000, 0.01)
  FROM generate_series(1, 100000) a(g), generate_series(1, 1000) b(g);
RESET statement_timeout;
SELECT cuckoo_contains(cuckoo_add(cuckoo_empty(10, 0.01), 1), 1) AS usable;

-- The largest n is bounded by the size limit, not by an integer overflow, and
-- the limit is what pg_dump can write: a filter's text form must fit in a 1 GB
-- value, so no filter above 804,519,933 bytes is built (54000), and
-- bloom_params / cuckoo_params say so before anything is built.  Just under
-- and just over the limit for p = 0.5:
SELECT bytes FROM bloom_params(4460000000, 0.5, 'classic');
SELECT bytes FROM bloom_params(4470000000, 0.5, 'classic');
SELECT bytes FROM cuckoo_params(1520000000, 0.5);
SELECT bytes FROM cuckoo_params(1530000000, 0.5);
-- at very low rates the blocked layout outgrows the limit where classic does not:
-- the hint says so
SELECT bytes FROM bloom_params(1000000, 1e-50);
SELECT bytes FROM bloom_params(1000000, 1e-50, 'classic');

-- p is printed as it was given, not rounded
SELECT bloom_empty(10, 0.9999999999999999) IS NOT NULL AS ok;
SELECT bloom_empty(10, 1.0000000000000002);
SELECT cuckoo_empty(10, 1.5e-9);

-- counts beyond bigint (only a crafted value has one) show as its maximum,
-- never negative: capacity patched to 2^64 - 1
SELECT capacity FROM bloom_info(overlay(bloom_empty(10, 0.1)::bytea
  PLACING '\xffffffffffffffff'::bytea FROM 33)::bloom);
SELECT capacity FROM cuckoo_info(overlay(cuckoo_empty(10, 0.1)::bytea
  PLACING '\xffffffffffffffff'::bytea FROM 25)::cuckoo);
