--
-- Partition filters stop describing their table in more ways than by a
-- write: the column they summarize can become another one, its values can
-- hash differently, the storage can be rewritten, and writes can go
-- unrecorded.  For each class, a value that is there after the change must
-- be found by bloom_partition_lookup, every time.  Then what the tracking
-- must not break for writers, and lookups of values of other types.
--
-- The checks compare the lookup with the plain query (ps_missed: rows the
-- lookup missed), so that they read the same whatever the filters say.
--
SET client_min_messages = warning;
\set SHOW_CONTEXT never

CREATE TYPE ps_mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE ps (id int8, a int8, b int8, m ps_mood, t text) PARTITION BY RANGE (id);
CREATE TABLE ps_1 PARTITION OF ps FOR VALUES FROM (0) TO (1000);
CREATE TABLE ps_2 PARTITION OF ps FOR VALUES FROM (1000) TO (2000);
INSERT INTO ps SELECT g, g, 100000 + g, (ARRAY['sad', 'ok'])[1 + g % 2]::ps_mood, 't' || g
  FROM generate_series(0, 1999) g;

-- rows of ps whose column col equals v that the lookup does not return
CREATE FUNCTION ps_missed(col name, v anyelement) RETURNS bigint
	LANGUAGE plpgsql AS $$
DECLARE
	plain bigint;
	looked bigint;
BEGIN
	EXECUTE format('SELECT count(*) FROM ps WHERE %I = $1', col) INTO plain USING v;
	SELECT count(*) INTO looked FROM bloom_partition_lookup(NULL::ps, col, v);
	RETURN plain - looked;
END $$;
CREATE FUNCTION ps_states(col name) RETURNS TABLE (partition regclass, state text)
	LANGUAGE sql AS
	$$ SELECT partition, state FROM bloom_partition_status('ps', col) ORDER BY partition::text $$;

--
-- The column: filters are asked for by name, and names move
--
SELECT count(*) FROM bloom_partition_build('ps', 'a');
-- a and b swap names: "a" is the old b now, whose values the filter of a
-- never saw
ALTER TABLE ps RENAME COLUMN a TO tmp;
ALTER TABLE ps RENAME COLUMN b TO a;
ALTER TABLE ps RENAME COLUMN tmp TO b;
SELECT * FROM ps_states('a');
SELECT ps_missed('a', 100005::int8) AS swapped;
ALTER TABLE ps RENAME COLUMN a TO tmp;
ALTER TABLE ps RENAME COLUMN b TO a;
ALTER TABLE ps RENAME COLUMN tmp TO b;
-- renamed back: the filters describe "a" again
SELECT * FROM ps_states('a');
SELECT ps_missed('a', 5::int8) AS renamed_back;

-- a column dropped, and another added under its name, whose default fills
-- every row without a write
SELECT count(*) FROM bloom_partition_build('ps', 'b');
ALTER TABLE ps DROP COLUMN b;
ALTER TABLE ps ADD COLUMN b int8 DEFAULT 777;
SELECT * FROM ps_states('b');
SELECT ps_missed('b', 777::int8) AS readded;

-- the column's type changed without a rewrite: the filter is of another type
SELECT count(*) FROM bloom_partition_build('ps', 't');
ALTER TABLE ps ALTER COLUMN t TYPE varchar(20);
SELECT * FROM ps_states('t');
SELECT ps_missed('t', 't7'::varchar) AS retyped;
-- its collation
SELECT count(*) FROM bloom_partition_build('ps', 't');
ALTER TABLE ps ALTER COLUMN t TYPE varchar(20) COLLATE "C";
SELECT * FROM ps_states('t');
SELECT ps_missed('t', 't7'::varchar) AS recollated;

--
-- The storage: a rewrite fires no row trigger
--
SELECT count(*) FROM bloom_partition_build('ps', 'a');
ALTER TABLE ps ALTER COLUMN a TYPE int8 USING a + 1000000;
SELECT * FROM ps_states('a');
SELECT ps_missed('a', 1000005::int8) AS rewritten_using;
-- to another type, by a rewrite: the lookup scans, in the new type
SELECT count(*) FROM bloom_partition_build('ps', 'a');
ALTER TABLE ps ALTER COLUMN a TYPE numeric USING a - 1000000;
SELECT * FROM ps_states('a');
SELECT ps_missed('a', 5::numeric) AS rewritten_numeric;
ALTER TABLE ps ALTER COLUMN a TYPE int8;
-- VACUUM FULL, CLUSTER and TRUNCATE give the table new storage too (they
-- change no value, but a filter cannot tell)
SELECT count(*) FROM bloom_partition_build('ps', 'a');
VACUUM FULL ps_1;
CREATE INDEX ps_2_id ON ps_2 (id);
CLUSTER ps_2 USING ps_2_id;
SELECT * FROM ps_states('a');
SELECT count(*) FROM bloom_partition_build('ps', 'a');
TRUNCATE ps_2;
INSERT INTO ps_2 (id, a) VALUES (1500, 424242);
SELECT * FROM ps_states('a');
SELECT ps_missed('a', 424242::int8) AS truncated_refilled;

