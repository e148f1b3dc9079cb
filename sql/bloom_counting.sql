-- The counting and dleft layouts of bloom: sizing, add, delete, count,
-- merges, saturation, a full dleft filter, every validation rule of the two
-- layouts as a crafted value, I/O round trips and forced-parallel builds.

-- sizing: counting is classic with 4-bit counters, dleft about half of that
SELECT l AS layout, (bloom_params(100000, p, l)).*
  FROM unnest(ARRAY['classic', 'counting', 'dleft']) l,
       unnest(ARRAY[0.01, 0.001]::float8[]) p
 ORDER BY p DESC, l;
SELECT p,
       (bloom_params(100000, p, 'counting')).bits = 4 * (bloom_params(100000, p, 'classic')).bits
         AS counting_is_4x_classic,
       (bloom_params(100000, p, 'dleft')).bits <= 0.55 * (bloom_params(100000, p, 'counting')).bits
         AS dleft_at_most_055x_counting
  FROM unnest(ARRAY[0.01, 0.001, 0.0001]::float8[]) p;
SELECT bloom_params(100, 0.01, 'Counting');

-- an empty filter of each layout, and what bloom_info shows for it
SELECT l AS layout, i.bits, i.bytes, i.hashes, i.inserted, i.bits_set, i.cells,
       i.cells_used, i.saturated, i.load, i.fingerprint_bits
  FROM unnest(ARRAY['classic', 'counting', 'dleft']) l,
       LATERAL bloom_info(bloom_empty(1000, 0.01, l)) i;

-- add, count, delete
CREATE TABLE cnt_f AS
  SELECT l AS layout, bloom_add(bloom_add(bloom_add(bloom_empty(1000, 0.01, l), 5), 5), 7) AS f
    FROM unnest(ARRAY['counting', 'dleft']) l;
SELECT layout, bloom_count(f, 5) AS c5, bloom_count(f, 7) AS c7, bloom_count(f, 9) AS c9,
       f @> 5 AS has5, (bloom_info(f)).inserted, (bloom_info(f)).cells_used
  FROM cnt_f ORDER BY layout;
SELECT layout,
       bloom_count(bloom_delete(f, 5), 5) AS c5_after_one,
       bloom_count(bloom_delete(bloom_delete(f, 5), 5), 5) AS c5_after_two,
       bloom_delete(bloom_delete(f, 5), 5) @> 5 AS has5_after_two,
       bloom_delete(bloom_delete(f, 5), 5) @> 7 AS has7,
       (bloom_info(bloom_delete(f, 5))).inserted
  FROM cnt_f ORDER BY layout;
-- deleting what is certainly absent, or NULL, changes nothing; a NULL filter stays NULL
SELECT layout,
       bloom_delete(f, 12345)::bytea = f::bytea AS absent_unchanged,
       bloom_delete(f, NULL::int)::bytea = f::bytea AS null_unchanged,
       bloom_delete(NULL::bloom, 5) IS NULL AS null_filter
  FROM cnt_f ORDER BY layout;
-- the values must be of the filter's type
SELECT bloom_delete(f, 'x'::text) FROM cnt_f WHERE layout = 'dleft';
SELECT bloom_count(f, 'x'::text) FROM cnt_f WHERE layout = 'counting';

-- the bit layouts cannot delete, and count 1 or 0
SELECT bloom_delete(bloom_add(bloom_empty(100, 0.01), 1), 1);
SELECT bloom_delete(bloom_add(bloom_empty(100, 0.01, 'classic'), 1), 1);
SELECT bloom_count(bloom_add(bloom_empty(100, 0.01), 1), 1) AS present,
       bloom_count(bloom_add(bloom_empty(100, 0.01), 1), 2) AS absent;
-- the sizeless empty filter holds nothing: delete leaves it, count is 0
SELECT (bloom_info(bloom_delete(e, 1))).layout, bloom_count(e, 1)
  FROM (SELECT bloom_agg(g, 10, 0.01, 'dleft') AS e FROM generate_series(1, 0) g) s;

-- bloom_agg keeps every copy: counts per value against the truth
CREATE TABLE cnt_multi AS SELECT g % 50 AS v FROM generate_series(1, 75) g;
CREATE TABLE cnt_truth AS SELECT v, count(*) AS n FROM cnt_multi GROUP BY v;
SELECT layout,
       (SELECT bool_and(bloom_count(f, t.v) >= t.n) FROM cnt_truth t) AS never_below,
       (SELECT bool_and(bloom_count(f, t.v) = t.n) FROM cnt_truth t) AS exact,
       (bloom_info(f)).inserted
  FROM (SELECT l AS layout, (SELECT bloom_agg(v, 100, 0.01, l) FROM cnt_multi) AS f
          FROM unnest(ARRAY['counting', 'dleft']) l) a
 ORDER BY layout;

-- saturation: counters stick at 15 (counting) and 3 (dleft); the count is
-- then the filter's stored copies, never below the truth, and deletes keep
-- the value present
CREATE TABLE cnt_sat AS
  SELECT l AS layout, (SELECT bloom_agg(v, 100, 0.01, l)
                         FROM (SELECT 1 AS v FROM generate_series(1, 20)) c) AS f
    FROM unnest(ARRAY['counting', 'dleft']) l;
