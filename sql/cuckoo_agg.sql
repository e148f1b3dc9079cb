-- Aggregates: cuckoo_agg and cuckoo_union_agg, and a filter kept up to date
-- by a trigger.  Each error is followed by its SQLSTATE.

CREATE SCHEMA cuckoo_agg;
SET search_path = cuckoo_agg, public;

CREATE TABLE events (part int, user_id int8);
INSERT INTO events SELECT g % 4, g FROM generate_series(1, 20000) g;
INSERT INTO events VALUES (0, NULL), (1, NULL);

-- NULL values are skipped; every inserted value is found
SELECT (cuckoo_info(f)).items, (cuckoo_info(f)).tables,
       (SELECT count(*) FROM events e WHERE e.user_id IS NOT NULL AND NOT f @> e.user_id) AS false_negatives
  FROM (SELECT cuckoo_agg(user_id, 20000, 0.01) AS f FROM events) s;

-- a group of only NULLs gives an empty filter of the requested size, not NULL
SELECT buckets > 0 AS sized, capacity, items, tables
  FROM cuckoo_info((SELECT cuckoo_agg(x, 50, 0.01) FROM (VALUES (NULL::int), (NULL)) v(x)));

-- zero rows: the sizeless empty filter, not NULL
SELECT f IS NULL AS is_null, (cuckoo_info(f)).tables, (cuckoo_info(f)).bytes
  FROM (SELECT cuckoo_agg(user_id, 100, 0.01) AS f FROM events WHERE false) s;
-- so an anti-join pre-filter keeps every row when the build side is empty
SELECT count(*) FROM events e
 WHERE NOT coalesce((SELECT cuckoo_agg(user_id, 100, 0.01) FROM events WHERE false) @> e.user_id, false);
-- ... and with a build side, keeps every row whose key is not on it
SELECT count(*) AS kept, count(*) FILTER (WHERE e.user_id <= 1000) AS wrongly_kept
  FROM events e
 WHERE NOT coalesce((SELECT cuckoo_agg(user_id, 1000, 0.01) FROM events WHERE user_id <= 1000)
                    @> e.user_id, false);

-- one filter per partition: each holds all of its group's values
CREATE TABLE part_filters AS
  SELECT part, cuckoo_agg(user_id, 5000, 0.01) AS f FROM events GROUP BY part;
SELECT part, (cuckoo_info(f)).items, (cuckoo_info(f)).tables FROM part_filters ORDER BY part;
SELECT count(*) AS partitions_missing_their_keys
  FROM events e JOIN part_filters p USING (part)
 WHERE e.user_id IS NOT NULL AND NOT p.f @> e.user_id;
-- which partitions may hold a key: its own always, others rarely
SELECT array_agg(part ORDER BY part) FROM part_filters WHERE f @> 4242::int8;

-- n underestimated 100 times: the filter grows, nothing is lost, no error
CREATE TABLE small_filters AS
  SELECT part, cuckoo_agg(user_id, 50, 0.01) AS f FROM events GROUP BY part;
SELECT part, (cuckoo_info(f)).items, (cuckoo_info(f)).tables > 1 AS grew,
       (cuckoo_info(f)).capacity
  FROM small_filters ORDER BY part;
SELECT count(*) AS partitions_missing_their_keys
  FROM events e JOIN small_filters p USING (part)
 WHERE e.user_id IS NOT NULL AND NOT p.f @> e.user_id;

-- a column of many duplicates: every copy is stored and counted
SELECT (cuckoo_info(f)).items,
       (SELECT bool_and(cuckoo_count(f, v::int8) >= 2000) FROM generate_series(0, 9) v) AS counts_at_least_2000,
       (SELECT count(*) FROM generate_series(0, 9) v WHERE NOT f @> v::int8) AS false_negatives
  FROM (SELECT cuckoo_agg(user_id % 10, 100, 0.01) AS f FROM events WHERE user_id IS NOT NULL) s;

-- cuckoo_union_agg of the partition filters holds every value of the table
SELECT (cuckoo_info(cuckoo_union_agg(f))).items,
       (SELECT count(*) FROM events e
         WHERE e.user_id IS NOT NULL AND NOT cuckoo_union_agg(f) @> e.user_id) AS false_negatives
  FROM part_filters;
-- ... also when the partition filters grew
SELECT (cuckoo_info(u)).items,
       (SELECT count(*) FROM events e WHERE e.user_id IS NOT NULL AND NOT u @> e.user_id) AS false_negatives
  FROM (SELECT cuckoo_union_agg(f) AS u FROM small_filters) s;
-- cuckoo_union_agg skips NULLs, returns the sizeless empty filter over zero rows
SELECT (cuckoo_info(cuckoo_union_agg(f))).items
  FROM (SELECT f FROM part_filters UNION ALL SELECT NULL) s;
SELECT (cuckoo_info(cuckoo_union_agg(f))).tables FROM part_filters WHERE false;
-- ... treats the sizeless empty filter as the identity, wherever it comes
SELECT cuckoo_union_agg(f ORDER BY o)::bytea = (SELECT cuckoo_union_agg(f ORDER BY part) FROM part_filters)::bytea AS same
  FROM (SELECT part AS o, f FROM part_filters
        UNION ALL SELECT -1, cuckoo_agg(user_id, 1, 0.5) FROM events WHERE false
        UNION ALL SELECT 10, cuckoo_agg(user_id, 1, 0.5) FROM events WHERE false) s;