--
-- The type: enum values are hashed by label, which a rename changes
-- without touching a row
--
SELECT count(*) FROM bloom_partition_build('ps', 'm');
ALTER TYPE ps_mood RENAME VALUE 'ok' TO 'fine';
SELECT * FROM ps_states('m');
SELECT ps_missed('m', 'fine'::ps_mood) AS enum_renamed;
-- renamed back by another transaction: still not the filter's labels'
-- version, so still not trusted
ALTER TYPE ps_mood RENAME VALUE 'fine' TO 'ok';
SELECT * FROM ps_states('m');
SELECT ps_missed('m', 'ok'::ps_mood) AS enum_renamed_back;
-- a label added: the type's definition changed too
SELECT count(*) FROM bloom_partition_build('ps', 'm');
ALTER TYPE ps_mood ADD VALUE 'meh';
SELECT * FROM ps_states('m');

--
-- Writes that could go unrecorded
--
-- the trigger disabled for a load and enabled again
SELECT count(*) FROM bloom_partition_build('ps', 'a');
ALTER TABLE ps_1 DISABLE TRIGGER amqfilter_partition_filter;
INSERT INTO ps (id, a) VALUES (10, 900001);
ALTER TABLE ps_1 ENABLE ALWAYS TRIGGER amqfilter_partition_filter;
SELECT * FROM ps_states('a');
SELECT ps_missed('a', 900001::int8) AS trigger_reenabled;
-- the same inside the build's own transaction
BEGIN;
SELECT count(*) FROM bloom_partition_build('ps', 'a');
ALTER TABLE ps_2 DISABLE TRIGGER ALL;
INSERT INTO ps (id, a) VALUES (1010, 900002);
ALTER TABLE ps_2 ENABLE ALWAYS TRIGGER amqfilter_partition_filter;
COMMIT;
SELECT * FROM ps_states('a');
SELECT ps_missed('a', 900002::int8) AS trigger_reenabled_in_build;
-- the trigger replaced by one that never records
SELECT count(*) FROM bloom_partition_build('ps', 'a');
DROP TRIGGER amqfilter_partition_filter ON ps_1;
CREATE TRIGGER amqfilter_partition_filter AFTER INSERT OR UPDATE ON ps_1
	FOR EACH ROW WHEN (false) EXECUTE FUNCTION amqfilter_partition_mark();
ALTER TABLE ps_1 ENABLE ALWAYS TRIGGER amqfilter_partition_filter;
INSERT INTO ps (id, a) VALUES (11, 900003);
SELECT * FROM ps_states('a');
SELECT ps_missed('a', 900003::int8) AS trigger_replaced;
-- the next build replaces it with its own
SELECT count(*) FROM bloom_partition_build('ps', 'a');
SELECT pg_get_triggerdef(oid) ~ 'WHEN \(.*amqfilter_partition_written' AS records
  FROM pg_trigger WHERE tgrelid = 'ps_1'::regclass AND tgname = 'amqfilter_partition_filter';

-- the record of a write cannot be suppressed: calling the trigger's
-- condition by hand before writing only records the write early
SELECT count(*) FROM bloom_partition_build('ps', 'a');
BEGIN;
SELECT amqfilter_partition_written('ps_1');
INSERT INTO ps (id, a) VALUES (12, 900004);
COMMIT;
SELECT * FROM ps_states('a');
SELECT ps_missed('a', 900004::int8) AS condition_called_first;

-- a build rolled back to a savepoint: the rows written before it, in the
-- same transaction, are still recorded
SELECT count(*) FROM bloom_partition_build('ps', 'a');
BEGIN;
INSERT INTO ps (id, a) VALUES (13, 900005);
SAVEPOINT s;
SELECT count(*) FROM bloom_partition_build('ps', 'a');
ROLLBACK TO SAVEPOINT s;
SELECT ps_missed('a', 900005::int8) AS build_rolled_back_own;
COMMIT;
SELECT * FROM ps_states('a');
SELECT ps_missed('a', 900005::int8) AS build_rolled_back;
-- a write after a build in the same transaction is recorded again
BEGIN;
SELECT count(*) FROM bloom_partition_build('ps', 'a');
INSERT INTO ps (id, a) VALUES (14, 900006);
SELECT ps_missed('a', 900006::int8) AS written_after_build_own;
COMMIT;
SELECT ps_missed('a', 900006::int8) AS written_after_build;

