--
-- The filter index knows where: a present key reads the few blocks its
-- entries name, on a plain table too; answers stay exact through keys in
-- many ranges, deletes, rollbacks and a table that outgrows its ranges.
--
SET client_min_messages = warning;
-- answers for absent values are shown: the same seed every run
SET amqfilter.index_seed = 20260103;

-- Heap blocks a query's bitmap heap scans read, from EXPLAIN ANALYZE.
CREATE FUNCTION pg_temp.heap_blocks(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	line text;
	total bigint := 0;
	m text[];
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		FOR m IN SELECT regexp_matches(line, '(exact|lossy)=([0-9]+)', 'g') LOOP
			total := total + m[2]::bigint;
		END LOOP;
	END LOOP;
	RETURN total;
END $$;
-- The plan's first node, for a query.
CREATE FUNCTION pg_temp.top_node(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		RETURN regexp_replace(line, '^[ ->]*', '');
	END LOOP;
END $$;

-- A plain table of 200,000 rows: a random id, a text key, a payload.
CREATE TABLE rt (id int8, k text, payload text);
INSERT INTO rt SELECT (g::int8 * 2654435761) % 1000000007, 'key' || g, repeat('x', 40)
  FROM generate_series(1, 200000) g;
CREATE INDEX rt_id ON rt USING amqfilter (id);
CREATE INDEX rt_k ON rt USING amqfilter (k);
ANALYZE rt;
CREATE TABLE rt_plain AS SELECT * FROM rt;
CREATE INDEX ON rt_plain (id);
CREATE INDEX ON rt_plain (k);

SELECT generations, entries, everywhere, pages_per_range,
	   ranges = (pg_relation_size('rt') / 8192) AS one_range_a_block,
	   false_positive_rate <= target_false_positive_rate AS within_target, saturated
  FROM amqfilter_index_info('rt_id');
-- 4 bytes an entry at 85% load and 10% headroom: about a fifth of the btree
SELECT pg_relation_size('rt_id') < 0.3 * pg_relation_size('rt_plain_id_idx') AS small_id,
	   pg_relation_size('rt_k') < 0.3 * pg_relation_size('rt_plain_k_idx') AS small_k;

-- The planner picks the index for a present key, with a literal and in a
-- generic plan, and the scan reads a block or two, not the table
SELECT pg_temp.top_node('SELECT * FROM rt WHERE id = 2654435761 % 1000000007');
SELECT pg_temp.heap_blocks('SELECT * FROM rt WHERE id = 2654435761 % 1000000007') BETWEEN 1 AND 16 AS few_blocks;
SELECT pg_temp.heap_blocks($$SELECT * FROM rt WHERE k = 'key77777'$$) BETWEEN 1 AND 16 AS few_blocks;
PREPARE rt_q(int8) AS SELECT payload FROM rt WHERE id = $1;
SET plan_cache_mode = force_generic_plan;
SELECT pg_temp.top_node('EXECUTE rt_q(2654435761 % 1000000007)');
SELECT pg_temp.heap_blocks('EXECUTE rt_q(2654435761 % 1000000007)') BETWEEN 1 AND 16 AS few_blocks;
RESET plan_cache_mode;
-- an absent key reads nothing
SELECT pg_temp.heap_blocks('SELECT * FROM rt WHERE id = -1') AS absent_blocks;

-- Exactly the btree's answers for 3,000 keys, present and absent
SET enable_seqscan = off;
SELECT count(*) AS mismatches
  FROM generate_series(1, 3000) g,
	   LATERAL (SELECT (g::int8 * 7 * 2654435761) % 1000000007 AS v) x
 WHERE (SELECT count(*) FROM rt WHERE id = x.v) <> (SELECT count(*) FROM rt_plain WHERE id = x.v);
SELECT count(*) AS mismatches
  FROM generate_series(1, 3000) g
 WHERE (SELECT count(*) FROM rt WHERE k = 'key' || (g * 97)) <>
	   (SELECT count(*) FROM rt_plain WHERE k = 'key' || (g * 97));
SELECT count(*) FROM rt WHERE id = ANY (ARRAY[2654435761 % 1000000007, 5308871522 % 1000000007, -1]);
SELECT count(*) FROM rt_plain WHERE id = ANY (ARRAY[2654435761 % 1000000007, 5308871522 % 1000000007, -1]);
RESET enable_seqscan;

-- A key in many ranges: past four, its entries become a span, its first
-- range to its last, and its lookups read the blocks between: here the
-- 5,000 short rows appended go to the room the table's pages had left (the
-- free space map has it), from its 11th block to its last.  Built again,
-- a key found in more than an eighth of the table is "everywhere" instead (one
-- entry, much the same blocks).  Answers stay exact.  Keys in a few ranges
-- keep their ranges.
INSERT INTO rt SELECT 42, 'many', 'y' FROM generate_series(1, 5000);
INSERT INTO rt SELECT 43, 'few', 'y' FROM generate_series(1, 3);
SELECT everywhere AS no_everywhere FROM amqfilter_index_info('rt_id');
SET enable_seqscan = off;
SELECT count(*) FROM rt WHERE id = 42;
SELECT count(*) FROM rt WHERE k = 'many';
SELECT pg_temp.heap_blocks('SELECT * FROM rt WHERE id = 42') <=
	   (SELECT max((ctid::text::point)[0]) - min((ctid::text::point)[0]) + 1
		  FROM rt WHERE id = 42) AS reads_its_span;
SELECT count(*) FROM rt WHERE id = 43;
SELECT pg_temp.heap_blocks('SELECT * FROM rt WHERE id = 43') BETWEEN 1 AND 16 AS few_blocks;
RESET enable_seqscan;
REINDEX INDEX rt_id;
SELECT everywhere AS one_everywhere FROM amqfilter_index_info('rt_id');
SET enable_seqscan = off;
SELECT count(*) FROM rt WHERE id = 42;
SELECT pg_temp.heap_blocks('SELECT * FROM rt WHERE id = 43') BETWEEN 1 AND 16 AS few_blocks;
RESET enable_seqscan;

-- Deletes and rollbacks leave entries: "maybe" for a range whose rows are
-- gone, never a wrong answer
DELETE FROM rt WHERE id = 2654435761 % 1000000007;
BEGIN;
INSERT INTO rt VALUES (-77, 'rolled back', 'z');
ROLLBACK;
SET enable_seqscan = off;
SELECT count(*) FROM rt WHERE id = 2654435761 % 1000000007;
SELECT count(*) FROM rt WHERE id = -77;
-- (a rolled-back row's key: its batch is dropped, or written as a "maybe")
SELECT bloom_index_contains('rt_id', -77::int8);
VACUUM rt;
SELECT count(*) FROM rt WHERE id = 2654435761 % 1000000007;
RESET enable_seqscan;

-- pages_per_range: ranges of 8 blocks read a range's blocks
CREATE INDEX rt_id8 ON rt USING amqfilter (id) WITH (pages_per_range = 8);
SELECT pages_per_range, ranges = (pg_relation_size('rt') / 8192 + 7) / 8 AS ranges_of_8
  FROM amqfilter_index_info('rt_id8');
SET enable_seqscan = off;
SET enable_indexscan = off;
DROP INDEX rt_id;
SELECT pg_temp.heap_blocks('SELECT * FROM rt WHERE id = 3 * 2654435761 % 1000000007') BETWEEN 8 AND 24 AS a_range;
SELECT count(*) FROM rt WHERE id = 3 * 2654435761 % 1000000007;
RESET enable_seqscan;
RESET enable_indexscan;
ALTER INDEX rt_id8 SET (pages_per_range = -1);
DROP TABLE rt, rt_plain;

-- Built empty at a rate whose fingerprints leave 4,094 range numbers, and
-- loaded past 4,094 blocks: later generations number larger ranges, and
-- every key is found.
CREATE TABLE rg (id int8, pad text);
CREATE INDEX rg_id ON rg USING amqfilter (id) WITH (false_positive_rate = 1e-6);
INSERT INTO rg SELECT g, repeat('p', 60) FROM generate_series(1, 100000) g;
INSERT INTO rg SELECT g, repeat('p', 60) FROM generate_series(100001, 400000) g;
INSERT INTO rg SELECT g, repeat('p', 60) FROM generate_series(400001, 800000) g;
SELECT pg_relation_size('rg') / 8192 > 4094 AS past_the_range_numbers,
	   generations > 1 AS grew, pages_per_range > 1 AS larger_ranges
  FROM amqfilter_index_info('rg_id');
SELECT count(*) AS missed FROM rg WHERE NOT bloom_index_contains('rg_id', id);
SET enable_seqscan = off;
SELECT count(*) AS mismatches FROM generate_series(1, 800000, 997) v
 WHERE (SELECT count(*) FROM rg WHERE id = v) <> 1;
SELECT pg_temp.heap_blocks('SELECT * FROM rg WHERE id = 777777') < 64 AS few_blocks;
RESET enable_seqscan;
DROP TABLE rg;
