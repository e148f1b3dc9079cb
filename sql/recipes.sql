-- The recipes of docs/recipes.md, their statements as written there (only
-- the filters are all sized by hand, the cache guard's smaller, and a literal
-- key is a parameter), each with no filter (an empty filter table), a NULL filter
-- where the table allows one, and a real filter.  A missing filter means
-- "maybe": every answer must be the plain query's, and a probe must never
-- say "no" for a key that exists.

CREATE SCHEMA recipes;
SET search_path = recipes, public;

--
-- Semi-join pre-filter
--
CREATE TABLE vip_users AS SELECT (g * 7)::int8 AS user_id FROM generate_series(1, 500) g;
CREATE TABLE events AS SELECT (g % 5000)::int8 AS user_id FROM generate_series(1, 20000) g;
ANALYZE vip_users, events;
SELECT count(*) AS plain FROM events e WHERE e.user_id IN (SELECT user_id FROM vip_users) \gset
CREATE TABLE vip_filter AS
  SELECT bloom_agg(user_id, 50000, 0.01) AS f FROM vip_users;
-- the filter is one InitPlan, and the probe keeps its place in the scan
EXPLAIN (COSTS OFF)
SELECT count(*)
  FROM events e
 WHERE ((SELECT f FROM vip_filter) @> e.user_id) IS NOT FALSE  -- cheap, drops ~all non-VIP rows
   AND e.user_id IN (SELECT user_id FROM vip_users);           -- exact
-- a real filter, no filter, a NULL filter
CREATE TABLE semi (state text, n bigint);
INSERT INTO semi
SELECT 'real', count(*)
  FROM events e
 WHERE ((SELECT f FROM vip_filter) @> e.user_id) IS NOT FALSE  -- cheap, drops ~all non-VIP rows
   AND e.user_id IN (SELECT user_id FROM vip_users);           -- exact
TRUNCATE vip_filter;
INSERT INTO semi
SELECT 'empty', count(*)
  FROM events e
 WHERE ((SELECT f FROM vip_filter) @> e.user_id) IS NOT FALSE  -- cheap, drops ~all non-VIP rows
   AND e.user_id IN (SELECT user_id FROM vip_users);           -- exact
INSERT INTO vip_filter VALUES (NULL);
INSERT INTO semi
SELECT 'null', count(*)
  FROM events e
 WHERE ((SELECT f FROM vip_filter) @> e.user_id) IS NOT FALSE  -- cheap, drops ~all non-VIP rows
   AND e.user_id IN (SELECT user_id FROM vip_users);           -- exact
SELECT state, n = :plain AS same_as_plain, :plain > 0 AS plain_has_rows FROM semi ORDER BY state;

--
-- Anti-join pre-filter
--
CREATE TABLE orders AS
SELECT g AS order_id, CASE WHEN g % 101 = 0 THEN NULL ELSE (g % 3000)::int8 END AS customer_id
  FROM generate_series(1, 20000) g;
CREATE TABLE blocked_customers AS SELECT (g * 11)::int8 AS customer_id FROM generate_series(1, 200) g;
ANALYZE orders, blocked_customers;
CREATE TABLE anti (state text, n bigint, plain bigint);
-- the filter built in the query, over a build side with rows and over an empty one
INSERT INTO anti
SELECT 'built in the query', (SELECT count(*) FROM (
SELECT o.*
  FROM orders o
 WHERE NOT EXISTS (
         SELECT 1 FROM blocked_customers b
          WHERE b.customer_id =
                CASE WHEN ((SELECT bloom_agg(customer_id, 100000, 0.001)
                              FROM blocked_customers) @> o.customer_id) IS NOT FALSE
                     THEN o.customer_id END)
) r),
       (SELECT count(*) FROM orders o
         WHERE NOT EXISTS (SELECT 1 FROM blocked_customers b WHERE b.customer_id = o.customer_id));
CREATE TABLE blocked_filter AS
  SELECT bloom_agg(customer_id, 100000, 0.001) AS f FROM blocked_customers;
-- one hash anti-join, with the filter kept in a table too
EXPLAIN (COSTS OFF)
SELECT o.*
  FROM orders o
 WHERE NOT EXISTS (
         SELECT 1 FROM blocked_customers b
          WHERE b.customer_id =
                CASE WHEN ((SELECT f FROM blocked_filter) @> o.customer_id) IS NOT FALSE
                     THEN o.customer_id END);
