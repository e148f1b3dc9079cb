/* amqfilter--0.2--0.3.sql: upgrade from 0.2 to 0.3 */

\echo Use "ALTER EXTENSION amqfilter UPDATE TO '0.3'" to load this file. \quit

--
-- Every SQL object added or changed in 0.3 is created here and in
-- amqfilter--0.3.sql alike; test/upgrade.sh checks that an upgraded
-- installation has exactly the objects of a fresh one.  Stored filters and
-- filter indexes are unchanged.
--

--
-- ALTER INDEX ... SET / RESET (...) on the amqfilter index of a partitioned
-- table sets the options of every partition's index (PostgreSQL refuses
-- options on partitioned indexes; src/index/index_options.c).  The event
-- trigger does it at the statement's ddl_command_start, and loads the
-- library when the statement is a session's first; every other ALTER INDEX
-- it leaves to PostgreSQL after a look at the statement.  ENABLE ALWAYS:
-- it must fire under session_replication_role = replica too.
--
CREATE FUNCTION amqfilter_partitioned_index_options() RETURNS event_trigger
	AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION amqfilter_partitioned_index_options() IS
	'the function of the event trigger amqfilter_partitioned_index_options: ALTER INDEX ... SET / RESET (...) on the amqfilter index of a partitioned table sets every partition''s index';

CREATE EVENT TRIGGER amqfilter_partitioned_index_options ON ddl_command_start
	WHEN TAG IN ('ALTER INDEX')
	EXECUTE FUNCTION amqfilter_partitioned_index_options();
ALTER EVENT TRIGGER amqfilter_partitioned_index_options ENABLE ALWAYS;
COMMENT ON EVENT TRIGGER amqfilter_partitioned_index_options IS
	'ALTER INDEX ... SET / RESET (...) on the amqfilter index of a partitioned table sets the options of every partition''s index, and of the partitioned index for partitions created or attached later';
