-- Stored filters probed by query shapes that hand a call site one filter
-- after another (a join to a table of filters) or make a new call site per
-- row (a SQL function that is not inlined): each call site keeps several
-- values, and the transaction keeps what its probes read
-- (filter_access.c, filter_cache.c).  The answers are those of the fast
-- forms row for row; no answer ever comes from another value, whatever
-- changed between the probes; the transaction's cache stays under hash_mem
-- and is gone when the transaction ends.
CREATE SCHEMA probe_cache;
SET search_path = probe_cache, public;

-- two bloom and two cuckoo filters of equal size, stored out of line: the
-- even numbers 2 .. 20,000 (id 1) and the odd ones 1 .. 19,999 (id 2)
CREATE TABLE filters (id int PRIMARY KEY, f bloom, c cuckoo);
INSERT INTO filters
  SELECT 1, bloom_agg(2 * g, 10000, 0.01), cuckoo_agg(2 * g, 10000, 0.01)
    FROM generate_series(1, 10000) g;
INSERT INTO filters
  SELECT 2, bloom_agg(2 * g - 1, 10000, 0.01), cuckoo_agg(2 * g - 1, 10000, 0.01)
    FROM generate_series(1, 10000) g;
SELECT id, pg_column_size(f) AS bloom_bytes, pg_column_size(c) AS cuckoo_bytes,
       pg_column_compression(f) AS compression
  FROM filters ORDER BY id;
CREATE TABLE events AS SELECT g::bigint AS user_id FROM generate_series(1, 20000) g;
CREATE TABLE vip_filter AS SELECT f FROM filters WHERE id = 1;
ANALYZE filters, events, vip_filter;

-- TOAST blocks the statements between two calls of measure() read.  The
-- counts reach the shared statistics when a transaction ends and a flush
-- is due: pg_stat_force_next_flush() in the statement before each
-- measure() makes it due.
SET stats_fetch_consistency = none;
CREATE TABLE blocks (what text, n bigint);
CREATE FUNCTION toast_blocks() RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(toast_blks_hit + toast_blks_read)::bigint FROM pg_statio_all_tables
   WHERE relid IN ('probe_cache.filters'::regclass, 'probe_cache.vip_filter'::regclass) $$;
