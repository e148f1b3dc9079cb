--
-- Partition filters: bloom_partition_build, bloom_partition_candidates,
-- bloom_partition_lookup, bloom_partition_status and the table
-- amqfilter_partition_filter.  Every error, then answers, then staleness by
-- every write path: a partition written after its build must be a candidate
-- until rebuilt.  (partition_stale: every other way a filter stops
-- describing its table; partition_security: privileges and row security.)
--
SET client_min_messages = notice;
\set SHOW_CONTEXT never

CREATE TABLE pf_orders (id bigint, customer_id bigint, note text, spot point)
	PARTITION BY RANGE (id);
CREATE TABLE pf_orders_1 PARTITION OF pf_orders FOR VALUES FROM (0) TO (1000);
CREATE TABLE pf_orders_2 PARTITION OF pf_orders FOR VALUES FROM (1000) TO (2000);
-- two levels: pf_orders_3 is itself partitioned
CREATE TABLE pf_orders_3 PARTITION OF pf_orders FOR VALUES FROM (2000) TO (4000)
	PARTITION BY RANGE (id);
CREATE TABLE pf_orders_3a PARTITION OF pf_orders_3 FOR VALUES FROM (2000) TO (3000);
CREATE TABLE pf_orders_3b PARTITION OF pf_orders_3 FOR VALUES FROM (3000) TO (4000);
-- an empty partition
CREATE TABLE pf_orders_4 PARTITION OF pf_orders FOR VALUES FROM (4000) TO (5000);
-- customers 0..699 in the first three leaves, 5000 + id in 3b
INSERT INTO pf_orders SELECT g, g % 700, 'n' || g FROM generate_series(0, 2999) g;
INSERT INTO pf_orders SELECT g, 5000 + g, 'n' || g FROM generate_series(3000, 3999) g;

-- Errors, each before any work
SELECT * FROM bloom_partition_build('pf_orders', 'no_such_column');
SELECT * FROM bloom_partition_build('pf_orders', 'spot');          -- point: no hash opclass
SELECT * FROM bloom_partition_build('pf_orders', 'tableoid');      -- system column
SELECT * FROM bloom_partition_build(NULL, 'customer_id');
SELECT * FROM bloom_partition_build('pf_orders', NULL);
SELECT * FROM bloom_partition_build('pf_orders', 'customer_id', NULL);
SELECT * FROM bloom_partition_build('pf_orders', 'customer_id', 1.5);
CREATE VIEW pf_view AS SELECT * FROM pf_orders;
SELECT * FROM bloom_partition_build('pf_view', 'customer_id');
CREATE TABLE pf_unstable (r regclass);
SELECT * FROM bloom_partition_build('pf_unstable', 'r');           -- hashes change on restore
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM bloom_partition_build('pf_orders', 'customer_id');
ROLLBACK;
SELECT * FROM bloom_partition_candidates('pf_orders', 'no_such_column', 1);
SELECT * FROM bloom_partition_candidates(NULL, 'customer_id', 1);
SELECT * FROM bloom_partition_candidates('pf_orders', NULL, 1);
SELECT * FROM bloom_partition_lookup(NULL::pf_orders, 'no_such_column', 1);
SELECT * FROM bloom_partition_lookup(NULL::pf_orders, NULL, 1);
SELECT * FROM bloom_partition_lookup(NULL::int, 'customer_id', 1);
SELECT * FROM bloom_partition_lookup(NULL::pf_view, 'customer_id', 1);
-- nothing was recorded by the failed calls
SELECT count(*) FROM amqfilter_partition_filter;

-- Before any build every leaf is a candidate, and lookups are exact
SELECT c FROM bloom_partition_candidates('pf_orders', 'customer_id', 42) c ORDER BY c::text;
SELECT count(*) FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 42);

-- Build: one row per leaf, sized for its distinct values; the empty leaf too
SELECT * FROM bloom_partition_build('pf_orders', 'customer_id') ORDER BY partition::text;
SELECT parent, partition, column_name, rows, distinct_values, bytes,
       atttype, attnum, (bloom_info(filter)).capacity
  FROM amqfilter_partition_filter ORDER BY partition::text;
SELECT partition, state, rows, distinct_values, bytes, built_at IS NOT NULL AS built
  FROM bloom_partition_status('pf_orders', 'customer_id') ORDER BY partition::text;
-- every leaf got the trigger, enabled ALWAYS (so that it fires under logical
-- replication apply, where session_replication_role = replica), and neither
-- deferred nor a constraint trigger: nothing is left pending for a writer
SELECT tgrelid::regclass, tgenabled, tgdeferrable, tginitdeferred, tgconstraint <> 0 AS constraint
  FROM pg_trigger WHERE tgname = 'amqfilter_partition_filter' ORDER BY tgrelid::regclass::text;
