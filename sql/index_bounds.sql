--
-- An amqfilter index on an integer, date or time stamp column keeps the
-- least and greatest value it holds: a value outside them is ruled out
-- without reading a page, however many keys a probe asks (a join filter
-- asking a partition for a thousand keys at the default rate would get a
-- false "maybe" from most partitions otherwise).  Every write widens them
-- before its rows can be seen.
--
SET client_min_messages = warning;
SET amqfilter.index_seed = 20260109;
LOAD 'amqfilter';
SET max_parallel_workers_per_gather = 0;

-- 30 day partitions; a customer buys on one day only (ids by day)
CREATE TABLE ib (day int, cust int8, amt int) PARTITION BY RANGE (day);
SELECT format('CREATE TABLE ib_%s PARTITION OF ib FOR VALUES FROM (%s) TO (%s)', d, d, d + 1)
  FROM generate_series(0, 29) d \gexec
INSERT INTO ib SELECT g / 3000, (g / 3000) * 1000 + (hashint4(g) & 1023) % 1000, g % 100
  FROM generate_series(0, 89999) g;
CREATE INDEX ib_cust ON ib USING amqfilter (cust);
-- 1,000 customers of days 10 to 12
CREATE TABLE ib_keys AS SELECT g::int8 AS id FROM generate_series(10000, 12999, 3) g;
CREATE TABLE ib_plain AS SELECT * FROM ib;
ANALYZE ib, ib_keys, ib_plain;

-- the partitions a join filter reads, and the rows: 27 of 30 skipped at
-- the default rate
CREATE FUNCTION ib_skips(q text) RETURNS TABLE (skipped int, read int)
LANGUAGE plpgsql SET search_path = public AS $$
DECLARE
  r text;
BEGIN
  skipped := 0; read := 0;
  FOR r IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
    IF r ~ 'Skipped by Filter Index: 1 of 1' THEN skipped := skipped + 1; END IF;
    IF r ~ 'Seq Scan on ib_[0-9]+ .*actual rows=[1-9]' THEN read := read + 1; END IF;
  END LOOP;
  RETURN NEXT;
END $$;
SET amqfilter.join_filter = on;
SET enable_nestloop = off;
SET enable_mergejoin = off;
SELECT * FROM ib_skips('SELECT count(*) FROM ib s JOIN ib_keys k ON k.id = s.cust');
SELECT count(*) FROM ib s JOIN ib_keys k ON k.id = s.cust;
SELECT count(*) FROM ib_plain s JOIN ib_keys k ON k.id = s.cust;
RESET enable_nestloop;
RESET enable_mergejoin;

-- a constant outside every partition's values: no page read, none kept
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT count(*) FROM ib WHERE cust = 999999;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT count(*) FROM ib WHERE cust = -1;
-- of another integer width; a generic plan's parameter; an array
SELECT count(*) FROM ib WHERE cust = 12000::int4;
PREPARE ib_q(int8) AS SELECT count(*) FROM ib WHERE cust = $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) EXECUTE ib_q(999999);
EXECUTE ib_q(12000);
RESET plan_cache_mode;
SELECT count(*) FROM ib WHERE cust = ANY (ARRAY[999999, 12000, -1]::int8[]);
SELECT bloom_index_contains('ib_12_cust_idx', 999999::int8) AS beyond,
       bloom_index_contains('ib_12_cust_idx', 12000::int8) AS held;

-- Writes widen the bounds before their rows can be seen: a value past the
-- greatest, by this session, by a later one, in a transaction still open,
-- by an UPDATE and by COPY, is found.
INSERT INTO ib VALUES (12, 999999, 1);
SELECT count(*) FROM ib WHERE cust = 999999;
SELECT bloom_index_contains('ib_12_cust_idx', 999999::int8) AS now_held;
BEGIN;
INSERT INTO ib VALUES (13, -1, 1);
SELECT count(*) FROM ib WHERE cust = -1;
COMMIT;
UPDATE ib SET cust = 5555555 WHERE day = 14 AND cust = (SELECT min(cust) FROM ib_14);
COPY ib FROM STDIN;
15	-777	1
\.
\c
LOAD 'amqfilter';
SET max_parallel_workers_per_gather = 0;
SELECT count(*) FROM ib WHERE cust IN (999999, -1, 5555555, -777);
SET amqfilter.index_skip = off;
SET enable_bitmapscan = off;
SELECT count(*) AS without_index FROM ib WHERE cust IN (999999, -1, 5555555, -777);
RESET amqfilter.index_skip;
RESET enable_bitmapscan;
SELECT count(*) FROM ib WHERE cust = 999999;
-- deletes leave them as they are: a superset
DELETE FROM ib WHERE cust = 999999;
SELECT count(*) FROM ib WHERE cust = 999999;
INSERT INTO ib VALUES (12, 999999, 2);
SELECT count(*) FROM ib WHERE cust = 999999;

-- An index built over no rows holds no value; its first write sets them.
CREATE TABLE ib_empty (d date, ts timestamp, tz timestamptz, t text);
CREATE INDEX ON ib_empty USING amqfilter (d);
CREATE INDEX ON ib_empty USING amqfilter (ts);
CREATE INDEX ON ib_empty USING amqfilter (tz);
CREATE INDEX ON ib_empty USING amqfilter (t);
SELECT bloom_index_contains('ib_empty_d_idx', date '2026-01-01') AS date_before;
INSERT INTO ib_empty VALUES ('2026-01-01', '2026-01-01 10:00', '2026-01-01 10:00+00', 'a');
SET enable_seqscan = off;
SELECT count(*) FROM ib_empty WHERE d = '2026-01-01';
SELECT count(*) FROM ib_empty WHERE ts = '2026-01-01 10:00';
SELECT count(*) FROM ib_empty WHERE tz = '2026-01-01 10:00+00';
SELECT count(*) FROM ib_empty WHERE t = 'a';
SELECT bloom_index_contains('ib_empty_d_idx', date '2026-01-02') AS date_after,
       bloom_index_contains('ib_empty_ts_idx', timestamp '2027-01-01') AS ts_after,
       bloom_index_contains('ib_empty_tz_idx', timestamptz '2027-01-01 00:00+00') AS tz_after;
INSERT INTO ib_empty VALUES ('infinity', 'infinity', '-infinity', 'b');
SELECT count(*) FROM ib_empty WHERE d = 'infinity';
SELECT count(*) FROM ib_empty WHERE ts = 'infinity';
SELECT count(*) FROM ib_empty WHERE tz = '-infinity';
RESET enable_seqscan;

DROP TABLE ib, ib_keys, ib_plain, ib_empty;
DROP FUNCTION ib_skips(text);
