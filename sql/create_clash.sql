--
-- CREATE EXTENSION where a table or type named bloom or cuckoo is in the
-- way: an error that names it and says how to install beside it.
--
SET client_min_messages = warning;
SELECT current_database() AS clash_home \gset
CREATE DATABASE amq_clash;
\c amq_clash
SET client_min_messages = warning;
CREATE TABLE bloom (id int);
-- (the error's context, the script's lines, differs between majors)
\set SHOW_CONTEXT never
CREATE EXTENSION amqfilter;
\set SHOW_CONTEXT errors
SELECT count(*) AS left_behind FROM pg_extension WHERE extname = 'amqfilter';
-- in a schema of its own, as the hint says, it installs beside the table
CREATE SCHEMA amq;
CREATE EXTENSION amqfilter SCHEMA amq;
SELECT amq.bloom_contains(amq.bloom_agg(g, 0.01), 7) FROM generate_series(1, 100) g;
SELECT count(*) AS rows_kept FROM bloom;
\c :clash_home
DROP DATABASE amq_clash;
