/* amqfilter--0.1--0.2.sql: upgrade from 0.1 to 0.2 */

\echo Use "ALTER EXTENSION amqfilter UPDATE TO '0.2'" to load this file. \quit

--
-- Every SQL object added or changed in 0.2 is created here and in
-- amqfilter--0.2.sql alike; test/upgrade.sh checks that an upgraded
-- installation has exactly the objects of a fresh one.  Filters stored
-- under 0.1 keep their bytes: the format version is unchanged.
--
