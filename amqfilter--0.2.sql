/* amqfilter--0.2.sql: approximate-membership filters for SQL (full script of 0.2) */

\echo Use "CREATE EXTENSION amqfilter" to load this file. \quit

--
-- The bloom type.  Its bytes are specified in FORMAT.md; text is their
-- canonical base64, binary I/O and the bytea cast carry them as they are.
-- A well-sized filter is random bits: STORAGE external never wastes time
-- trying to compress it.
--
CREATE TYPE bloom;

CREATE FUNCTION bloom_in(cstring) RETURNS bloom
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_out(bloom) RETURNS cstring
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_recv(internal) RETURNS bloom
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_send(bloom) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE bloom (
	INPUT = bloom_in,
	OUTPUT = bloom_out,
	RECEIVE = bloom_recv,
	SEND = bloom_send,
	INTERNALLENGTH = VARIABLE,
	ALIGNMENT = int4,
	STORAGE = external
);

COMMENT ON TYPE bloom IS 'Bloom filter: a set that may report false positives but never false negatives';
COMMENT ON FUNCTION bloom_in(cstring) IS 'bloom input: canonical base64 of the serialized filter';
COMMENT ON FUNCTION bloom_out(bloom) IS 'bloom output: canonical base64 of the serialized filter';
COMMENT ON FUNCTION bloom_recv(internal) IS 'bloom binary input: the serialized filter, validated';
COMMENT ON FUNCTION bloom_send(bloom) IS 'bloom binary output: the serialized filter';

CREATE FUNCTION bloom_to_bytea(bloom) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_from_bytea(bytea) RETURNS bloom
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (bloom AS bytea) WITH FUNCTION bloom_to_bytea(bloom);
CREATE CAST (bytea AS bloom) WITH FUNCTION bloom_from_bytea(bytea);

COMMENT ON FUNCTION bloom_to_bytea(bloom) IS 'the serialized bytes of a bloom filter (FORMAT.md)';
COMMENT ON FUNCTION bloom_from_bytea(bytea) IS 'a bloom filter from serialized bytes, validated';

--
-- Building and probing
--
CREATE FUNCTION bloom_empty(n bigint, p double precision, layout text DEFAULT 'blocked')
	RETURNS bloom
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_empty(bigint, double precision, text) IS
	'an empty bloom filter sized for n distinct values at false-positive rate p; layout ''blocked'' (default), ''classic'', ''counting'' or ''dleft''';

-- Not strict: a NULL value leaves the filter unchanged.
CREATE FUNCTION bloom_add(filter bloom, value anyelement) RETURNS bloom
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_add(bloom, anyelement) IS
	'a copy of the filter with the value added; a NULL value is ignored';

-- Planner estimates of probes of a filter known at plan time (see the README).
CREATE FUNCTION bloom_contains_sel(internal, oid, internal, integer) RETURNS double precision
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_contains_sel(internal, oid, internal, integer) IS
	'selectivity estimator of the @> and <@ operators of bloom filters';

CREATE FUNCTION bloom_contains_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_contains_support(internal) IS
	'planner support (selectivity) of bloom_contains and bloom_contained_by';

-- Not strict: a NULL value leaves the filter unchanged.
CREATE FUNCTION bloom_delete(filter bloom, value anyelement) RETURNS bloom
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_delete(bloom, anyelement) IS
	'a copy of the filter (layout ''counting'' or ''dleft'') with one copy of the value removed; unchanged if the value is not present or NULL';

CREATE FUNCTION bloom_count(filter bloom, value anyelement) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_count(bloom, anyelement) IS
	'copies of the value in a counting or dleft filter, never fewer than were added and not deleted; 1 if a blocked or classic filter may contain it, else 0';

CREATE FUNCTION bloom_contains(filter bloom, value anyelement) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT bloom_contains_support;
COMMENT ON FUNCTION bloom_contains(bloom, anyelement) IS
	'false if the value was certainly never added; true if it may have been';

CREATE FUNCTION bloom_contained_by(value anyelement, filter bloom) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT bloom_contains_support;
COMMENT ON FUNCTION bloom_contained_by(anyelement, bloom) IS
	'bloom_contains with the arguments swapped, for the <@ operator';

CREATE OPERATOR @> (
	LEFTARG = bloom,
	RIGHTARG = anyelement,
	FUNCTION = bloom_contains,
	COMMUTATOR = <@,
	RESTRICT = bloom_contains_sel
);
COMMENT ON OPERATOR @> (bloom, anyelement) IS 'filter may contain the value';

CREATE OPERATOR <@ (
	LEFTARG = anyelement,
	RIGHTARG = bloom,
	FUNCTION = bloom_contained_by,
	COMMUTATOR = @>,
	RESTRICT = bloom_contains_sel
);
COMMENT ON OPERATOR <@ (anyelement, bloom) IS 'value may be contained in the filter';

