--
-- amqfilter_index_candidates on the index of a partitioned table names
-- every partition it cannot rule out: a partition whose index rules the
-- value out is left out; one the index does not cover (a foreign table, one
-- whose index is missing or not attached) or whose index cannot answer is
-- named.
--
SET client_min_messages = warning;
-- answers for absent values are shown: the same seed every run
SET amqfilter.index_seed = 20260105;

-- a foreign partition, through postgres_fdw to this server
CREATE EXTENSION postgres_fdw;
DO $$
BEGIN
	EXECUTE format('CREATE SERVER cand_loop FOREIGN DATA WRAPPER postgres_fdw
						OPTIONS (dbname %L, port %L, host %L)',
				   current_database(), current_setting('port'),
				   split_part(current_setting('unix_socket_directories'), ',', 1));
END $$;
CREATE USER MAPPING FOR CURRENT_USER SERVER cand_loop;

CREATE TABLE cand (k int8, v text) PARTITION BY RANGE (k);
CREATE TABLE cand_1 PARTITION OF cand FOR VALUES FROM (0) TO (1000);
CREATE TABLE cand_2 PARTITION OF cand FOR VALUES FROM (1000) TO (2000);
CREATE TABLE cand_remote (k int8, v text);
CREATE FOREIGN TABLE cand_3 PARTITION OF cand FOR VALUES FROM (2000) TO (3000)
	SERVER cand_loop OPTIONS (table_name 'cand_remote');
-- a partition that is partitioned itself: a local and a foreign partition
CREATE TABLE cand_4 PARTITION OF cand FOR VALUES FROM (3000) TO (4000) PARTITION BY RANGE (k);
CREATE TABLE cand_4a PARTITION OF cand_4 FOR VALUES FROM (3000) TO (3500);
CREATE TABLE cand_remote_4b (k int8, v text);
CREATE FOREIGN TABLE cand_4b PARTITION OF cand_4 FOR VALUES FROM (3500) TO (4000)
	SERVER cand_loop OPTIONS (table_name 'cand_remote_4b');
INSERT INTO cand_1 SELECT g, 'v' || g FROM generate_series(0, 999) g;
INSERT INTO cand_2 SELECT g, 'v' || g FROM generate_series(1000, 1999) g;
INSERT INTO cand_remote SELECT g, 'v' || g FROM generate_series(2000, 2999) g;
INSERT INTO cand_4a SELECT g, 'v' || g FROM generate_series(3000, 3499) g;
INSERT INTO cand_remote_4b SELECT g, 'v' || g FROM generate_series(3500, 3999) g;
-- the index covers the local partitions (PostgreSQL skips foreign ones)
CREATE INDEX cand_k ON cand USING amqfilter (k) WITH (false_positive_rate = 0.0001);
SELECT c.relname, i.indexrelid IS NOT NULL AS has_index
  FROM pg_class c LEFT JOIN pg_index i ON i.indrelid = c.oid
 WHERE c.relname ~ '^cand_[0-9]' AND c.relkind IN ('r', 'p', 'f') ORDER BY 1;

-- a value of a local partition: that partition and the foreign ones, which
-- nothing rules out; never the partitioned cand_4, which holds no rows
SELECT c FROM amqfilter_index_candidates('cand_k', 500::int8) c ORDER BY c::text;
-- a value a foreign partition holds: named
SELECT tableoid::regclass AS holder FROM cand WHERE k = 2500;
SELECT c FROM amqfilter_index_candidates('cand_k', 2500::int8) c ORDER BY c::text;
SELECT c FROM amqfilter_index_candidates('cand_k', 3700::int8) c ORDER BY c::text;
-- every row's partition is named for its value, local or foreign
SELECT count(*) AS values_checked,
       bool_and(tableoid::regclass IN (SELECT amqfilter_index_candidates('cand_k', k))) AS named
  FROM cand WHERE k % 37 = 0;
-- a partition whose index cannot answer (invalid) is named, for any value
UPDATE pg_index SET indisvalid = false
 WHERE indexrelid = (SELECT indexrelid FROM pg_index WHERE indrelid = 'cand_2'::regclass);
SELECT c FROM amqfilter_index_candidates('cand_k', 500::int8) c ORDER BY c::text;
UPDATE pg_index SET indisvalid = true
 WHERE indexrelid = (SELECT indexrelid FROM pg_index WHERE indrelid = 'cand_2'::regclass);

-- an index made ON ONLY the partitioned table: one partition's index
-- attached, one's not, one partition without any; the partitioned index
-- stays invalid
CREATE TABLE cando (k int8) PARTITION BY RANGE (k);
CREATE TABLE cando_1 PARTITION OF cando FOR VALUES FROM (0) TO (1000);
CREATE TABLE cando_2 PARTITION OF cando FOR VALUES FROM (1000) TO (2000);
CREATE TABLE cando_3 PARTITION OF cando FOR VALUES FROM (2000) TO (3000);
INSERT INTO cando SELECT g FROM generate_series(0, 2999) g;
CREATE INDEX cando_k ON ONLY cando USING amqfilter (k) WITH (false_positive_rate = 0.0001);
CREATE INDEX cando_1_k ON cando_1 USING amqfilter (k) WITH (false_positive_rate = 0.0001);
ALTER INDEX cando_k ATTACH PARTITION cando_1_k;
CREATE INDEX cando_2_k ON cando_2 USING amqfilter (k) WITH (false_positive_rate = 0.0001);
SELECT indisvalid FROM pg_index WHERE indexrelid = 'cando_k'::regclass;
-- cando_2's index is not the partitioned index's, cando_3 has none: named
SELECT c FROM amqfilter_index_candidates('cando_k', 1500::int8) c ORDER BY c::text;
SELECT c FROM amqfilter_index_candidates('cando_k', 2500::int8) c ORDER BY c::text;
SELECT c FROM amqfilter_index_candidates('cando_k', 500::int8) c ORDER BY c::text;
SELECT count(*) AS values_checked,
       bool_and(tableoid::regclass IN (SELECT amqfilter_index_candidates('cando_k', k))) AS named
  FROM cando WHERE k % 37 = 0;
-- once attached, cando_2's index answers for it
ALTER INDEX cando_k ATTACH PARTITION cando_2_k;
SELECT c FROM amqfilter_index_candidates('cando_k', 500::int8) c ORDER BY c::text;

-- the partitioned table's privileges, as for a query of it
CREATE ROLE cand_reader;
GRANT SELECT ON cand TO cand_reader;
SET ROLE cand_reader;
SELECT c FROM amqfilter_index_candidates('cand_k', 2500::int8) c ORDER BY c::text;
RESET ROLE;
CREATE ROLE cand_nobody;
SET ROLE cand_nobody;
SELECT count(*) FROM amqfilter_index_candidates('cand_k', 2500::int8);
RESET ROLE;

DROP TABLE cand, cando, cand_remote, cand_remote_4b;
DROP ROLE cand_reader;
DROP ROLE cand_nobody;
DROP EXTENSION postgres_fdw CASCADE;
