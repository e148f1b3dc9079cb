/* amqfilter--0.1--0.2.sql: upgrade from 0.1 to 0.2 */

\echo Use "ALTER EXTENSION amqfilter UPDATE TO '0.2'" to load this file. \quit

--
-- Every SQL object added or changed in 0.2 is created here and in
-- amqfilter--0.2.sql alike; test/upgrade.sh checks that an upgraded
-- installation has exactly the objects of a fresh one.  Filters stored
-- under 0.1 keep their bytes: the format version is unchanged.
--

-- bloom_info and cuckoo_info show what a filter's values are (element).
-- Looking that up reads the catalogs, so they are STABLE now.  Adding an
-- OUT column changes the result type, which only DROP and CREATE can do.
DROP FUNCTION bloom_info(bloom);
CREATE FUNCTION bloom_info(filter bloom,
	OUT layout text, OUT bits bigint, OUT bytes bigint, OUT hashes integer,
	OUT capacity bigint, OUT target_fpr double precision, OUT inserted bigint,
	OUT bits_set bigint, OUT est_distinct double precision,
	OUT est_fpr double precision, OUT element text,
	OUT cells bigint, OUT cells_used bigint, OUT saturated bigint,
	OUT load double precision, OUT fingerprint_bits integer)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_info(bloom) IS
	'geometry, counts, estimated distinct values, current false-positive rate, element type and, for the counting and dleft layouts, counters or cells used and saturated of a bloom filter';

DROP FUNCTION cuckoo_info(cuckoo);
CREATE FUNCTION cuckoo_info(filter cuckoo,
	OUT buckets bigint, OUT bucket_size integer, OUT fingerprint_bits integer,
	OUT bytes bigint, OUT capacity bigint, OUT target_fpr double precision,
	OUT items bigint, OUT load_factor double precision,
	OUT est_fpr double precision, OUT tables integer, OUT element text)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_info(cuckoo) IS
	'geometry, item count, load, current false-positive rate and element type of a cuckoo filter';

-- Planner estimates of probes of a filter known at plan time (see the README).
CREATE FUNCTION bloom_contains_sel(internal, oid, internal, integer) RETURNS double precision
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_contains_sel(internal, oid, internal, integer) IS
	'selectivity estimator of the @> and <@ operators of bloom filters';

CREATE FUNCTION bloom_contains_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_contains_support(internal) IS
	'planner support (selectivity) of bloom_contains and bloom_contained_by';

ALTER FUNCTION bloom_contains(bloom, anyelement) SUPPORT bloom_contains_support;
ALTER FUNCTION bloom_contained_by(anyelement, bloom) SUPPORT bloom_contains_support;
ALTER OPERATOR @> (bloom, anyelement) SET (RESTRICT = bloom_contains_sel);
ALTER OPERATOR <@ (anyelement, bloom) SET (RESTRICT = bloom_contains_sel);

-- Planner estimates of probes of a filter known at plan time (see the README).
CREATE FUNCTION cuckoo_contains_sel(internal, oid, internal, integer) RETURNS double precision
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_contains_sel(internal, oid, internal, integer) IS
	'selectivity estimator of the @> and <@ operators of cuckoo filters';

CREATE FUNCTION cuckoo_contains_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_contains_support(internal) IS
	'planner support (selectivity) of cuckoo_contains and cuckoo_contained_by';

ALTER FUNCTION cuckoo_contains(cuckoo, anyelement) SUPPORT cuckoo_contains_support;
ALTER FUNCTION cuckoo_contained_by(anyelement, cuckoo) SUPPORT cuckoo_contains_support;
ALTER OPERATOR @> (cuckoo, anyelement) SET (RESTRICT = cuckoo_contains_sel);
ALTER OPERATOR <@ (anyelement, cuckoo) SET (RESTRICT = cuckoo_contains_sel);

-- The counting and dleft layouts of bloom (format version unchanged: new
-- layout codes only), and the functions that delete and count copies.
COMMENT ON FUNCTION bloom_empty(bigint, double precision, text) IS
	'an empty bloom filter sized for n distinct values at false-positive rate p; layout ''blocked'' (default), ''classic'', ''counting'' or ''dleft''';
COMMENT ON AGGREGATE bloom_agg(anyelement, bigint, double precision, text) IS
	'bloom filter of the non-null values with the given layout (''blocked'', ''classic'', or ''counting'' or ''dleft'', which keep every copy)';

-- Not strict: a NULL value leaves the filter unchanged.
CREATE FUNCTION bloom_delete(filter bloom, value anyelement) RETURNS bloom
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_delete(bloom, anyelement) IS
	'a copy of the filter (layout ''counting'' or ''dleft'') with one copy of the value removed; unchanged if the value is not present or NULL';

CREATE FUNCTION bloom_count(filter bloom, value anyelement) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_count(bloom, anyelement) IS
	'copies of the value in a counting or dleft filter, never fewer than were added and not deleted; 1 if a blocked or classic filter may contain it, else 0';