--
-- Inheritance: each table's filter is of its own rows, and a child written,
-- added or attached later is read
--
CREATE TABLE pi (k int8);
CREATE TABLE pi_c1 () INHERITS (pi);
INSERT INTO pi VALUES (1), (2);
INSERT INTO pi_c1 VALUES (3), (4);
SELECT partition, rows FROM bloom_partition_build('pi', 'k') ORDER BY partition::text;
INSERT INTO pi_c1 VALUES (5);
CREATE TABLE pi_c2 () INHERITS (pi);
INSERT INTO pi_c2 VALUES (6);
CREATE TABLE pi_c3 (k int8);
INSERT INTO pi_c3 VALUES (7);
ALTER TABLE pi_c3 INHERIT pi;
SELECT partition, state FROM bloom_partition_status('pi', 'k') ORDER BY partition::text;
SELECT v, (SELECT count(*) FROM bloom_partition_lookup(NULL::pi, 'k', v)) AS found,
       (SELECT count(*) FROM pi WHERE k = v) AS there
  FROM generate_series(1, 8) v;
-- a child's filter stays current through the parent's build and a lookup
-- reads only the tables whose filter may hold the value
SELECT partition, rows FROM bloom_partition_build('pi', 'k') ORDER BY partition::text;
SELECT c FROM bloom_partition_candidates('pi', 'k', 6) c ORDER BY c::text;
SELECT c FROM bloom_partition_candidates('pi', 'k', 1) c ORDER BY c::text;

--
-- Writers keep every DDL they have: nothing is left pending after a write
--
SELECT count(*) FROM bloom_partition_build('ps', 'a');
BEGIN;
INSERT INTO ps (id, a) VALUES (20, 900010);
CREATE INDEX ps_1_a ON ps_1 (a);
ALTER TABLE ps_1 ADD CONSTRAINT ps_1_a CHECK (a <> -1);
ALTER TABLE ps_1 ALTER COLUMN t SET DEFAULT 'x';
INSERT INTO ps (id, a) VALUES (1020, 900011);
TRUNCATE ps_2;
INSERT INTO ps (id, a) VALUES (1021, 900012);
COMMIT;
SELECT * FROM ps_states('a');
SELECT ps_missed('a', 900010::int8) AS ddl_after_write;
SELECT ps_missed('a', 900012::int8) AS write_after_truncate;

--
-- Lookups of a value of another type compare it as "=" would, or say why
-- not before any work
--
SELECT count(*) FROM bloom_partition_build('ps', 'a');
-- a string is read as a literal of the column's type
SELECT count(*) FROM bloom_partition_lookup(NULL::ps, 'a', '5');
SELECT count(*) FROM ps WHERE a = '5';
SELECT c FROM bloom_partition_candidates('ps', 'a', '5') c;
SELECT count(*) FROM bloom_partition_lookup(NULL::ps, 'a', 'five');
-- an integer of another width is a member of the same family
SELECT count(*) FROM bloom_partition_lookup(NULL::ps, 'a', 5::int2);
-- a numeric is not converted (42.5 is not 43): an error naming the type
SELECT count(*) FROM bloom_partition_lookup(NULL::ps, 'a', 5::numeric);
SELECT count(*) FROM bloom_partition_candidates('ps', 'a', 5.5);
-- text and varchar compare as text
SELECT count(*) FROM bloom_partition_build('ps', 't');
SELECT count(*) FROM bloom_partition_lookup(NULL::ps, 't', 't7'::text);
SELECT count(*) FROM bloom_partition_lookup(NULL::ps, 't', 't7'::varchar);
SELECT count(*) FROM bloom_partition_lookup(NULL::ps, 't', 7);

-- a nondeterministic collation: the filter and the scan both compare under
-- the column's collation, whatever the caller's
CREATE COLLATION ps_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE pc (k text COLLATE ps_ci, id int) PARTITION BY RANGE (id);
CREATE TABLE pc_1 PARTITION OF pc FOR VALUES FROM (0) TO (100);
CREATE TABLE pc_2 PARTITION OF pc FOR VALUES FROM (100) TO (200);
INSERT INTO pc VALUES ('Alpha', 1), ('beta', 150);
SELECT partition, rows FROM bloom_partition_build('pc', 'k') ORDER BY partition::text;
SELECT k, id FROM bloom_partition_lookup(NULL::pc, 'k', 'ALPHA');
SELECT k, id FROM bloom_partition_lookup(NULL::pc, 'k', 'BETA'::text COLLATE "C");
SELECT c FROM bloom_partition_candidates('pc', 'k', 'alpha') c;
SELECT count(*) FROM bloom_partition_lookup(NULL::pc, 'k', 'gamma');

DROP TABLE ps, pi, pc CASCADE;
DROP COLLATION ps_ci;
DROP TYPE ps_mood;
DROP FUNCTION ps_missed(name, anyelement);
DROP FUNCTION ps_states(name);
