-- ALTER INDEX ... SET / RESET (...) on the amqfilter index of a partitioned
-- table: PostgreSQL's own statement (refused where DDL is, seen by event
-- triggers, tagged ALTER INDEX), run on every partition's index, whether the
-- library is loaded already (the hook) or the statement is a session's
-- first (the extension's event trigger loads it); each path is taken after
-- \c, which starts a backend that has not loaded the library (whether one
-- has shows in its settings: amqfilter.index_seed exists once it has).
SET client_min_messages = warning;
CREATE TABLE ao (id int, k int8) PARTITION BY RANGE (id);
CREATE TABLE ao_1 PARTITION OF ao FOR VALUES FROM (0) TO (1000);
CREATE TABLE ao_2 PARTITION OF ao FOR VALUES FROM (1000) TO (3000) PARTITION BY RANGE (id);
CREATE TABLE ao_2a PARTITION OF ao_2 FOR VALUES FROM (1000) TO (2000);
CREATE TABLE ao_2b PARTITION OF ao_2 FOR VALUES FROM (2000) TO (3000);
INSERT INTO ao SELECT g, g FROM generate_series(0, 2999) g;
CREATE INDEX ao_k ON ao USING amqfilter (k);
-- a btree next to it, whose options stay PostgreSQL's business
CREATE INDEX ao_id ON ao (id);
RESET client_min_messages;

-- the options of every index of the tree, the partitioned ones (I) first
CREATE FUNCTION ao_options() RETURNS TABLE (index regclass, kind "char", options text[])
LANGUAGE sql AS $$
  SELECT c.oid::regclass, c.relkind, c.reloptions
    FROM pg_partition_tree('ao_k') t JOIN pg_class c ON c.oid = t.relid
   ORDER BY t.level, c.relname $$;
-- what a user's ddl_command_end trigger sees of ALTER INDEX statements
CREATE TABLE ao_ddl (n serial, tag text, object_type text, identity text);
CREATE FUNCTION ao_record() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ao_ddl (tag, object_type, identity)
  SELECT command_tag, object_type, object_identity FROM pg_event_trigger_ddl_commands();
END $$;
CREATE EVENT TRIGGER ao_record ON ddl_command_end WHEN TAG IN ('ALTER INDEX')
  EXECUTE FUNCTION ao_record();
-- the extension's event trigger: fires for ALTER INDEX, also as a replica
SELECT evtevent, evtenabled, evttags, evtfoid::regproc
  FROM pg_event_trigger WHERE evtname = 'amqfilter_partitioned_index_options';

-- a session's first statement: the tag is ALTER INDEX, and every index of
-- the tree, the one in between too, has the options
\c
\set QUIET off
ALTER INDEX ao_k SET (false_positive_rate = 0.02, max_generations = 8);
\set QUIET on
SELECT current_setting('amqfilter.index_seed', true) IS NOT NULL AS library_loaded;
SELECT * FROM ao_options();
-- the event trigger saw one ALTER INDEX, of the partitioned index
SELECT tag, object_type, identity FROM ao_ddl ORDER BY n;

-- the library loaded: the hook's path, the same statement
\set QUIET off
ALTER INDEX ao_k RESET (max_generations);
\set QUIET on
SELECT * FROM ao_options();
SELECT tag, object_type, identity FROM ao_ddl ORDER BY n;
TRUNCATE ao_ddl;

-- a read-only transaction refuses it, as PostgreSQL refuses DDL, with
-- nothing changed: a session's first statement, then with the library loaded
\c
BEGIN READ ONLY;
ALTER INDEX ao_k SET (false_positive_rate = 0.03);
COMMIT;
SELECT current_setting('amqfilter.index_seed', true) IS NOT NULL AS library_loaded;
LOAD 'amqfilter';
BEGIN READ ONLY;
ALTER INDEX ao_k SET (false_positive_rate = 0.03);
COMMIT;
SET default_transaction_read_only = on;
ALTER INDEX ao_k RESET (false_positive_rate);
RESET default_transaction_read_only;
SELECT * FROM ao_options();
SELECT count(*) AS recorded FROM ao_ddl;

-- the locks of the options (AccessExclusiveLock) on every index of the
-- tree, in a session's first statement too
\c
BEGIN;
ALTER INDEX ao_k SET (max_generations = 4);
SELECT t.relid::regclass AS index,
       bool_or(l.mode = 'AccessExclusiveLock') AS access_exclusive
  FROM pg_partition_tree('ao_k') t
  LEFT JOIN pg_locks l ON l.relation = t.relid AND l.pid = pg_backend_pid()
 GROUP BY t.relid, t.level ORDER BY t.level, t.relid::regclass::text;
ROLLBACK;
-- and a partition's index, altered alone as a session's first statement,
-- takes it too (PostgreSQL picks the lock before it opens the index: the
-- event trigger has loaded the library, and its options, by then)
\c
BEGIN;
ALTER INDEX ao_1_k_idx SET (max_generations = 4);
SELECT mode FROM pg_locks
 WHERE relation = 'ao_1_k_idx'::regclass AND pid = pg_backend_pid() ORDER BY 1;
ROLLBACK;

-- only the owner: a non-owner is refused before any lock, as a session's
-- first statement and with the library loaded
CREATE ROLE regress_ao_other;
\c
SET ROLE regress_ao_other;
ALTER INDEX ao_k SET (false_positive_rate = 0.05);
SELECT current_setting('amqfilter.index_seed', true) IS NOT NULL AS library_loaded;
ALTER INDEX ao_k SET (false_positive_rate = 0.05);
RESET ROLE;
SELECT count(*) AS changed FROM ao_options() WHERE options::text ~ '0.05';

-- an index in between reaches its own subtree only
ALTER INDEX ao_2_k_idx SET (max_generations = 3);
SELECT * FROM ao_options();
ALTER INDEX ao_k RESET (false_positive_rate, max_generations);
SELECT * FROM ao_options();

-- from PL/pgSQL, whose cached statement is used read-only: in a session's
-- first statement, and again with the library loaded
CREATE FUNCTION ao_set() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  ALTER INDEX ao_k SET (false_positive_rate = 0.04);
END $$;
\c
SELECT ao_set();
SELECT current_setting('amqfilter.index_seed', true) IS NOT NULL AS library_loaded;
SELECT count(*) AS set FROM ao_options() WHERE options = '{false_positive_rate=0.04}';
ALTER INDEX ao_k RESET (false_positive_rate);
SELECT ao_set();
SELECT count(*) AS set FROM ao_options() WHERE options = '{false_positive_rate=0.04}';

-- a partition attached later gets the options in the index PostgreSQL
-- makes for it
CREATE TABLE ao_3 (id int, k int8);
INSERT INTO ao_3 SELECT g, g FROM generate_series(3000, 3999) g;
ALTER TABLE ao ATTACH PARTITION ao_3 FOR VALUES FROM (3000) TO (4000);
SELECT c.reloptions FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
 WHERE x.indrelid = 'ao_3'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'amqfilter');