-- ... and refuses filters of different geometry
SELECT cuckoo_union_agg(f) FROM (SELECT f FROM part_filters
                                 UNION ALL SELECT cuckoo_empty(10, 0.5)) s;
\echo :LAST_ERROR_SQLSTATE

-- n and p must not change within a group, and must not be NULL
SELECT cuckoo_agg(x, x, 0.01) FROM generate_series(1, 3) x;
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_agg(x, 10, x / 10.0) FROM generate_series(1, 3) x;
\echo :LAST_ERROR_SQLSTATE
SELECT part, cuckoo_agg(user_id, CASE WHEN user_id = 19999 THEN 5001 ELSE 5000 END, 0.01)
  FROM events GROUP BY part;
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_agg(x, NULL, 0.01) FROM generate_series(1, 3) x;
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_agg(x, 10, NULL) FROM generate_series(1, 3) x;
\echo :LAST_ERROR_SQLSTATE
-- invalid sizing is reported before anything is built
SELECT cuckoo_agg(x, 0, 0.01) FROM generate_series(1, 3) x;
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_agg(x, 10, 1.5) FROM generate_series(1, 3) x;
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_agg(x, 10, 1e-12) FROM generate_series(1, 3) x;
\echo :LAST_ERROR_SQLSTATE
SELECT cuckoo_agg(x, 1000000000000000, 0.01) FROM generate_series(1, 3) x;
\echo :LAST_ERROR_SQLSTATE

-- as a window function with a growing frame: each row sees the values so far
SELECT x, cuckoo_agg(x, 10, 0.01) OVER (ORDER BY x) @> 3 AS has3,
       (cuckoo_info(cuckoo_agg(x, 10, 0.01) OVER (ORDER BY x))).items
  FROM generate_series(1, 5) x ORDER BY x;

-- sorted and hashed grouping hold the same values (the bytes may differ:
-- a cuckoo filter's layout depends on insertion order)
SET enable_hashagg = off;
CREATE TABLE sorted AS SELECT part, cuckoo_agg(user_id, 5000, 0.01) AS f FROM events GROUP BY part;
RESET enable_hashagg;
SET enable_sort = off;
CREATE TABLE hashed AS SELECT part, cuckoo_agg(user_id, 5000, 0.01) AS f FROM events GROUP BY part;
RESET enable_sort;
SELECT count(*) AS groups, bool_and((cuckoo_info(s.f)).items = (cuckoo_info(h.f)).items) AS same_items,
       (SELECT count(*) FROM events e JOIN sorted s2 USING (part) JOIN hashed h2 USING (part)
         WHERE e.user_id IS NOT NULL AND NOT (s2.f @> e.user_id AND h2.f @> e.user_id)) AS false_negatives
  FROM sorted s JOIN hashed h USING (part);

-- A filter of the live keys of a table, kept up to date by a trigger: every
-- live key is contained and the filter counts exactly the live rows.
CREATE TABLE live_keys (k int8 PRIMARY KEY);
CREATE TABLE key_filter (f cuckoo NOT NULL);
INSERT INTO key_filter VALUES (cuckoo_empty(1000, 0.01));
CREATE FUNCTION maintain_key_filter() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    UPDATE key_filter SET f = cuckoo_delete(f, OLD.k);
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    UPDATE key_filter SET f = cuckoo_add(f, NEW.k);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER live_keys_filter AFTER INSERT OR UPDATE OR DELETE ON live_keys
  FOR EACH ROW EXECUTE FUNCTION maintain_key_filter();
-- within the capacity
INSERT INTO live_keys SELECT g FROM generate_series(1, 800) g;
DELETE FROM live_keys WHERE k % 3 = 0;
UPDATE live_keys SET k = k + 100000 WHERE k % 5 = 0;
SELECT (SELECT count(*) FROM live_keys) AS live, (cuckoo_info(f)).items, (cuckoo_info(f)).tables,
       (SELECT count(*) FROM live_keys WHERE NOT f @> k) AS live_keys_missing
  FROM key_filter;
-- past the capacity: the filter grows, and deletes go on
INSERT INTO live_keys SELECT g FROM generate_series(801, 3000) g;
DELETE FROM live_keys WHERE k % 7 = 0;
UPDATE live_keys SET k = -k WHERE k % 11 = 0;
SELECT (SELECT count(*) FROM live_keys) AS live, (cuckoo_info(f)).items, (cuckoo_info(f)).tables > 1 AS grew,
       (SELECT count(*) FROM live_keys WHERE NOT f @> k) AS live_keys_missing
  FROM key_filter;
-- keys deleted and not re-added are mostly gone
SELECT count(*) FILTER (WHERE f @> g::int8) < count(*) / 20 AS few_dead_keys_reported
  FROM key_filter, generate_series(1, 3000) g
 WHERE NOT EXISTS (SELECT FROM live_keys WHERE k = g);