--
-- Merging
--
-- Planner support of the merges: those of values that do not change from
-- row to row are computed once (see the README).
CREATE FUNCTION bloom_merge_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_merge_support(internal) IS
	'planner support of the bloom merges: a merge of values that do not change from row to row is computed once';

CREATE FUNCTION bloom_union(bloom, bloom) RETURNS bloom
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT bloom_merge_support;
COMMENT ON FUNCTION bloom_union(bloom, bloom) IS
	'a filter of the values of either filter; both must have the same geometry';

CREATE FUNCTION bloom_intersect(bloom, bloom) RETURNS bloom
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT bloom_merge_support;
COMMENT ON FUNCTION bloom_intersect(bloom, bloom) IS
	'a filter that may contain the values of both filters; both must have the same geometry';

CREATE OPERATOR | (
	LEFTARG = bloom,
	RIGHTARG = bloom,
	FUNCTION = bloom_union,
	COMMUTATOR = |
);
COMMENT ON OPERATOR | (bloom, bloom) IS 'union of bloom filters';

CREATE OPERATOR & (
	LEFTARG = bloom,
	RIGHTARG = bloom,
	FUNCTION = bloom_intersect,
	COMMUTATOR = &
);
COMMENT ON OPERATOR & (bloom, bloom) IS 'intersection of bloom filters';

--
-- Inspection and sizing
--
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

CREATE FUNCTION bloom_params(n bigint, p double precision, layout text DEFAULT 'blocked',
	OUT bits bigint, OUT bytes bigint, OUT hashes integer,
	OUT bits_per_key double precision)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_params(bigint, double precision, text) IS
	'the size and number of hashes of a bloom filter for n distinct values at false-positive rate p';