SELECT target_false_positive_rate FROM amqfilter_index_info('ao_3_k_idx');
ALTER INDEX ao_k RESET (false_positive_rate);

-- in parallel mode, refused
CREATE FUNCTION ao_set_parallel() RETURNS int LANGUAGE plpgsql PARALLEL SAFE AS $$
BEGIN
  ALTER INDEX ao_k SET (false_positive_rate = 0.06);
  RETURN 1;
END $$;
-- force_parallel_mode before PostgreSQL 16, debug_parallel_query since
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                       THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'on', false) AS parallel;
\set VERBOSITY terse
SELECT ao_set_parallel();
\set VERBOSITY default
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                       THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'off', false) AS parallel;
SELECT count(*) AS changed FROM ao_options() WHERE options IS NOT NULL;

-- under session_replication_role = replica, a session's first statement
\c
SET session_replication_role = replica;
ALTER INDEX ao_k SET (max_generations = 5);
RESET session_replication_role;
SELECT count(*) AS set FROM ao_options() WHERE options = '{max_generations=5}';
ALTER INDEX ao_k RESET (max_generations);

-- with the extension's event trigger disabled, a session with the library
-- loaded still sets the options, after PostgreSQL ran the statement (its
-- ddl_command_end triggers saw no command then); a session's first
-- statement is PostgreSQL's alone, which refuses options on a partitioned
-- index
TRUNCATE ao_ddl;
ALTER EVENT TRIGGER amqfilter_partitioned_index_options DISABLE;
\c
LOAD 'amqfilter';
ALTER INDEX ao_k SET (false_positive_rate = 0.07);
SELECT count(*) AS set FROM ao_options() WHERE options = '{false_positive_rate=0.07}';
SELECT tag, object_type, identity FROM ao_ddl ORDER BY n;
\c
ALTER INDEX ao_k RESET (false_positive_rate);
SELECT current_setting('amqfilter.index_seed', true) IS NOT NULL AS library_loaded;
ALTER EVENT TRIGGER amqfilter_partitioned_index_options ENABLE ALWAYS;
ALTER INDEX ao_k RESET (false_positive_rate);
SELECT count(*) AS set FROM ao_options() WHERE options IS NOT NULL;

-- other ALTER INDEX statements are PostgreSQL's own (here a session's first)
TRUNCATE ao_ddl;
\c
ALTER INDEX ao_id SET (fillfactor = 50);
ALTER INDEX ao_1_k_idx SET (false_positive_rate = 0.08);
ALTER INDEX ao_k RENAME TO ao_k2;
ALTER INDEX ao_k2 RENAME TO ao_k;
ALTER INDEX IF EXISTS ao_missing SET (false_positive_rate = 0.08);
ALTER INDEX ao_k SET (false_positive_rate = 0.08), SET TABLESPACE pg_default;
ALTER INDEX ao_k SET (false_positive_rate = 2);
ALTER INDEX ao_k SET (no_such_option = 1);
SELECT * FROM ao_options();
SELECT tag, object_type, identity FROM ao_ddl ORDER BY n;
ALTER INDEX ao_1_k_idx RESET (false_positive_rate);

-- the event trigger is the extension's: DROP EXTENSION removes it
BEGIN;
SET client_min_messages = warning;
DROP EXTENSION amqfilter CASCADE;
RESET client_min_messages;
SELECT count(*) AS left_behind FROM pg_event_trigger
 WHERE evtname = 'amqfilter_partitioned_index_options';
ROLLBACK;
-- the function refuses to be called other than by an event trigger
SELECT amqfilter_partitioned_index_options();

DROP EVENT TRIGGER ao_record;
DROP TABLE ao, ao_ddl;
DROP FUNCTION ao_options(), ao_record(), ao_set(), ao_set_parallel();
DROP ROLE regress_ao_other;