INSERT INTO anti
SELECT 'kept in a table, real', (SELECT count(*) FROM (
SELECT o.*
  FROM orders o
 WHERE NOT EXISTS (
         SELECT 1 FROM blocked_customers b
          WHERE b.customer_id =
                CASE WHEN ((SELECT f FROM blocked_filter) @> o.customer_id) IS NOT FALSE
                     THEN o.customer_id END)
) r),
       (SELECT count(*) FROM orders o
         WHERE NOT EXISTS (SELECT 1 FROM blocked_customers b WHERE b.customer_id = o.customer_id));
TRUNCATE blocked_filter;
INSERT INTO anti
SELECT 'kept in a table, empty', (SELECT count(*) FROM (
SELECT o.*
  FROM orders o
 WHERE NOT EXISTS (
         SELECT 1 FROM blocked_customers b
          WHERE b.customer_id =
                CASE WHEN ((SELECT f FROM blocked_filter) @> o.customer_id) IS NOT FALSE
                     THEN o.customer_id END)
) r),
       (SELECT count(*) FROM orders o
         WHERE NOT EXISTS (SELECT 1 FROM blocked_customers b WHERE b.customer_id = o.customer_id));
INSERT INTO blocked_filter VALUES (NULL);
INSERT INTO anti
SELECT 'kept in a table, null', (SELECT count(*) FROM (
SELECT o.*
  FROM orders o
 WHERE NOT EXISTS (
         SELECT 1 FROM blocked_customers b
          WHERE b.customer_id =
                CASE WHEN ((SELECT f FROM blocked_filter) @> o.customer_id) IS NOT FALSE
                     THEN o.customer_id END)
) r),
       (SELECT count(*) FROM orders o
         WHERE NOT EXISTS (SELECT 1 FROM blocked_customers b WHERE b.customer_id = o.customer_id));
TRUNCATE blocked_customers;
INSERT INTO anti
SELECT 'built in the query, no blocked', (SELECT count(*) FROM (
SELECT o.*
  FROM orders o
 WHERE NOT EXISTS (
         SELECT 1 FROM blocked_customers b
          WHERE b.customer_id =
                CASE WHEN ((SELECT bloom_agg(customer_id, 100000, 0.001)
                              FROM blocked_customers) @> o.customer_id) IS NOT FALSE
                     THEN o.customer_id END)
) r),
       (SELECT count(*) FROM orders o
         WHERE NOT EXISTS (SELECT 1 FROM blocked_customers b WHERE b.customer_id = o.customer_id));
-- each state answers as the plain NOT EXISTS; with blocked customers, some
-- orders are blocked (else the comparison would prove little)
SELECT state, n = plain AS same_as_plain, plain < (SELECT count(*) FROM orders) AS some_blocked
  FROM anti ORDER BY state;

--
-- Cache-penetration guard (a filter for 20,000 keys, not 20,000,000)
--
CREATE TABLE users (id bigint PRIMARY KEY);
INSERT INTO users SELECT g FROM generate_series(1, 1000) g;
CREATE TABLE key_guard (name text PRIMARY KEY, f bloom NOT NULL);
-- the per-request query, $1 the requested key: one row per call
CREATE FUNCTION may_exist(bigint) RETURNS SETOF boolean LANGUAGE sql STABLE AS $$
SELECT (SELECT f @> $1::bigint FROM key_guard WHERE name = 'users') IS NOT FALSE
       AS may_exist;
$$;
CREATE FUNCTION key_guard_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE key_guard
     SET f = f | (SELECT bloom_agg(id, 20000, 0.001) FROM new_rows)
   WHERE name = 'users';
  RETURN NULL;
END $$;
CREATE TRIGGER users_key_guard AFTER INSERT ON users
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION key_guard_add();
-- keys 1..2000 asked; which exist, by the plain lookup
CREATE VIEW guard_answers AS
SELECT k, EXISTS (SELECT 1 FROM users WHERE id = k) AS exists,
       (SELECT count(*) FROM may_exist(k)) AS answers,
       (SELECT bool_and(m) FROM may_exist(k) m) AS may
  FROM generate_series(1::bigint, 2000) k;
CREATE TABLE guard (state text, one_answer_each boolean, existing_all_maybe boolean,
                    absent bigint, absent_ruled_out bigint);
-- no filter row yet: every key "maybe"; with the filter, nearly every absent
-- key "no" (p = 0.001), but never an existing one
INSERT INTO guard
SELECT 'no filter', bool_and(answers = 1), bool_and(may) FILTER (WHERE exists),
       count(*) FILTER (WHERE NOT exists), count(*) FILTER (WHERE NOT exists AND NOT may)
  FROM guard_answers;
