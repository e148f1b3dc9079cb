--
-- Lanes (index format 5): a value whose rows are scattered over the table
-- (a fact's part key, 5 rows each; a supplier's, about 100) keeps every
-- block range it is in, 2 to a lane, and with one block a range, its rows'
-- classes (16 runs of offsets): a lookup reads its blocks, and of each about one
-- row in 16.  Before, such a value was "everywhere" (a lookup read the
-- table) and the planner left the index alone.
--
SET client_min_messages = notice;
SET max_parallel_workers_per_gather = 0;
SET amqfilter.index_seed = 20261129;
LOAD 'amqfilter';

CREATE TABLE il (id int8, part int4, supp int4, pad text);
INSERT INTO il SELECT g, (hashint8(g) & 65535) % 20000, (hashint8(g * 7) & 65535) % 1000,
	   repeat('x', 60)
  FROM generate_series(1, 100000) g;
CREATE INDEX il_part ON il USING amqfilter (part);
CREATE INDEX il_supp ON il USING amqfilter (supp);
ANALYZE il;
-- one entry a value and block, or one a row class of its rows there (up
-- to 3); none "everywhere", one block a range
SELECT i.index_name, i.pages_per_range, i.everywhere,
	   i.entries BETWEEN n.pairs - 5 AND n.most AS entry_a_block,
	   i.entries > n.pairs AS some_two
  FROM (SELECT *, 'il_part' AS index_name FROM amqfilter_index_info('il_part')
		UNION ALL SELECT *, 'il_supp' FROM amqfilter_index_info('il_supp')) i
  JOIN (SELECT index_name, count(*) AS pairs, sum(least(rows, 3)) AS most
		  FROM (SELECT 'il_part' AS index_name, count(*) AS rows FROM il
				 GROUP BY part, (ctid::text::point)[0]
				UNION ALL
				SELECT 'il_supp', count(*) FROM il GROUP BY supp, (ctid::text::point)[0]) g
		 GROUP BY index_name) n USING (index_name)
 ORDER BY 1;
-- (a value's rows of one block and class share an entry; values whose
-- fingerprints match in a page may share a few)
-- no value missed
SELECT count(*) FILTER (WHERE NOT bloom_index_contains('il_part', part)) AS part_missed,
	   count(*) FILTER (WHERE NOT bloom_index_contains('il_supp', supp)) AS supp_missed
  FROM il;

CREATE FUNCTION pg_temp.scan(q text, OUT blocks bigint, OUT removed bigint, OUT rows_out bigint)
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	m text[];
BEGIN
	blocks := 0;
	removed := 0;
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		FOR m IN SELECT regexp_matches(line, '(exact|lossy)=([0-9]+)', 'g') LOOP
			blocks := blocks + m[2]::bigint;
		END LOOP;
		m := regexp_match(line, 'Rows Removed by Index Recheck: ([0-9]+)');
		IF m IS NOT NULL THEN
			removed := removed + m[1]::bigint;
		END IF;
		m := regexp_match(line, '(?:Bitmap Heap Scan|Index Scan using) .*actual rows=([0-9]+)');
		IF m IS NOT NULL THEN
			rows_out := m[1]::bigint;
		END IF;
	END LOOP;
END $$;

-- A supplier's lookup reads its blocks (a false match may add one), and
-- rechecks about one row in 16 of them (a block holds about 70): at all
-- 70, it would remove 69 rows a block.  First as a bitmap heap scan, then
-- as a plain index scan, which fetches the same rows one by one.
SET enable_seqscan = off;
SET enable_indexscan = off;
SELECT s.blocks - its.blocks BETWEEN 0 AND 2 AS its_blocks,
	   s.rows_out = its.rows AS its_rows,
	   s.removed < 16 * its.rows AS few_rechecked
  FROM pg_temp.scan('SELECT * FROM il WHERE supp = 7') s,
	   (SELECT count(DISTINCT (ctid::text::point)[0]) AS blocks, count(*) AS rows
		  FROM il WHERE supp = 7) its;