--
-- Aggregates
--
CREATE FUNCTION bloom_agg_transfn(internal, anyelement, bigint, double precision)
	RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION bloom_agg_transfn(internal, anyelement, bigint, double precision, text)
	RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION bloom_agg_combinefn(internal, internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION bloom_union_agg_transfn(internal, bloom) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION bloom_union_agg_combinefn(internal, internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION bloom_agg_serialfn(internal) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_agg_deserialfn(bytea, internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_agg_finalfn(internal) RETURNS bloom
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION bloom_agg_transfn(internal, anyelement, bigint, double precision) IS
	'bloom_agg transition function';
COMMENT ON FUNCTION bloom_agg_transfn(internal, anyelement, bigint, double precision, text) IS
	'bloom_agg transition function';
COMMENT ON FUNCTION bloom_agg_combinefn(internal, internal) IS
	'bloom_agg combine function';
COMMENT ON FUNCTION bloom_union_agg_transfn(internal, bloom) IS
	'bloom_union_agg transition function';
COMMENT ON FUNCTION bloom_union_agg_combinefn(internal, internal) IS
	'bloom_union_agg combine function';
COMMENT ON FUNCTION bloom_agg_serialfn(internal) IS
	'bloom aggregate state serialization';
COMMENT ON FUNCTION bloom_agg_deserialfn(bytea, internal) IS
	'bloom aggregate state deserialization';
COMMENT ON FUNCTION bloom_agg_finalfn(internal) IS
	'bloom aggregate final function';

CREATE AGGREGATE bloom_agg(value anyelement, n bigint, p double precision) (
	SFUNC = bloom_agg_transfn,
	STYPE = internal,
	FINALFUNC = bloom_agg_finalfn,
	FINALFUNC_MODIFY = READ_ONLY,
	COMBINEFUNC = bloom_agg_combinefn,
	SERIALFUNC = bloom_agg_serialfn,
	DESERIALFUNC = bloom_agg_deserialfn,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(anyelement, bigint, double precision) IS
	'bloom filter of the non-null values, sized for n distinct values at false-positive rate p';

CREATE AGGREGATE bloom_agg(value anyelement, n bigint, p double precision, layout text) (
	SFUNC = bloom_agg_transfn,
	STYPE = internal,
	FINALFUNC = bloom_agg_finalfn,
	FINALFUNC_MODIFY = READ_ONLY,
	COMBINEFUNC = bloom_agg_combinefn,
	SERIALFUNC = bloom_agg_serialfn,
	DESERIALFUNC = bloom_agg_deserialfn,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(anyelement, bigint, double precision, text) IS
	'bloom filter of the non-null values with the given layout (''blocked'', ''classic'', or ''counting'' or ''dleft'', which keep every copy)';

CREATE AGGREGATE bloom_union_agg(bloom) (
	SFUNC = bloom_union_agg_transfn,
	STYPE = internal,
	FINALFUNC = bloom_agg_finalfn,
	FINALFUNC_MODIFY = READ_ONLY,
	COMBINEFUNC = bloom_union_agg_combinefn,
	SERIALFUNC = bloom_agg_serialfn,
	DESERIALFUNC = bloom_agg_deserialfn,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_union_agg(bloom) IS
	'union of the non-null bloom filters; all must have the same geometry';

--
-- The cuckoo type: fingerprints in buckets of four, so values can also be
-- deleted.  Bytes specified in FORMAT.md; I/O and casts as for bloom.
--
CREATE TYPE cuckoo;

CREATE FUNCTION cuckoo_in(cstring) RETURNS cuckoo
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION cuckoo_out(cuckoo) RETURNS cstring
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION cuckoo_recv(internal) RETURNS cuckoo
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION cuckoo_send(cuckoo) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE cuckoo (
	INPUT = cuckoo_in,
	OUTPUT = cuckoo_out,
	RECEIVE = cuckoo_recv,
	SEND = cuckoo_send,
	INTERNALLENGTH = VARIABLE,
	ALIGNMENT = int4,
	STORAGE = external
);

COMMENT ON TYPE cuckoo IS 'cuckoo filter: a multiset of fingerprints that supports deletion; false positives possible, false negatives not';
COMMENT ON FUNCTION cuckoo_in(cstring) IS 'cuckoo input: canonical base64 of the serialized filter';
COMMENT ON FUNCTION cuckoo_out(cuckoo) IS 'cuckoo output: canonical base64 of the serialized filter';
COMMENT ON FUNCTION cuckoo_recv(internal) IS 'cuckoo binary input: the serialized filter, validated';
COMMENT ON FUNCTION cuckoo_send(cuckoo) IS 'cuckoo binary output: the serialized filter';

CREATE FUNCTION cuckoo_to_bytea(cuckoo) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION cuckoo_from_bytea(bytea) RETURNS cuckoo
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (cuckoo AS bytea) WITH FUNCTION cuckoo_to_bytea(cuckoo);
CREATE CAST (bytea AS cuckoo) WITH FUNCTION cuckoo_from_bytea(bytea);

COMMENT ON FUNCTION cuckoo_to_bytea(cuckoo) IS 'the serialized bytes of a cuckoo filter (FORMAT.md)';
COMMENT ON FUNCTION cuckoo_from_bytea(bytea) IS 'a cuckoo filter from serialized bytes, validated';

CREATE FUNCTION cuckoo_empty(n bigint, p double precision) RETURNS cuckoo
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_empty(bigint, double precision) IS
	'an empty cuckoo filter sized for n values at false-positive rate p';

-- Not strict: a NULL value leaves the filter unchanged.
CREATE FUNCTION cuckoo_add(filter cuckoo, value anyelement) RETURNS cuckoo
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_add(cuckoo, anyelement) IS
	'a copy of the filter with one more copy of the value, grown if full; a NULL value is ignored';

CREATE FUNCTION cuckoo_delete(filter cuckoo, value anyelement) RETURNS cuckoo
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_delete(cuckoo, anyelement) IS
	'a copy of the filter with one copy of the value removed; unchanged if the value is not present or NULL';

-- Planner estimates of probes of a filter known at plan time (see the README).
CREATE FUNCTION cuckoo_contains_sel(internal, oid, internal, integer) RETURNS double precision
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_contains_sel(internal, oid, internal, integer) IS
	'selectivity estimator of the @> and <@ operators of cuckoo filters';

CREATE FUNCTION cuckoo_contains_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_contains_support(internal) IS
	'planner support (selectivity) of cuckoo_contains and cuckoo_contained_by';

CREATE FUNCTION cuckoo_contains(filter cuckoo, value anyelement) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT cuckoo_contains_support;
COMMENT ON FUNCTION cuckoo_contains(cuckoo, anyelement) IS
	'false if the value is certainly not in the filter; true if it may be';

CREATE FUNCTION cuckoo_contained_by(value anyelement, filter cuckoo) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT cuckoo_contains_support;
COMMENT ON FUNCTION cuckoo_contained_by(anyelement, cuckoo) IS
	'cuckoo_contains with the arguments swapped, for the <@ operator';

CREATE FUNCTION cuckoo_count(filter cuckoo, value anyelement) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_count(cuckoo, anyelement) IS
	'copies of the value in the filter: never fewer than were added and not deleted, more on fingerprint collisions';

CREATE OPERATOR @> (
	LEFTARG = cuckoo,
	RIGHTARG = anyelement,
	FUNCTION = cuckoo_contains,
	COMMUTATOR = <@,
	RESTRICT = cuckoo_contains_sel
);
COMMENT ON OPERATOR @> (cuckoo, anyelement) IS 'filter may contain the value';

CREATE OPERATOR <@ (
	LEFTARG = anyelement,
	RIGHTARG = cuckoo,
	FUNCTION = cuckoo_contained_by,
	COMMUTATOR = @>,
	RESTRICT = cuckoo_contains_sel
);
COMMENT ON OPERATOR <@ (anyelement, cuckoo) IS 'value may be contained in the filter';

-- Planner support of the merges: those of values that do not change from
-- row to row are computed once (see the README).
CREATE FUNCTION cuckoo_merge_support(internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_merge_support(internal) IS
	'planner support of the cuckoo merges: a merge of values that do not change from row to row is computed once';

CREATE FUNCTION cuckoo_union(cuckoo, cuckoo) RETURNS cuckoo
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT cuckoo_merge_support;
COMMENT ON FUNCTION cuckoo_union(cuckoo, cuckoo) IS
	'a filter holding the values of both filters (copies add up); both must have the same geometry';

CREATE OPERATOR | (
	LEFTARG = cuckoo,
	RIGHTARG = cuckoo,
	FUNCTION = cuckoo_union,
	COMMUTATOR = |
);
COMMENT ON OPERATOR | (cuckoo, cuckoo) IS 'union of cuckoo filters';

CREATE FUNCTION cuckoo_info(filter cuckoo,
	OUT buckets bigint, OUT bucket_size integer, OUT fingerprint_bits integer,
	OUT bytes bigint, OUT capacity bigint, OUT target_fpr double precision,
	OUT items bigint, OUT load_factor double precision,
	OUT est_fpr double precision, OUT tables integer, OUT element text)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_info(cuckoo) IS
	'geometry, item count, load, current false-positive rate and element type of a cuckoo filter';

CREATE FUNCTION cuckoo_params(n bigint, p double precision,
	OUT buckets bigint, OUT fingerprint_bits integer, OUT bytes bigint,
	OUT bits_per_key double precision)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_params(bigint, double precision) IS
	'the size and fingerprint width of a cuckoo filter for n values at false-positive rate p';

CREATE FUNCTION cuckoo_agg_transfn(internal, anyelement, bigint, double precision)
	RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION cuckoo_agg_combinefn(internal, internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION cuckoo_union_agg_transfn(internal, cuckoo) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION cuckoo_union_agg_combinefn(internal, internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION cuckoo_agg_serialfn(internal) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION cuckoo_agg_deserialfn(bytea, internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION cuckoo_agg_finalfn(internal) RETURNS cuckoo
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION cuckoo_agg_transfn(internal, anyelement, bigint, double precision) IS
	'cuckoo_agg transition function';
COMMENT ON FUNCTION cuckoo_agg_combinefn(internal, internal) IS
	'cuckoo_agg combine function';
COMMENT ON FUNCTION cuckoo_union_agg_transfn(internal, cuckoo) IS
	'cuckoo_union_agg transition function';
COMMENT ON FUNCTION cuckoo_union_agg_combinefn(internal, internal) IS
	'cuckoo_union_agg combine function';
COMMENT ON FUNCTION cuckoo_agg_serialfn(internal) IS
	'cuckoo aggregate state serialization';
COMMENT ON FUNCTION cuckoo_agg_deserialfn(bytea, internal) IS
	'cuckoo aggregate state deserialization';
COMMENT ON FUNCTION cuckoo_agg_finalfn(internal) IS
	'cuckoo aggregate final function';

CREATE AGGREGATE cuckoo_agg(value anyelement, n bigint, p double precision) (
	SFUNC = cuckoo_agg_transfn,
	STYPE = internal,
	FINALFUNC = cuckoo_agg_finalfn,
	FINALFUNC_MODIFY = READ_ONLY,
	COMBINEFUNC = cuckoo_agg_combinefn,
	SERIALFUNC = cuckoo_agg_serialfn,
	DESERIALFUNC = cuckoo_agg_deserialfn,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE cuckoo_agg(anyelement, bigint, double precision) IS
	'cuckoo filter of the non-null values (every copy), sized for n values at false-positive rate p; grows if n is exceeded';

CREATE AGGREGATE cuckoo_union_agg(cuckoo) (
	SFUNC = cuckoo_union_agg_transfn,
	STYPE = internal,
	FINALFUNC = cuckoo_agg_finalfn,
	FINALFUNC_MODIFY = READ_ONLY,
	COMBINEFUNC = cuckoo_union_agg_combinefn,
	SERIALFUNC = cuckoo_agg_serialfn,
	DESERIALFUNC = cuckoo_agg_deserialfn,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE cuckoo_union_agg(cuckoo) IS
	'union of the non-null cuckoo filters; all must have the same geometry';

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