-- one NOTICE per partition was enough: quiet from here on
SET client_min_messages = warning;

-- Candidates: only where the value may be (0.1% false positives: none here)
SELECT c FROM bloom_partition_candidates('pf_orders', 'customer_id', 42) c ORDER BY c::text;
SELECT c FROM bloom_partition_candidates('pf_orders', 'customer_id', 5100) c ORDER BY c::text;
SELECT c FROM bloom_partition_candidates('pf_orders', 'customer_id', -1) c ORDER BY c::text;
-- an int4 value finds int8 members (same hash family); NULL equals nothing
SELECT c FROM bloom_partition_candidates('pf_orders', 'customer_id', 42::int) c ORDER BY c::text;
SELECT count(*) FROM bloom_partition_candidates('pf_orders', 'customer_id', NULL::bigint);
-- a sub-tree and a single leaf use the same filters
SELECT c FROM bloom_partition_candidates('pf_orders_3', 'customer_id', 5100) c ORDER BY c::text;
SELECT c FROM bloom_partition_candidates('pf_orders_3b', 'customer_id', 42) c ORDER BY c::text;
-- another column has no filters: every leaf is a candidate
SELECT count(*) FROM bloom_partition_candidates('pf_orders', 'id', 42);

-- Lookups return exactly the rows of the plain query, for every value
SELECT * FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 42) ORDER BY id;
SELECT count(*) AS mismatches
  FROM generate_series(-5, 5999) v
 WHERE (SELECT count(*) FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', v))
    <> (SELECT count(*) FROM pf_orders WHERE customer_id = v);

-- Names are quoted: odd identifiers work, and none injects SQL
CREATE TABLE "pf odd""name" ("the key" text, "x; DROP TABLE pf_orders; --" int)
	PARTITION BY LIST ("the key");
CREATE TABLE "pf odd""name a" PARTITION OF "pf odd""name" FOR VALUES IN ('a', 'b');
CREATE TABLE "pf odd""name c" PARTITION OF "pf odd""name" DEFAULT;
INSERT INTO "pf odd""name" VALUES ('a', 1), ('b', 2), ('c', 3), ('d''; --', 4);
SELECT partition, rows, distinct_values
  FROM bloom_partition_build('"pf odd""name"', 'the key') ORDER BY partition::text;
SELECT * FROM bloom_partition_lookup(NULL::"pf odd""name", 'the key', 'd''; --'::text);
SELECT * FROM bloom_partition_candidates('"pf odd""name"', 'the key', 'b'::text);
SELECT * FROM bloom_partition_lookup(NULL::"pf odd""name", 'x; DROP TABLE pf_orders; --', 3);
SELECT count(*) FROM pf_orders;

-- A plain table counts as its own only partition
CREATE TABLE pf_plain (k text);
INSERT INTO pf_plain SELECT 'k' || g FROM generate_series(1, 100) g;
SELECT partition, rows, distinct_values FROM bloom_partition_build('pf_plain', 'k');
SELECT * FROM bloom_partition_candidates('pf_plain', 'k', 'k7'::text);
SELECT count(*) FROM bloom_partition_candidates('pf_plain', 'k', 'nope'::text);

--
-- Staleness.  After each write path, the partition written is a candidate
-- for a value it did not hold at build time, and the lookup finds the row.
--
CREATE FUNCTION pf_stale() RETURNS TABLE (partition regclass, state text)
	LANGUAGE sql AS
	$$ SELECT partition, state FROM bloom_partition_status('pf_orders', 'customer_id')
	    WHERE state <> 'current' ORDER BY partition::text $$;
-- rebuilds every filter of pf_orders; (leaves, stale ones left)
CREATE FUNCTION pf_rebuild(OUT leaves bigint, OUT stale_left bigint)
	LANGUAGE plpgsql AS $$
BEGIN
	SELECT count(*) INTO leaves FROM bloom_partition_build('pf_orders', 'customer_id');
	SELECT count(*) INTO stale_left FROM pf_stale();
END $$;
SELECT * FROM pf_stale();

-- INSERT through the parent, into a sub-partitioned leaf
INSERT INTO pf_orders VALUES (2500, 900001, 'insert');
SELECT * FROM pf_stale();
SELECT c FROM bloom_partition_candidates('pf_orders', 'customer_id', 900001) c ORDER BY c::text;
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900001);

-- a rebuild of one leaf makes it fresh again; building through its parent
-- or the leaf records the same rows
SELECT partition, rows FROM bloom_partition_build('pf_orders_3a', 'customer_id');
SELECT * FROM pf_stale();
SELECT c FROM bloom_partition_candidates('pf_orders', 'customer_id', 900001) c ORDER BY c::text;