SELECT layout, bloom_count(f, 1) AS c1, (bloom_info(f)).saturated > 0 AS saturated,
       bloom_count(bloom_delete(f, 1), 1) AS after_delete
  FROM cnt_sat ORDER BY layout;

-- union adds counts, intersection keeps the smaller
CREATE TABLE cnt_ab AS
  SELECT l AS layout,
         (SELECT bloom_agg(g, 1000, 0.01, l) FROM generate_series(1, 300) g) AS a,
         (SELECT bloom_agg(g, 1000, 0.01, l) FROM generate_series(201, 500) g) AS b
    FROM unnest(ARRAY['counting', 'dleft']) l;
SELECT layout,
       bloom_count(a | b, 100) AS u100, bloom_count(a | b, 250) AS u250,
       bloom_count(a | b, 400) AS u400,
       bloom_count(a & b, 100) AS i100, bloom_count(a & b, 250) AS i250,
       (bloom_info(a | b)).inserted AS u_inserted, (bloom_info(a & b)).inserted AS i_inserted
  FROM cnt_ab ORDER BY layout;
SELECT layout,
       (SELECT bool_and((a | b) @> g) FROM generate_series(1, 500) g) AS union_has_all,
       (SELECT bool_and((a & b) @> g) FROM generate_series(201, 300) g) AS intersect_has_common,
       (bloom_info(a | b)).cells_used AS u_cells_used
  FROM cnt_ab ORDER BY layout;
-- the dleft intersection is exact: values of one side only are gone
SELECT count(*) FILTER (WHERE (a & b) @> g) AS left_only_present
  FROM cnt_ab, generate_series(1, 200) g WHERE layout = 'dleft';
SELECT (bloom_union_agg(f) @> 5) AS has5, (bloom_info(bloom_union_agg(f))).inserted
  FROM (SELECT f FROM cnt_f WHERE layout = 'dleft'
        UNION ALL SELECT f FROM cnt_f WHERE layout = 'dleft') s;
-- layouts do not mix
SELECT bloom_add(bloom_empty(1000, 0.01, 'counting'), 1) | bloom_add(bloom_empty(1000, 0.01, 'classic'), 1);

-- a dleft filter sized for one value holds 32 at most
SELECT bloom_agg(g, 1, 0.001, 'dleft') FROM generate_series(1, 100) g;
SELECT (bloom_info(bloom_agg(g, 1, 0.001, 'dleft'))).cells_used FROM generate_series(1, 30) g;

-- text, binary and bytea round trips keep every byte and every count
CREATE TABLE cnt_io AS SELECT layout, f FROM cnt_ab CROSS JOIN LATERAL (SELECT a | b AS f) u;
CREATE TABLE cnt_io_bin (layout text, f bloom);
\copy cnt_io TO 'results/bloom_counting.bin' WITH (FORMAT binary)
\copy cnt_io_bin FROM 'results/bloom_counting.bin' WITH (FORMAT binary)
CREATE TABLE cnt_io_txt (layout text, f bloom);
\copy cnt_io TO 'results/bloom_counting.txt'
\copy cnt_io_txt FROM 'results/bloom_counting.txt'
SELECT i.layout, i.f::bytea = b.f::bytea AS binary_identical,
       i.f::bytea = t.f::bytea AS text_identical,
       (i.f::text)::bloom::bytea = i.f::bytea AS cast_identical,
       bloom_count(b.f, 250) AS c250
  FROM cnt_io i JOIN cnt_io_bin b USING (layout) JOIN cnt_io_txt t USING (layout) ORDER BY 1;

-- ---------------------------------------------------------------------
-- Crafted malformed values, one per validation rule of the two layouts.
-- Header: 5 layout | 12 hashes (dleft: fingerprint bits r) | 24 nbits (8)
-- ---------------------------------------------------------------------
CREATE FUNCTION cnt_patch(b bytea, off int, hex text) RETURNS bytea
  LANGUAGE sql IMMUTABLE STRICT
  AS $$ SELECT overlay(b PLACING decode(hex, 'hex') FROM off + 1) $$;
CREATE FUNCTION cnt_try_bytea(b bytea) RETURNS text LANGUAGE plpgsql AS $$
DECLARE detail text;
BEGIN
  PERFORM b::bloom;
  RETURN 'accepted';
EXCEPTION WHEN others THEN
  GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ' ' || SQLERRM || coalesce(' -- ' || nullif(detail, ''), '');
END $$;

-- the specimens: a counting filter of 64 counters (32 bytes of counters)
-- and a dleft filter of one bucket per sub-table with r = 5 (7-byte buckets)
CREATE TABLE cnt_specimen AS
  SELECT bloom_add(bloom_empty(10, 0.5, 'counting'), 1)::bytea AS c,
         bloom_add(bloom_empty(10, 0.5, 'dleft'), 1)::bytea AS d;
