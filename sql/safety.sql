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

-- The largest n is bounded by the 1 GB limit, not by an integer overflow:
-- just under and just over the limit for p = 0.5.
SELECT bytes < 1073741824 AS fits FROM bloom_params(5000000000, 0.5, 'classic');
SELECT bloom_params(6000000000, 0.5, 'classic');
SELECT bytes < 1073741824 AS fits FROM cuckoo_params(1700000000, 0.5);
SELECT cuckoo_params(2200000000, 0.5);

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