INSERT INTO key_guard
  SELECT 'users', bloom_agg(id, 20000, 0.001) FROM users;
INSERT INTO users SELECT g FROM generate_series(1001, 1100) g;   -- through the trigger
INSERT INTO guard
SELECT 'real', bool_and(answers = 1), bool_and(may) FILTER (WHERE exists),
       count(*) FILTER (WHERE NOT exists), count(*) FILTER (WHERE NOT exists AND NOT may)
  FROM guard_answers;
SELECT state, one_answer_each, existing_all_maybe, absent > 0 AS some_absent,
       CASE WHEN state = 'real' THEN absent_ruled_out >= 0.98 * absent ELSE absent_ruled_out = 0 END
         AS absent_as_expected
  FROM guard ORDER BY state;

--
-- A filter of live keys, kept up to date by a trigger (cuckoo)
--
CREATE TABLE sessions (id int PRIMARY KEY, token text);
INSERT INTO sessions SELECT g, md5(g::text) FROM generate_series(1, 300) g;
CREATE TABLE session_filter (f cuckoo NOT NULL);
-- the probe, a parameter in place of the literal token: one row per call
CREATE FUNCTION may_be_live(text) RETURNS SETOF boolean LANGUAGE sql STABLE AS $$
SELECT (SELECT f @> $1::text FROM session_filter) IS NOT FALSE AS may_be_live;
$$;
CREATE FUNCTION session_filter_sync() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  g cuckoo;
  k text;
BEGIN
  SELECT f INTO g FROM session_filter FOR UPDATE;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    FOR k IN SELECT token FROM old_rows LOOP
      g := cuckoo_delete(g, k);
    END LOOP;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    g := g | (SELECT cuckoo_agg(token, 1000000, 0.001) FROM new_rows);
  END IF;
  UPDATE session_filter SET f = g;
  RETURN NULL;
END $$;
CREATE TRIGGER sessions_ins AFTER INSERT ON sessions
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION session_filter_sync();
CREATE TRIGGER sessions_upd AFTER UPDATE ON sessions
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION session_filter_sync();
CREATE TRIGGER sessions_del AFTER DELETE ON sessions
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION session_filter_sync();
-- tokens 1..600 asked; which are live, by the plain lookup
CREATE VIEW live_answers AS
SELECT t, EXISTS (SELECT 1 FROM sessions WHERE token = t) AS live,
       (SELECT count(*) FROM may_be_live(t)) AS answers,
       (SELECT bool_and(m) FROM may_be_live(t) m) AS may
  FROM (SELECT md5(g::text) AS t FROM generate_series(1, 600) g) s;
CREATE TABLE live (state text, one_answer_each boolean, live_all_maybe boolean,
                   gone bigint, gone_ruled_out bigint);
-- no filter row yet, and writes meanwhile (the triggers find no filter)
DELETE FROM sessions WHERE id > 250;
INSERT INTO live
SELECT 'no filter', bool_and(answers = 1), bool_and(may) FILTER (WHERE live),
       count(*) FILTER (WHERE NOT live), count(*) FILTER (WHERE NOT live AND NOT may)
  FROM live_answers;
INSERT INTO session_filter
  SELECT cuckoo_empty(1000000, 0.001) | cuckoo_agg(token, 1000000, 0.001)
    FROM sessions;     -- the union keeps the size even if sessions is empty
-- writes through the triggers: inserts, deletes, updates, NULL tokens too
INSERT INTO sessions SELECT g, md5(g::text) FROM generate_series(251, 400) g;
INSERT INTO sessions VALUES (1001, NULL);
DELETE FROM sessions WHERE id % 5 = 0;
UPDATE sessions SET token = md5((id + 200)::text) WHERE id BETWEEN 301 AND 320;
UPDATE sessions SET token = NULL WHERE id = 1;
DELETE FROM sessions WHERE token IS NULL;
INSERT INTO live
SELECT 'real', bool_and(answers = 1), bool_and(may) FILTER (WHERE live),
       count(*) FILTER (WHERE NOT live), count(*) FILTER (WHERE NOT live AND NOT may)
  FROM live_answers;
-- no filter row: every token "maybe"; with the filter, nearly every token
-- not live "no" (p = 0.001), but never a live one
SELECT state, one_answer_each, live_all_maybe, gone > 0 AS some_gone,
       CASE WHEN state = 'real' THEN gone_ruled_out >= 0.98 * gone ELSE gone_ruled_out = 0 END
         AS gone_as_expected
  FROM live ORDER BY state;

DROP SCHEMA recipes CASCADE;