-- INSERT straight into a partition, and the rest of that transaction costs
-- nothing more: one mark per partition per transaction
BEGIN;
INSERT INTO pf_orders_1 VALUES (10, 900002, 'direct');
INSERT INTO pf_orders_1 SELECT g, 900002, 'direct' FROM generate_series(11, 20) g;
COMMIT;
SELECT * FROM pf_stale();
SELECT count(*) FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900002);

-- COPY through the parent
SELECT * FROM pf_rebuild();
SELECT * FROM pf_stale();
COPY pf_orders (id, customer_id, note) FROM STDIN;
1500	900003	copy
\.
SELECT * FROM pf_stale();
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900003);

-- COPY straight into a leaf
COPY pf_orders_3b (id, customer_id, note) FROM STDIN;
3500	900004	copy
\.
SELECT * FROM pf_stale();
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900004);

-- UPDATE in place, and UPDATE moving a row into another partition
SELECT * FROM pf_rebuild();
UPDATE pf_orders SET customer_id = 900005 WHERE id = 1;
SELECT * FROM pf_stale();
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900005);
SELECT * FROM pf_rebuild();
UPDATE pf_orders SET id = 4500 WHERE id = 2;     -- pf_orders_1 -> pf_orders_4 (empty)
SELECT * FROM pf_stale();
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 2);

-- INSERT ... ON CONFLICT: DO NOTHING on a conflict writes nothing;
-- DO UPDATE changes a row, or inserts one
CREATE TABLE pf_upsert (k int PRIMARY KEY, v bigint) PARTITION BY RANGE (k);
CREATE TABLE pf_upsert_1 PARTITION OF pf_upsert FOR VALUES FROM (0) TO (100);
CREATE TABLE pf_upsert_2 PARTITION OF pf_upsert FOR VALUES FROM (100) TO (200);
INSERT INTO pf_upsert SELECT g, g FROM generate_series(0, 199) g;
SELECT count(*) FROM bloom_partition_build('pf_upsert', 'v');
INSERT INTO pf_upsert VALUES (3, 900006) ON CONFLICT DO NOTHING;
SELECT partition, state FROM bloom_partition_status('pf_upsert', 'v') WHERE state <> 'current';
INSERT INTO pf_upsert VALUES (3, 900006) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;
SELECT partition, state FROM bloom_partition_status('pf_upsert', 'v') WHERE state <> 'current';
SELECT * FROM bloom_partition_lookup(NULL::pf_upsert, 'v', 900006);
SELECT count(*) FROM bloom_partition_build('pf_upsert', 'v');
INSERT INTO pf_upsert VALUES (150, 900007) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;
SELECT partition, state FROM bloom_partition_status('pf_upsert', 'v') WHERE state <> 'current';
SELECT * FROM bloom_partition_lookup(NULL::pf_upsert, 'v', 900007);

-- What logical replication apply does: writes under
-- session_replication_role = replica, where only ALWAYS triggers fire
SELECT * FROM pf_rebuild();
SET session_replication_role = replica;
INSERT INTO pf_orders VALUES (1600, 900008, 'replica');
RESET session_replication_role;
SELECT * FROM pf_stale();
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900008);

-- A write rolled back to a savepoint leaves no mark; the next write must
-- still mark (the per-transaction memory is forgotten with the savepoint)
SELECT * FROM pf_rebuild();
BEGIN;
SAVEPOINT s;
INSERT INTO pf_orders VALUES (1700, 900009, 'rolled back');
ROLLBACK TO SAVEPOINT s;
INSERT INTO pf_orders VALUES (1701, 900009, 'kept');
COMMIT;
SELECT * FROM pf_stale();
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900009);

-- The writing transaction sees its own rows, and its own record of the
-- write: its lookups scan what it wrote, also after rolling back a later
-- savepoint
SELECT * FROM pf_rebuild();
BEGIN;
INSERT INTO pf_orders VALUES (1900, 900016, 'own write');
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900016);
SAVEPOINT s;
INSERT INTO pf_orders VALUES (2900, 900017, 'rolled back');
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900017);
ROLLBACK TO SAVEPOINT s;
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900016);
SELECT * FROM pf_stale();
COMMIT;
SELECT * FROM pf_stale();

-- A write, a build and a write in one transaction: the second write marks
-- the filter the build just made
BEGIN;
INSERT INTO pf_orders VALUES (1800, 900010, 'before');
SELECT * FROM pf_rebuild();
INSERT INTO pf_orders VALUES (1801, 900011, 'after');
COMMIT;
SELECT * FROM pf_stale();
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900011);

