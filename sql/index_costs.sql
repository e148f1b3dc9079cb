--
-- The planner's estimate of an amqfilter index scan comes from what the
-- index knows: a value whose entry is "everywhere" (in more than 4 block
-- ranges) reads the whole table, every row of a block read is rechecked,
-- and a nested loop pays that at each of its loops.  An index that cannot
-- narrow lookups is left alone, and says so when it is built.
--
SET client_min_messages = notice;
SET max_parallel_workers_per_gather = 0;
SET amqfilter.index_seed = 20260107;
LOAD 'amqfilter';

-- 200 values, each over the whole table: every entry "everywhere"
CREATE TABLE ic_scattered (id int8, k int4, pad text);
INSERT INTO ic_scattered SELECT g, ((g::int8 * 7919) % 200)::int4, 'p' || g FROM generate_series(1, 200000) g;
-- 2,000 values, each in a block or two
CREATE TABLE ic_clustered (id int8, k int4, pad text);
INSERT INTO ic_clustered SELECT g, (g / 100)::int4, 'p' || g FROM generate_series(1, 200000) g;
CREATE TABLE ic_five AS SELECT g::int4 AS k FROM generate_series(1, 5) g;
-- the build says when it cannot narrow lookups
CREATE INDEX ic_scattered_k ON ic_scattered USING amqfilter (k);
CREATE INDEX ic_clustered_k ON ic_clustered USING amqfilter (k);
ANALYZE ic_scattered, ic_clustered, ic_five;
SELECT entries, everywhere FROM amqfilter_index_info('ic_scattered_k');
SELECT entries > 0 AS has_entries, everywhere FROM amqfilter_index_info('ic_clustered_k');

-- a join to a few rows: a nested loop over an index whose lookups read the
-- whole table would read it five times; the hash join reads it once
EXPLAIN (COSTS OFF) SELECT count(*) FROM ic_five f JOIN ic_scattered s ON s.k = f.k;
SELECT count(*) FROM ic_five f JOIN ic_scattered s ON s.k = f.k;
-- where a value is in a block or two, the nested loop over the index
EXPLAIN (COSTS OFF) SELECT count(*) FROM ic_five f JOIN ic_clustered s ON s.k = f.k;
SELECT count(*) FROM ic_five f JOIN ic_clustered s ON s.k = f.k;
-- a constant is probed: the same choices
EXPLAIN (COSTS OFF) SELECT count(*) FROM ic_scattered WHERE k = 7;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ic_clustered WHERE k = 7;

-- a table grown well past its build: its statistics say the same
INSERT INTO ic_scattered SELECT g, ((g::int8 * 7919) % 200)::int4, 'p' || g FROM generate_series(200001, 600000) g;
INSERT INTO ic_clustered SELECT g, (g / 100)::int4, 'p' || g FROM generate_series(200001, 600000) g;
ANALYZE ic_scattered, ic_clustered;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ic_five f JOIN ic_scattered s ON s.k = f.k;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ic_five f JOIN ic_clustered s ON s.k = f.k;
SELECT count(*) FROM ic_five f JOIN ic_clustered s ON s.k = f.k;

-- a table of a few ranges is read whole at little cost: nothing is said
CREATE TABLE ic_small AS SELECT g AS id, (g % 10)::int4 AS k FROM generate_series(1, 500) g;
CREATE INDEX ic_small_k ON ic_small USING amqfilter (k);

-- Keys of 4 or 5 rows each, scattered (a part key of a fact): up to 4
-- entries of a key share its two buckets, and a generation sized for the
-- entries alone ran out of room in pages (saturated: they answered
-- "everywhere" for every key, a rate of 0.27 against 0.01).  The build
-- fills the pages once without writing them, and makes the generation
-- larger while some would fill up.  Their index has lanes (index_lanes):
-- a key of 5 ranges keeps them all, none is "everywhere".
CREATE TABLE ic_part (id int8, pk int8, pad text);
INSERT INTO ic_part SELECT g, (hashint8(g) & 65535) % 23000, repeat('x', 20) FROM generate_series(1, 100000) g;
CREATE INDEX ic_part_pk ON ic_part USING amqfilter (pk);
SELECT saturated, false_positive_rate < target_false_positive_rate AS at_target,
       everywhere > 0 AS some_everywhere
  FROM amqfilter_index_info('ic_part_pk');
SELECT count(*) FILTER (WHERE NOT bloom_index_contains('ic_part_pk', pk)) AS missed FROM ic_part;

-- A date of an append-mostly table: 3,000 rows a day in about 25
-- consecutive blocks, in more than 4 ranges at one block a range: it keeps
-- a span, its first range to its last, not "everywhere".  Left to choose
-- pages_per_range, the build takes the size whose lookups read least (one
-- block here, as the option's 1): a lookup reads the date's blocks, and a
-- nested loop over the index is planned where it pays.  At 16 blocks a
-- range (as chosen before spans), it reads 2 or 3 ranges: 32 or 48 blocks.
CREATE TABLE ic_dates (id int8, d date, pad text);
INSERT INTO ic_dates SELECT g, date '2026-01-01' + (g / 3000)::int, repeat('x', 30)
  FROM generate_series(0, 299999) g;
CREATE INDEX ic_dates_d ON ic_dates USING amqfilter (d);
CREATE INDEX ic_dates_d1 ON ic_dates USING amqfilter (d) WITH (pages_per_range = 1);
ANALYZE ic_dates;
SELECT pages_per_range, everywhere, entries FROM amqfilter_index_info('ic_dates_d');
SELECT pages_per_range, everywhere, entries FROM amqfilter_index_info('ic_dates_d1');
DROP INDEX ic_dates_d1;
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
SET enable_seqscan = off;
SELECT pg_temp.heap_blocks($$SELECT * FROM ic_dates WHERE d = date '2026-02-01'$$) AS date_blocks,
	   (SELECT count(DISTINCT (ctid::text::point)[0]) FROM ic_dates WHERE d = date '2026-02-01') AS its_blocks;
RESET enable_seqscan;
-- Four rows of a date far from the rest (in the table's first block, its
-- last, and two between, as rows put in free space of other pages are):
-- the date keeps a span of its cluster and the four ranges beside it, and
-- a lookup reads its own blocks; a span of all its rows would take in the
-- whole table (a build keeps 4 ranges beside the span of a cluster).
CREATE TABLE ic_strays AS
SELECT g AS id, CASE WHEN g IN (5, 100000, 200000, 299990) THEN date '2026-02-01'
					 ELSE date '2026-01-01' + (g / 3000)::int END AS d, repeat('x', 30) AS pad
  FROM generate_series(0, 299999) g;
CREATE INDEX ic_strays_d ON ic_strays USING amqfilter (d);
SET enable_seqscan = off;
SELECT pg_temp.heap_blocks($$SELECT * FROM ic_strays WHERE d = date '2026-02-01'$$) AS date_blocks,
	   (SELECT count(DISTINCT (ctid::text::point)[0]) FROM ic_strays WHERE d = date '2026-02-01') AS its_blocks,
	   (SELECT count(*) FROM ic_strays WHERE d = date '2026-02-01') AS its_rows;
RESET enable_seqscan;
DROP TABLE ic_strays;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ic_five f JOIN ic_dates t ON t.d = date '2026-01-01' + f.k;
SELECT count(*) FROM ic_five f JOIN ic_dates t ON t.d = date '2026-01-01' + f.k;

DROP TABLE ic_scattered, ic_clustered, ic_five, ic_small, ic_part, ic_dates;