CREATE FUNCTION measure(what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE blocks SET n = n + toast_blocks() WHERE blocks.what = measure.what;
  IF NOT FOUND THEN
    INSERT INTO blocks VALUES (what, -toast_blocks());
  END IF;
END $$;

-- A join to the table of filters: a nested loop whose inner side hands the
-- one call site both filters in turn, 40,000 probes.
EXPLAIN (COSTS OFF)
SELECT fl.id, count(*) FROM events e JOIN filters fl ON fl.f @> e.user_id GROUP BY fl.id;
SELECT pg_stat_force_next_flush();
SELECT measure('join');
CREATE TABLE joined AS
  SELECT fl.id, e.user_id, 'bloom' AS type FROM events e JOIN filters fl ON fl.f @> e.user_id
  UNION ALL
  SELECT fl.id, e.user_id, 'cuckoo' FROM events e JOIN filters fl ON fl.c @> e.user_id;
SELECT pg_stat_force_next_flush();
SELECT measure('join');
-- its fast form: one filter after the other
CREATE TABLE one_by_one AS
  SELECT fl.id, e.user_id, 'bloom' AS type
    FROM filters fl, LATERAL (SELECT user_id FROM events e WHERE fl.f @> e.user_id) e
  UNION ALL
  SELECT fl.id, e.user_id, 'cuckoo'
    FROM filters fl, LATERAL (SELECT user_id FROM events e WHERE fl.c @> e.user_id) e;
-- the same rows; every member found in its own filter (an answer taken
-- from the other filter would miss half of them); few false positives;
-- and each filter read about once, not twice per row (80,000 blocks)
SELECT type, count(*) AS rows,
       (SELECT count(*) FROM (SELECT * FROM joined j WHERE j.type = t.type
                              EXCEPT ALL
                              SELECT * FROM one_by_one o WHERE o.type = t.type) d) AS only_join,
       (SELECT count(*) FROM (SELECT * FROM one_by_one o WHERE o.type = t.type
                              EXCEPT ALL
                              SELECT * FROM joined j WHERE j.type = t.type) d) AS only_one_by_one,
       count(*) FILTER (WHERE id = 1 + user_id % 2) AS members_found,
       count(*) FILTER (WHERE id <> 1 + user_id % 2) < 600 AS few_false_positives
  FROM joined t GROUP BY type ORDER BY type;
SELECT n < 1000 AS join_read_filters_about_once FROM blocks WHERE what = 'join';

-- the same join reading only slices, and only whole values
CREATE FUNCTION join_rows(mode text) RETURNS TABLE (id int, user_id bigint)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('amqfilter.probe_read', mode, true);
  RETURN QUERY SELECT fl.id, e.user_id FROM events e JOIN filters fl ON fl.f @> e.user_id;
END $$;
SELECT m.mode,
       (SELECT count(*) FROM (SELECT * FROM join_rows(m.mode)
                              EXCEPT ALL
                              SELECT id, user_id FROM one_by_one WHERE type = 'bloom') d) AS only_join,
       (SELECT count(*) FROM (SELECT id, user_id FROM one_by_one WHERE type = 'bloom'
                              EXCEPT ALL
                              SELECT * FROM join_rows(m.mode)) d) AS only_one_by_one
  FROM (VALUES ('slices'), ('whole')) m(mode);
SHOW amqfilter.probe_read;

-- A SQL function that is not inlined (STABLE, with a FROM) and its
-- PL/pgSQL twin: a new executor, so a new call site, for every row.
CREATE FUNCTION is_vip(bigint) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT f @> $1 FROM vip_filter $$;
CREATE FUNCTION is_vip_pl(bigint) RETURNS boolean LANGUAGE plpgsql STABLE
  AS $$ BEGIN RETURN (SELECT f @> $1 FROM vip_filter); END $$;
EXPLAIN (COSTS OFF) SELECT count(*) FROM events e WHERE is_vip(e.user_id);
SELECT pg_stat_force_next_flush();
SELECT measure('sql function');
CREATE TABLE called AS
  SELECT user_id, is_vip(user_id) AS sql, is_vip_pl(user_id) AS plpgsql FROM events;
SELECT pg_stat_force_next_flush();
SELECT measure('sql function');
-- its fast form, the probe inline: the same answer for every row, every
-- member found, and the filter read about once, not twice per call
SELECT count(*) AS calls,
       count(*) FILTER (WHERE c.sql IS DISTINCT FROM inline.vip) AS sql_differs,
       count(*) FILTER (WHERE c.plpgsql IS DISTINCT FROM inline.vip) AS plpgsql_differs,
       count(*) FILTER (WHERE c.user_id % 2 = 0 AND c.sql) AS members_found
  FROM called c
  JOIN (SELECT user_id, (SELECT f FROM vip_filter) @> user_id AS vip FROM events) inline
 USING (user_id);
SELECT n < 1000 AS calls_read_filter_about_once FROM blocks WHERE what = 'sql function';

-- A new call site per row, alternating between two filters of equal size.
CREATE FUNCTION is_member(int, bigint) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT f @> $2 FROM filters WHERE id = $1 $$;
CREATE FUNCTION is_member_c(int, bigint) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT c @> $2 FROM filters WHERE id = $1 $$;
CREATE FUNCTION members(bigint[]) RETURNS TABLE (bloom_1 bigint, bloom_2 bigint,
                                                 cuckoo_1 bigint, cuckoo_2 bigint)
LANGUAGE sql AS $$
  SELECT count(*) FILTER (WHERE is_member(1, v)), count(*) FILTER (WHERE is_member(2, v)),
         count(*) FILTER (WHERE is_member_c(1, v)), count(*) FILTER (WHERE is_member_c(2, v))
    FROM unnest($1) v $$;
-- the evens, then the odds: each all in its own filter, about 1% in the other
SELECT * FROM members(ARRAY(SELECT 2 * g FROM generate_series(1, 10000) g));
SELECT * FROM members(ARRAY(SELECT 2 * g - 1 FROM generate_series(1, 10000) g));

-- Changes between the statements of one transaction, each probing the
-- filters after the transaction's cache holds them whole.  A value changed
-- is a new TOAST value of the same size: only its value OID tells it apart.
BEGIN;
SET LOCAL amqfilter.probe_read = 'whole';
SELECT * FROM members(ARRAY(SELECT 2 * g FROM generate_series(1, 10000) g));
-- filter 1 becomes a copy of filter 2: the odd numbers
UPDATE filters SET f = (SELECT f FROM filters WHERE id = 2),
                   c = (SELECT c FROM filters WHERE id = 2) WHERE id = 1;
SELECT * FROM members(ARRAY(SELECT 2 * g - 1 FROM generate_series(1, 10000) g));
SELECT * FROM members(ARRAY(SELECT 2 * g FROM generate_series(1, 10000) g));
-- deleted and inserted again with the numbers swapped: 1 the evens, 2 the odds...
SAVEPOINT swapped;
DELETE FROM filters;
INSERT INTO filters
  SELECT 2, bloom_agg(2 * g, 10000, 0.01), cuckoo_agg(2 * g, 10000, 0.01)
    FROM generate_series(1, 10000) g;
INSERT INTO filters
  SELECT 1, bloom_agg(2 * g - 1, 10000, 0.01), cuckoo_agg(2 * g - 1, 10000, 0.01)
    FROM generate_series(1, 10000) g;
-- ... now 1 the odds, 2 the evens
SELECT * FROM members(ARRAY(SELECT 2 * g FROM generate_series(1, 10000) g));
-- and back to the values before the savepoint, cached earlier: both odds
ROLLBACK TO SAVEPOINT swapped;
SELECT * FROM members(ARRAY(SELECT 2 * g FROM generate_series(1, 10000) g));
ROLLBACK;
-- after the rollback, the original values: 1 the evens, 2 the odds
SELECT * FROM members(ARRAY(SELECT 2 * g FROM generate_series(1, 10000) g));

-- The key includes the type a value is read as: a bloom filter's TOAST
-- pointer passed as a cuckoo filter by a binary-coercible cast is not the
-- bloom filter the transaction holds, and fails cuckoo validation.
CREATE CAST (bloom AS cuckoo) WITHOUT FUNCTION;
BEGIN;
SET LOCAL amqfilter.probe_read = 'whole';
SELECT f @> 2 AS bloom_has_2 FROM filters WHERE id = 1;
SELECT f::cuckoo @> 2 FROM filters WHERE id = 1;
ROLLBACK;
DROP CAST (bloom AS cuckoo);

-- A PL/pgSQL variable reassigned in a loop, probed by one call site (a
-- simple expression, kept for the transaction): stored values through
-- their TOAST pointers, alternating; then values in memory, each at the
-- address the last one had, of one length but two geometries (7 or 4
-- hashes), each holding only its own number.  An answer from the previous
-- value would miss numbers.
CREATE FUNCTION reassigned() RETURNS TABLE (what text, probes int, found int)
LANGUAGE plpgsql AS $$
DECLARE
  v bloom;
  n int := 0;
BEGIN
  FOR i IN 1..2000 LOOP
    SELECT f INTO v FROM filters WHERE id = 1 + i % 2;
    IF v @> i THEN n := n + 1; END IF;
  END LOOP;
  RETURN QUERY SELECT 'stored, alternating', 2000, n;
  n := 0;
  FOR i IN 1..2000 LOOP
    v := CASE WHEN i % 2 = 1 THEN bloom_empty(100, 0.01, 'classic')
              ELSE bloom_empty(150, 0.05, 'classic') END;
    v := bloom_add(v, i);
    IF v @> i THEN n := n + 1; END IF;
  END LOOP;
  RETURN QUERY SELECT 'in memory, reassigned', 2000, n;
END $$;
SELECT * FROM reassigned();

-- The bound.  Sixty filters of 12 kB probed in one transaction, read whole,
-- with hash_mem at 2 x 64 kB: the transaction's cache keeps under 128 kB,
-- and its memory is gone once the transaction ends.
CREATE TABLE many (id int, f bloom);
INSERT INTO many
  SELECT i, bloom_agg(g, 10000, 0.01)
    FROM generate_series(1, 60) i, generate_series(i, i + 9999) g GROUP BY i;
SET work_mem = '64kB';
BEGIN;
SET LOCAL amqfilter.probe_read = 'whole';
SELECT count(*) AS members_found FROM many, generate_series(0, 4) g WHERE f @> (id + g);
SELECT count(*) AS members_found FROM many, generate_series(5, 9) g WHERE f @> (id + g);
SELECT (SELECT sum(pg_column_size(f)) FROM many) > 4 * 128 * 1024 AS probed_far_more,
       sum(total_bytes) <= 128 * 1024 AS under_hash_mem,
       sum(total_bytes) >= 3 * 12 * 1024 AS holds_several
  FROM pg_backend_memory_contexts WHERE name = 'amqfilter stored filters';
COMMIT;
SELECT count(*) AS contexts_after_commit
  FROM pg_backend_memory_contexts WHERE name = 'amqfilter stored filters';
RESET work_mem;

RESET search_path;
DROP SCHEMA probe_cache CASCADE;