-- A disabled or dropped trigger makes the partition a candidate, and so does
-- one enabled again: writes may have gone unrecorded in between
SELECT * FROM pf_rebuild();
ALTER TABLE pf_orders_2 DISABLE TRIGGER amqfilter_partition_filter;
SELECT c FROM bloom_partition_candidates('pf_orders', 'customer_id', -1) c ORDER BY c::text;
ALTER TABLE pf_orders_2 ENABLE TRIGGER amqfilter_partition_filter;   -- ORIGIN only: not enough
SELECT c FROM bloom_partition_candidates('pf_orders', 'customer_id', -1) c ORDER BY c::text;
ALTER TABLE pf_orders_2 ENABLE ALWAYS TRIGGER amqfilter_partition_filter;
SELECT * FROM pf_stale();
SELECT * FROM pf_rebuild();
SELECT tgenabled FROM pg_trigger
 WHERE tgrelid = 'pf_orders_2'::regclass AND tgname = 'amqfilter_partition_filter';
DROP TRIGGER amqfilter_partition_filter ON pf_orders_2;
SELECT c FROM bloom_partition_candidates('pf_orders', 'customer_id', -1) c ORDER BY c::text;
SELECT * FROM pf_rebuild();
SELECT count(*) FROM bloom_partition_candidates('pf_orders', 'customer_id', -1);

-- Partitions created or attached after the build are candidates
CREATE TABLE pf_orders_5 PARTITION OF pf_orders FOR VALUES FROM (5000) TO (6000);
INSERT INTO pf_orders VALUES (5500, 900012, 'new partition');
CREATE TABLE pf_orders_6 (LIKE pf_orders);
INSERT INTO pf_orders_6 VALUES (6500, 900013, 'attached');
ALTER TABLE pf_orders ATTACH PARTITION pf_orders_6 FOR VALUES FROM (6000) TO (7000);
SELECT c FROM bloom_partition_candidates('pf_orders', 'customer_id', -1) c ORDER BY c::text;
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900012);
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900013);
-- a partition whose columns are in another order still returns the parent's
CREATE TABLE pf_orders_7 (spot point, note text, customer_id bigint, id bigint);
INSERT INTO pf_orders_7 VALUES (NULL, 'reordered', 900014, 7500);
ALTER TABLE pf_orders ATTACH PARTITION pf_orders_7 FOR VALUES FROM (7000) TO (8000);
SELECT * FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900014);

-- DETACH and DROP of a partition do not break lookups
SELECT * FROM pf_rebuild();
ALTER TABLE pf_orders DETACH PARTITION pf_orders_2;
SELECT c FROM bloom_partition_candidates('pf_orders', 'customer_id', 42) c ORDER BY c::text;
DROP TABLE pf_orders_2;
DROP TABLE pf_orders_6;
SELECT c FROM bloom_partition_candidates('pf_orders', 'customer_id', 42) c ORDER BY c::text;
SELECT count(*) FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 42);
-- the next build forgets the rows of dropped partitions
SELECT * FROM pf_rebuild();
SELECT count(*) FROM amqfilter_partition_filter f
 WHERE NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = f.partition);
SELECT count(*) AS mismatches
  FROM generate_series(-5, 5999) v
 WHERE (SELECT count(*) FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', v))
    <> (SELECT count(*) FROM pf_orders WHERE customer_id = v);

--
-- Privileges: writers need none on the extension's tables; only owners
-- build filters; readers see the filters of tables they may read.
--
CREATE ROLE regress_amq_writer;
CREATE ROLE regress_amq_other;
GRANT INSERT, SELECT ON pf_orders TO regress_amq_writer;
SELECT * FROM pf_rebuild();
SET ROLE regress_amq_writer;
INSERT INTO pf_orders VALUES (10, 900015, 'by a writer');
-- the writer may not read the partitions: the lookup goes through the
-- parent, whose privileges apply, restricted to each candidate
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900015);
SELECT c FROM bloom_partition_candidates('pf_orders', 'customer_id', 900015) c ORDER BY c::text;
SELECT * FROM bloom_partition_build('pf_orders', 'customer_id');
-- nobody writes the filter table but the build
UPDATE amqfilter_partition_filter SET rows = 0;
DELETE FROM amqfilter_partition_filter;
INSERT INTO amqfilter_partition_filter SELECT * FROM amqfilter_partition_filter;
DELETE FROM amqfilter_partition_write;
RESET ROLE;
SELECT * FROM pf_stale();
SET ROLE regress_amq_other;
SELECT count(*) FROM amqfilter_partition_filter;
SELECT id FROM bloom_partition_lookup(NULL::pf_orders, 'customer_id', 900015);
RESET ROLE;
REVOKE ALL ON pf_orders FROM regress_amq_writer;
DROP ROLE regress_amq_writer;
DROP ROLE regress_amq_other;

DROP FUNCTION pf_rebuild();
DROP FUNCTION pf_stale();
DROP TABLE pf_orders, pf_upsert, "pf odd""name", pf_plain, pf_unstable CASCADE;
SELECT count(*) FROM amqfilter_partition_filter f
 WHERE EXISTS (SELECT FROM pg_class c WHERE c.oid = f.partition);