--
-- Partition filters: one bloom filter per table of a partition or
-- inheritance tree, over one column, kept in an extension-owned table;
-- lookups read only the tables whose filter may hold a value.  A filter is
-- consulted only while it provably describes its table as the table is now
-- (src/partition_filter.c gives the rule); any other table is read.  Writes
-- are recorded by a trigger on each table with a filter
-- (src/partition_track.c says how, and what writers pay).
--
-- The extension is relocatable: its C functions find its tables in their
-- own schema at run time and name every object they use qualified; those
-- that run queries pin search_path as well.
--

CREATE TABLE amqfilter_partition_filter (
	parent regclass NOT NULL,
	partition regclass NOT NULL,
	column_name name NOT NULL,
	filter bloom NOT NULL,
	rows bigint NOT NULL,
	distinct_values bigint NOT NULL,
	built_at timestamptz NOT NULL,
	bytes bigint NOT NULL,
	-- what the filter was built from, compared with the catalogs by every
	-- lookup before the filter is consulted
	attnum smallint NOT NULL,
	atttype regtype NOT NULL,
	atttypmod integer NOT NULL,
	attcollation oid NOT NULL,
	hash_family bigint NOT NULL,
	type_version bigint NOT NULL,
	relfilenode oid NOT NULL,
	trigger_oid oid NOT NULL,
	trigger_xmin xid NOT NULL,
	trigger_tid tid NOT NULL,
	PRIMARY KEY (partition, column_name)
);
COMMENT ON TABLE amqfilter_partition_filter IS
	'one bloom filter per table and column, built by bloom_partition_build, with what it was built from; readable only by roles that may read every value it summarizes';

-- A filter summarizes every value of its column in its table: only a role
-- that could read them all may read it.  Nobody writes this table but
-- bloom_partition_build, which does so as its owner.
ALTER TABLE amqfilter_partition_filter ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON amqfilter_partition_filter TO PUBLIC;

CREATE TABLE amqfilter_partition_write (
	partition oid NOT NULL
);
CREATE INDEX amqfilter_partition_write_partition
	ON amqfilter_partition_write (partition);
COMMENT ON TABLE amqfilter_partition_write IS
	'tables written since their filters were built, recorded by their writers'' transactions; a table''s rows go with its next build';

CREATE FUNCTION amqfilter_partition_readable(partition regclass, column_name name)
	RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION amqfilter_partition_readable(regclass, name) IS
	'internal: true if the current role may read every value of the column in the table, through it or a table above it, without row security';

CREATE POLICY readers ON amqfilter_partition_filter FOR SELECT
	USING (amqfilter_partition_readable(partition, column_name));

CREATE FUNCTION amqfilter_partition_written(partition regclass) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION amqfilter_partition_written(regclass) IS
	'internal: condition of the partition filter trigger; records once per transaction that the table was written, and is false';

CREATE FUNCTION amqfilter_partition_mark() RETURNS trigger
	AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION amqfilter_partition_mark() IS
	'internal: the partition filter trigger''s function, which its condition makes unneeded';

CREATE FUNCTION bloom_partition_build(parent regclass, column_name name,
	p double precision DEFAULT 0.001,
	OUT partition regclass, OUT rows bigint, OUT distinct_values bigint,
	OUT bytes bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION bloom_partition_build(regclass, name, double precision) IS
	'builds one bloom filter per table of parent''s tree over column_name, sized for its distinct values, into amqfilter_partition_filter';

CREATE FUNCTION bloom_partition_status(parent regclass, column_name name,
	OUT partition regclass, OUT state text, OUT built_at timestamptz,
	OUT rows bigint, OUT distinct_values bigint, OUT bytes bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION bloom_partition_status(regclass, name) IS
	'each table of parent''s tree: whether lookups by the current role may consult its filter of column_name (current), or why they read the table';

CREATE FUNCTION bloom_partition_candidates(parent regclass, column_name name,
	value anycompatible)
	RETURNS SETOF regclass
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION bloom_partition_candidates(regclass, name, anycompatible) IS
	'the tables of parent''s tree that may hold rows whose column_name equals value: those whose filter may contain it, and all without a current filter';

CREATE FUNCTION bloom_partition_lookup(parent anyelement, column_name name,
	value anycompatible)
	RETURNS SETOF anyelement
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION bloom_partition_lookup(anyelement, name, anycompatible) IS
	'the rows of the table whose row type parent has (NULL::orders) whose column_name equals value, reading only the candidate tables';

-- Planner support of the merges: those of values that do not change from
-- row to row are computed once (see the README).
CREATE FUNCTION bloom_merge_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_merge_support(internal) IS
	'planner support of the bloom merges: a merge of values that do not change from row to row is computed once';

ALTER FUNCTION bloom_union(bloom, bloom) SUPPORT bloom_merge_support;
ALTER FUNCTION bloom_intersect(bloom, bloom) SUPPORT bloom_merge_support;

-- Planner support of the merges: those of values that do not change from
-- row to row are computed once (see the README).
CREATE FUNCTION cuckoo_merge_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_merge_support(internal) IS
	'planner support of the cuckoo merges: a merge of values that do not change from row to row is computed once';

ALTER FUNCTION cuckoo_union(cuckoo, cuckoo) SUPPORT cuckoo_merge_support;