SELECT length(c) AS counting_bytes, (bloom_info(c::bloom)).bits AS counting_bits,
       length(d) AS dleft_bytes, (bloom_info(d::bloom)).bits AS dleft_bits,
       (bloom_info(d::bloom)).fingerprint_bits, c::bloom @> 1 AS c_valid, d::bloom @> 1 AS d_valid
  FROM cnt_specimen;
SELECT n, what, cnt_try_bytea(b) AS result FROM (VALUES
  -- counting: k in 1..64
  (1, 'counting k = 0',          (SELECT cnt_patch(c, 12, '0000') FROM cnt_specimen)),
  (2, 'counting k = 65',         (SELECT cnt_patch(c, 12, '4100') FROM cnt_specimen)),
  -- counting: nbits a positive multiple of 64 (192 + 32 = 224 bits, length to match)
  (3, 'counting nbits 224',      (SELECT substr(cnt_patch(c, 24, 'e000000000000000'), 1, 56 + 28) FROM cnt_specimen)),
  (4, 'counting nbits 0',        (SELECT substr(cnt_patch(c, 24, '0000000000000000'), 1, 56) FROM cnt_specimen)),
  -- counting: exact length
  (5, 'counting one byte short', (SELECT substr(c, 1, length(c) - 1) FROM cnt_specimen)),
  (6, 'counting one byte long',  (SELECT c || '\x00'::bytea FROM cnt_specimen)),
  -- dleft: r in 1..32
  (7, 'dleft r = 0',             (SELECT cnt_patch(d, 12, '0000') FROM cnt_specimen)),
  (8, 'dleft r = 33',            (SELECT cnt_patch(d, 12, '2100') FROM cnt_specimen)),
  -- dleft: nbits = 32 B (r + 2): 224 bits fit r = 5, not r = 6 (256 per bucket)
  (9, 'dleft r = 6',             (SELECT cnt_patch(d, 12, '0600') FROM cnt_specimen)),
  (10, 'dleft nbits 0',          (SELECT substr(cnt_patch(d, 24, '0000000000000000'), 1, 56) FROM cnt_specimen)),
  -- dleft: nbits = 32 B (r + 2) with B >= 1: 224 bits are 0 buckets of r = 32
  (11, 'dleft r = 32',           (SELECT cnt_patch(d, 12, '2000') FROM cnt_specimen)),
  -- dleft: exact length
  (12, 'dleft one byte short',   (SELECT substr(d, 1, length(d) - 1) FROM cnt_specimen)),
  -- layout 5 does not exist
  (13, 'layout 5',               (SELECT cnt_patch(d, 5, '05') FROM cnt_specimen)),
  -- the unbroken specimens
  (14, 'counting specimen',          (SELECT c FROM cnt_specimen)),
  (15, 'dleft specimen',             (SELECT d FROM cnt_specimen))
) AS t(n, what, b) ORDER BY n;
-- any cell pattern is a valid dleft array: a cell with counter 0 is empty
SELECT cnt_try_bytea(cnt_patch(d, 56, 'fcffffffffffff')) AS empty_cells_with_fingerprints,
       bloom_count(cnt_patch(d, 56, 'fcffffffffffff')::bloom, 1) AS c1
  FROM cnt_specimen;

-- ---------------------------------------------------------------------
-- Forced parallel builds: counting gives the serial bytes, dleft the
-- same values with the same counts (cells may differ with the order).
-- ---------------------------------------------------------------------
CREATE TABLE cnt_big (id int8);
INSERT INTO cnt_big SELECT g % 60000 FROM generate_series(1, 100000) g;
ANALYZE cnt_big;
SET max_parallel_workers_per_gather = 0;
CREATE TABLE cnt_serial_result AS
  SELECT bloom_agg(id, 60000, 0.01, 'counting') AS counting,
         bloom_agg(id, 60000, 0.01, 'dleft') AS dleft
    FROM cnt_big;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF)
  SELECT bloom_agg(id, 60000, 0.01, 'counting'), bloom_agg(id, 60000, 0.01, 'dleft') FROM cnt_big;
CREATE TABLE cnt_parallel_result AS
  SELECT bloom_agg(id, 60000, 0.01, 'counting') AS counting,
         bloom_agg(id, 60000, 0.01, 'dleft') AS dleft
    FROM cnt_big;
RESET parallel_leader_participation;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
RESET max_parallel_workers_per_gather;
SELECT p.counting::bytea = s.counting::bytea AS counting_identical,
       (bloom_info(p.dleft)).inserted = (bloom_info(s.dleft)).inserted AS dleft_same_inserted,
       (bloom_info(p.dleft)).cells_used = (bloom_info(s.dleft)).cells_used AS dleft_same_cells_used,
       (SELECT bool_and(bloom_count(p.dleft, g) = bloom_count(s.dleft, g))
          FROM generate_series(0, 59999) g) AS dleft_same_counts,
       (SELECT bool_and(bloom_count(p.dleft, g) >= 1 + (g BETWEEN 1 AND 39999)::int)
          FROM generate_series(0, 59999) g) AS dleft_counts_at_least_truth
  FROM cnt_parallel_result p, cnt_serial_result s;