SELECT s.blocks - its.blocks BETWEEN 0 AND 2 AS its_blocks, s.rows_out = its.rows AS its_rows
  FROM pg_temp.scan('SELECT * FROM il WHERE part = 4242') s,
	   (SELECT count(DISTINCT (ctid::text::point)[0]) AS blocks, count(*) AS rows
		  FROM il WHERE part = 4242) its;
RESET enable_indexscan;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM il WHERE supp = 7;
SELECT s.rows_out = its.rows AS its_rows, s.removed < 16 * its.rows AS few_rechecked
  FROM pg_temp.scan('SELECT * FROM il WHERE supp = 7') s,
	   (SELECT count(*) AS rows FROM il WHERE supp = 7) its;
RESET enable_bitmapscan;
RESET enable_seqscan;

-- Rows written together (an order's 4 lines, of one customer) are of a
-- few row classes (runs of offsets): a customer's lookup rechecks about
-- those runs of its blocks, not the whole blocks (with offsets modulo 32,
-- its 4 lines would be of 4 classes, and each block whole)
CREATE TABLE il_orders (id int8, cust int4, pad text);
INSERT INTO il_orders SELECT g, (hashint8(g / 4) & 65535) % 5000, repeat('o', 60)
  FROM generate_series(0, 99999) g;
CREATE INDEX il_orders_cust ON il_orders USING amqfilter (cust);
ANALYZE il_orders;
SET enable_seqscan = off;
SET enable_indexscan = off;
SELECT s.blocks - its.blocks BETWEEN 0 AND 2 AS its_blocks, s.rows_out = its.rows AS its_rows,
	   s.removed < 2 * its.rows AS few_rechecked
  FROM pg_temp.scan('SELECT * FROM il_orders WHERE cust = 42') s,
	   (SELECT count(DISTINCT (ctid::text::point)[0]) AS blocks, count(*) AS rows
		  FROM il_orders WHERE cust = 42) its;
RESET enable_indexscan;
RESET enable_seqscan;

-- The planner knows: a few parts' rows through a nested loop over the index
CREATE TABLE il_few AS SELECT g * 37 AS part FROM generate_series(1, 20) g;
ANALYZE il_few;
EXPLAIN (COSTS OFF) SELECT sum(il.id) FROM il_few f JOIN il ON il.part = f.part;
SELECT sum(il.id) = (SELECT sum(il.id) FROM il WHERE part IN (SELECT part FROM il_few))
  FROM il_few f JOIN il ON il.part = f.part;

-- Writes: rows of the same values at the table's end add ranges to their
-- lanes (and new lanes), updates in place keep their rows found
INSERT INTO il SELECT g, (hashint8(g) & 65535) % 20000, (hashint8(g * 7) & 65535) % 1000,
	   repeat('y', 60)
  FROM generate_series(100001, 130000) g;
UPDATE il SET pad = repeat('z', 60) WHERE id % 97 = 0;
SELECT count(*) FILTER (WHERE NOT bloom_index_contains('il_part', part)) AS part_missed,
	   count(*) FILTER (WHERE NOT bloom_index_contains('il_supp', supp)) AS supp_missed
  FROM il;
-- (through both generations, each row once: plain index scans, then bitmaps)
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT (SELECT count(*) FROM il WHERE supp IN (3, 7, 999)) AS through_index,
	   (SELECT count(*) FROM il WHERE supp + 0 IN (3, 7, 999)) AS through_table;
SELECT (SELECT sum(id) FROM il WHERE part IN (1, 37, 4242, 19999)) AS through_index,
	   (SELECT sum(id) FROM il WHERE part + 0 IN (1, 37, 4242, 19999)) AS through_table;
SELECT sum(il.id) = (SELECT sum(id) FROM il WHERE part + 0 IN (SELECT part FROM il_few))
  FROM il_few f JOIN il ON il.part = f.part;
RESET enable_bitmapscan;
SET enable_indexscan = off;
SELECT (SELECT count(*) FROM il WHERE supp IN (3, 7, 999)) AS through_index,
	   (SELECT count(*) FROM il WHERE supp + 0 IN (3, 7, 999)) AS through_table;
SELECT (SELECT sum(id) FROM il WHERE part IN (1, 37, 4242, 19999)) AS through_index,
	   (SELECT sum(id) FROM il WHERE part + 0 IN (1, 37, 4242, 19999)) AS through_table;
-- No page ran out of room (it would answer "everywhere": a lookup of its
-- values would read the table): a batch's 30 rows of a supplier reach its
-- lane together, and it takes 2 of them; the generation is full before
-- its pages are, and the writes went on in a new one.
SELECT i.saturated, i.generations > 1 AS grew
  FROM (SELECT * FROM amqfilter_index_info('il_part')
		UNION ALL SELECT * FROM amqfilter_index_info('il_supp')) i;
SELECT s.blocks - its.blocks BETWEEN 0 AND 2 AS its_blocks, s.rows_out = its.rows AS its_rows
  FROM pg_temp.scan('SELECT * FROM il WHERE supp = 7') s,
	   (SELECT count(DISTINCT (ctid::text::point)[0]) AS blocks, count(*) AS rows
		  FROM il WHERE supp = 7) its;
RESET enable_indexscan;
RESET enable_seqscan;

-- Rows written after the build at offsets past every offset it saw (wide
-- rows, then narrow ones of the same values, few enough to stay in the
-- build's generation, which has the row classes): a lookup returns a row
-- class's offsets up to the metapage's greatest, which the writes raise
CREATE TABLE il_off (id int8, k int4, pad text);
INSERT INTO il_off SELECT g, (hashint8(g) & 65535) % 4000, repeat('w', 600)
  FROM generate_series(1, 20000) g;
CREATE INDEX il_off_k ON il_off USING amqfilter (k);
SELECT max((ctid::text::point)[1]) < 20 AS few_a_block FROM il_off;
INSERT INTO il_off SELECT g, (hashint8(g) & 65535) % 4000, ''
  FROM generate_series(20001, 21500) g;
SELECT max((ctid::text::point)[1]) > 50 AS many_a_block FROM il_off;
SET enable_seqscan = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM generate_series(0, 3999) v JOIN il_off ON il_off.k = v;
SELECT count(*) AS through_index FROM generate_series(0, 3999) v JOIN il_off ON il_off.k = v;
SET enable_indexscan = off;
SELECT count(*) AS through_bitmaps FROM generate_series(0, 3999) v JOIN il_off ON il_off.k = v;
RESET enable_indexscan;
SELECT generations FROM amqfilter_index_info('il_off_k');
RESET enable_seqscan;
RESET enable_hashjoin;
RESET enable_mergejoin;

-- A plain index scan skips the blocks a VACUUM cut off the table's end,
-- whose entries the index keeps (a bitmap heap scan skips them too)
CREATE TABLE il_cut (id int8, k int4, pad text);
INSERT INTO il_cut SELECT g, (hashint8(g) & 65535) % 2000, repeat('c', 60)
  FROM generate_series(1, 40000) g;
CREATE INDEX il_cut_k ON il_cut USING amqfilter (k);
SELECT generations, pages_per_range, everywhere FROM amqfilter_index_info('il_cut_k');
DELETE FROM il_cut WHERE id > 20000;
VACUUM il_cut;
SELECT pg_relation_size('il_cut') < 300 * 8192 AS cut;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM il_cut WHERE k IN (5, 1999);
SELECT (SELECT count(*) FROM il_cut WHERE k IN (5, 1999)) AS through_index,
	   (SELECT count(*) FROM il_cut WHERE k + 0 IN (5, 1999)) AS through_table;
RESET enable_bitmapscan;
RESET enable_seqscan;

-- A value past an eighth of the table's blocks is "everywhere"
CREATE TABLE il_wide (id int8, k int4, pad text);
INSERT INTO il_wide SELECT g, CASE WHEN g % 3 = 0 THEN 0 ELSE (hashint8(g) & 65535) % 20000 END,
	   repeat('x', 60)
  FROM generate_series(1, 100000) g;
CREATE INDEX il_wide_k ON il_wide USING amqfilter (k);
SELECT everywhere FROM amqfilter_index_info('il_wide_k');
SELECT count(*) FILTER (WHERE NOT bloom_index_contains('il_wide_k', k)) AS missed FROM il_wide;

DROP TABLE il, il_few, il_wide, il_off, il_cut, il_orders;
