/* amqfilter--0.3.sql: approximate-membership filters for SQL (full script of 0.3) */

\echo Use "CREATE EXTENSION amqfilter" to load this file. \quit

--
-- The types' names are common words: a table or type named bloom or cuckoo
-- in the target schema (a table has a type of its name) would stop the
-- script at CREATE TYPE with "already exists" and nothing else.  Say what
-- is in the way and how to install beside it.
--
DO $clash$
DECLARE
	taken text;
BEGIN
	SELECT pg_catalog.string_agg(pg_catalog.format('%I.%I', n.nspname, t.typname), ', '
								 ORDER BY t.typname)
	  INTO taken
	  FROM pg_catalog.pg_type t
	  JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
	 WHERE t.typname IN ('bloom', 'cuckoo')
	   AND n.nspname OPERATOR(pg_catalog.=) pg_catalog.current_schema();
	IF taken IS NOT NULL THEN
		RAISE EXCEPTION 'amqfilter cannot create its types bloom and cuckoo in schema %: % already exists',
			pg_catalog.current_schema(), taken
			USING ERRCODE = 'duplicate_object',
				  DETAIL = 'A table has a type of its own name, so a table named bloom or cuckoo takes the name too.',
				  HINT = 'Install amqfilter in a schema of its own: CREATE SCHEMA amq; CREATE EXTENSION amqfilter SCHEMA amq; (then name its types amq.bloom, or add amq to search_path).';
	END IF;
END
$clash$;

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
-- Comparing: byte equality of whole values, with btree and hash operator
-- classes, so that DISTINCT, GROUP BY, UNION, unique constraints and hash
-- and merge joins work.  Filters of the same values built with another n, p
-- or layout are not equal.  The order is there because btree needs one: it
-- is total, and means nothing beyond equality (src/glue/filter_compare.c).
--
CREATE FUNCTION bloom_eq(bloom, bloom) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_eq(bloom, bloom) IS
	'true if the filters have the same bytes; filters of the same values built with another n, p or layout are not equal';

CREATE FUNCTION bloom_ne(bloom, bloom) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_ne(bloom, bloom) IS
	'true unless the filters have the same bytes';

CREATE FUNCTION bloom_lt(bloom, bloom) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_lt(bloom, bloom) IS
	'true if the first filter sorts before the second (shorter first, then by bytes): an order for btree, meaningless beyond equality';

CREATE FUNCTION bloom_le(bloom, bloom) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_le(bloom, bloom) IS
	'true unless the first filter sorts after the second (shorter first, then by bytes): an order for btree, meaningless beyond equality';

CREATE FUNCTION bloom_gt(bloom, bloom) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_gt(bloom, bloom) IS
	'true if the first filter sorts after the second (shorter first, then by bytes): an order for btree, meaningless beyond equality';

CREATE FUNCTION bloom_ge(bloom, bloom) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_ge(bloom, bloom) IS
	'true unless the first filter sorts before the second (shorter first, then by bytes): an order for btree, meaningless beyond equality';

CREATE FUNCTION bloom_cmp(bloom, bloom) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_cmp(bloom, bloom) IS
	'btree support: -1, 0 or 1 as the first filter sorts before, equal to or after the second (shorter first, then by bytes)';

CREATE FUNCTION bloom_hash(bloom) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_hash(bloom) IS
	'hash support: a 32-bit hash of the filter''s bytes';

CREATE FUNCTION bloom_hash_extended(bloom, bigint) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_hash_extended(bloom, bigint) IS
	'hash support: a 64-bit hash of the filter''s bytes under a seed';

CREATE OPERATOR = (
	LEFTARG = bloom,
	RIGHTARG = bloom,
	FUNCTION = bloom_eq,
	COMMUTATOR = =,
	NEGATOR = <>,
	RESTRICT = pg_catalog.eqsel,
	JOIN = pg_catalog.eqjoinsel,
	HASHES,
	MERGES
);
COMMENT ON OPERATOR = (bloom, bloom) IS 'filters have the same bytes';

CREATE OPERATOR <> (
	LEFTARG = bloom,
	RIGHTARG = bloom,
	FUNCTION = bloom_ne,
	COMMUTATOR = <>,
	NEGATOR = =,
	RESTRICT = pg_catalog.neqsel,
	JOIN = pg_catalog.neqjoinsel
);
COMMENT ON OPERATOR <> (bloom, bloom) IS 'filters differ in their bytes';

CREATE OPERATOR < (
	LEFTARG = bloom,
	RIGHTARG = bloom,
	FUNCTION = bloom_lt,
	COMMUTATOR = >,
	NEGATOR = >=,
	RESTRICT = pg_catalog.scalarltsel,
	JOIN = pg_catalog.scalarltjoinsel
);
COMMENT ON OPERATOR < (bloom, bloom) IS 'sorts before: shorter first, then by bytes (total, but meaningless beyond equality)';

CREATE OPERATOR <= (
	LEFTARG = bloom,
	RIGHTARG = bloom,
	FUNCTION = bloom_le,
	COMMUTATOR = >=,
	NEGATOR = >,
	RESTRICT = pg_catalog.scalarlesel,
	JOIN = pg_catalog.scalarlejoinsel
);
COMMENT ON OPERATOR <= (bloom, bloom) IS 'sorts before or equal: shorter first, then by bytes (total, but meaningless beyond equality)';

CREATE OPERATOR > (
	LEFTARG = bloom,
	RIGHTARG = bloom,
	FUNCTION = bloom_gt,
	COMMUTATOR = <,
	NEGATOR = <=,
	RESTRICT = pg_catalog.scalargtsel,
	JOIN = pg_catalog.scalargtjoinsel
);
COMMENT ON OPERATOR > (bloom, bloom) IS 'sorts after: shorter first, then by bytes (total, but meaningless beyond equality)';

CREATE OPERATOR >= (
	LEFTARG = bloom,
	RIGHTARG = bloom,
	FUNCTION = bloom_ge,
	COMMUTATOR = <=,
	NEGATOR = <,
	RESTRICT = pg_catalog.scalargesel,
	JOIN = pg_catalog.scalargejoinsel
);
COMMENT ON OPERATOR >= (bloom, bloom) IS 'sorts after or equal: shorter first, then by bytes (total, but meaningless beyond equality)';

CREATE OPERATOR CLASS bloom_ops DEFAULT FOR TYPE bloom USING btree AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 bloom_cmp(bloom, bloom),
	FUNCTION 4 pg_catalog.btequalimage(oid);
COMMENT ON OPERATOR FAMILY bloom_ops USING btree IS
	'bloom filters in byte order (shorter first, then by bytes), for unique constraints, sorts and merge joins';
COMMENT ON OPERATOR CLASS bloom_ops USING btree IS
	'bloom filters in byte order (shorter first, then by bytes), for unique constraints, sorts and merge joins';

CREATE OPERATOR CLASS bloom_ops DEFAULT FOR TYPE bloom USING hash AS
	OPERATOR 1 =,
	FUNCTION 1 bloom_hash(bloom),
	FUNCTION 2 bloom_hash_extended(bloom, bigint);
COMMENT ON OPERATOR FAMILY bloom_ops USING hash IS
	'bloom filters by the hash of their bytes, for hash aggregation, hash joins and hash indexes';
COMMENT ON OPERATOR CLASS bloom_ops USING hash IS
	'bloom filters by the hash of their bytes, for hash aggregation, hash joins and hash indexes';

--
-- Inspection and sizing
--
CREATE FUNCTION bloom_info(filter bloom,
	OUT layout text, OUT bits bigint, OUT bytes bigint, OUT hashes integer,
	OUT capacity bigint, OUT target_fpr double precision, OUT inserted bigint,
	OUT bits_set bigint, OUT est_distinct double precision,
	OUT est_fpr double precision, OUT element text,
	OUT cells bigint, OUT cells_used bigint, OUT saturated bigint,
	OUT load double precision, OUT fingerprint_bits integer,
	OUT overfilled boolean)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_info(bloom) IS
	'geometry, counts, estimated distinct values, current false-positive rate, element type and, for the counting and dleft layouts, counters or cells used and saturated of a bloom filter, and whether it holds more than it was sized for';

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

-- bloom_agg(value, p [, layout]): sized from the values themselves
-- (src/glue/filter_agg_sizeless.c)
CREATE FUNCTION bloom_agg_sizeless_transfn(internal, anyelement, double precision)
	RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION bloom_agg_sizeless_transfn(internal, anyelement, double precision, text)
	RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION bloom_agg_sizeless_combinefn(internal, internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION bloom_agg_sizeless_serialfn(internal) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_agg_sizeless_deserialfn(bytea, internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_agg_sizeless_finalfn(internal) RETURNS bloom
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_sizeless_transfn(internal, anyelement, double precision) IS
	'bloom_agg(value, p) transition function';
COMMENT ON FUNCTION bloom_agg_sizeless_transfn(internal, anyelement, double precision, text) IS
	'bloom_agg(value, p, layout) transition function';
COMMENT ON FUNCTION bloom_agg_sizeless_combinefn(internal, internal) IS
	'bloom_agg(value, p) combine function';
COMMENT ON FUNCTION bloom_agg_sizeless_serialfn(internal) IS
	'bloom_agg(value, p) state serialization';
COMMENT ON FUNCTION bloom_agg_sizeless_deserialfn(bytea, internal) IS
	'bloom_agg(value, p) state deserialization';
COMMENT ON FUNCTION bloom_agg_sizeless_finalfn(internal) IS
	'bloom_agg(value, p) final function: sizes the filter for the distinct values seen';

CREATE AGGREGATE bloom_agg(value anyelement, p double precision) (
	SFUNC = bloom_agg_sizeless_transfn,
	STYPE = internal,
	FINALFUNC = bloom_agg_sizeless_finalfn,
	FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = bloom_agg_sizeless_combinefn,
	SERIALFUNC = bloom_agg_sizeless_serialfn,
	DESERIALFUNC = bloom_agg_sizeless_deserialfn,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(anyelement, double precision) IS
	'bloom filter of the non-null values at false-positive rate p, sized for the distinct values it sees';

CREATE AGGREGATE bloom_agg(value anyelement, p double precision, layout text) (
	SFUNC = bloom_agg_sizeless_transfn,
	STYPE = internal,
	FINALFUNC = bloom_agg_sizeless_finalfn,
	FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = bloom_agg_sizeless_combinefn,
	SERIALFUNC = bloom_agg_sizeless_serialfn,
	DESERIALFUNC = bloom_agg_sizeless_deserialfn,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(anyelement, double precision, text) IS
	'bloom filter of the non-null values with the given layout at false-positive rate p, sized for the distinct values it sees';

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

-- Comparing, as for bloom: byte equality, and an order that means nothing
-- beyond it.  Cuckoo filters of the same values may differ in their bytes
-- (where a fingerprint lands depends on insertion order).
CREATE FUNCTION cuckoo_eq(cuckoo, cuckoo) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_eq(cuckoo, cuckoo) IS
	'true if the filters have the same bytes; filters of the same values built with another n, p or layout are not equal';

CREATE FUNCTION cuckoo_ne(cuckoo, cuckoo) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_ne(cuckoo, cuckoo) IS
	'true unless the filters have the same bytes';

CREATE FUNCTION cuckoo_lt(cuckoo, cuckoo) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_lt(cuckoo, cuckoo) IS
	'true if the first filter sorts before the second (shorter first, then by bytes): an order for btree, meaningless beyond equality';

CREATE FUNCTION cuckoo_le(cuckoo, cuckoo) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_le(cuckoo, cuckoo) IS
	'true unless the first filter sorts after the second (shorter first, then by bytes): an order for btree, meaningless beyond equality';

CREATE FUNCTION cuckoo_gt(cuckoo, cuckoo) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_gt(cuckoo, cuckoo) IS
	'true if the first filter sorts after the second (shorter first, then by bytes): an order for btree, meaningless beyond equality';

CREATE FUNCTION cuckoo_ge(cuckoo, cuckoo) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_ge(cuckoo, cuckoo) IS
	'true unless the first filter sorts before the second (shorter first, then by bytes): an order for btree, meaningless beyond equality';

CREATE FUNCTION cuckoo_cmp(cuckoo, cuckoo) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_cmp(cuckoo, cuckoo) IS
	'btree support: -1, 0 or 1 as the first filter sorts before, equal to or after the second (shorter first, then by bytes)';

CREATE FUNCTION cuckoo_hash(cuckoo) RETURNS integer
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_hash(cuckoo) IS
	'hash support: a 32-bit hash of the filter''s bytes';

CREATE FUNCTION cuckoo_hash_extended(cuckoo, bigint) RETURNS bigint
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_hash_extended(cuckoo, bigint) IS
	'hash support: a 64-bit hash of the filter''s bytes under a seed';

CREATE OPERATOR = (
	LEFTARG = cuckoo,
	RIGHTARG = cuckoo,
	FUNCTION = cuckoo_eq,
	COMMUTATOR = =,
	NEGATOR = <>,
	RESTRICT = pg_catalog.eqsel,
	JOIN = pg_catalog.eqjoinsel,
	HASHES,
	MERGES
);
COMMENT ON OPERATOR = (cuckoo, cuckoo) IS 'filters have the same bytes';

CREATE OPERATOR <> (
	LEFTARG = cuckoo,
	RIGHTARG = cuckoo,
	FUNCTION = cuckoo_ne,
	COMMUTATOR = <>,
	NEGATOR = =,
	RESTRICT = pg_catalog.neqsel,
	JOIN = pg_catalog.neqjoinsel
);
COMMENT ON OPERATOR <> (cuckoo, cuckoo) IS 'filters differ in their bytes';

CREATE OPERATOR < (
	LEFTARG = cuckoo,
	RIGHTARG = cuckoo,
	FUNCTION = cuckoo_lt,
	COMMUTATOR = >,
	NEGATOR = >=,
	RESTRICT = pg_catalog.scalarltsel,
	JOIN = pg_catalog.scalarltjoinsel
);
COMMENT ON OPERATOR < (cuckoo, cuckoo) IS 'sorts before: shorter first, then by bytes (total, but meaningless beyond equality)';

CREATE OPERATOR <= (
	LEFTARG = cuckoo,
	RIGHTARG = cuckoo,
	FUNCTION = cuckoo_le,
	COMMUTATOR = >=,
	NEGATOR = >,
	RESTRICT = pg_catalog.scalarlesel,
	JOIN = pg_catalog.scalarlejoinsel
);
COMMENT ON OPERATOR <= (cuckoo, cuckoo) IS 'sorts before or equal: shorter first, then by bytes (total, but meaningless beyond equality)';

CREATE OPERATOR > (
	LEFTARG = cuckoo,
	RIGHTARG = cuckoo,
	FUNCTION = cuckoo_gt,
	COMMUTATOR = <,
	NEGATOR = <=,
	RESTRICT = pg_catalog.scalargtsel,
	JOIN = pg_catalog.scalargtjoinsel
);
COMMENT ON OPERATOR > (cuckoo, cuckoo) IS 'sorts after: shorter first, then by bytes (total, but meaningless beyond equality)';

CREATE OPERATOR >= (
	LEFTARG = cuckoo,
	RIGHTARG = cuckoo,
	FUNCTION = cuckoo_ge,
	COMMUTATOR = <=,
	NEGATOR = <,
	RESTRICT = pg_catalog.scalargesel,
	JOIN = pg_catalog.scalargejoinsel
);
COMMENT ON OPERATOR >= (cuckoo, cuckoo) IS 'sorts after or equal: shorter first, then by bytes (total, but meaningless beyond equality)';

CREATE OPERATOR CLASS cuckoo_ops DEFAULT FOR TYPE cuckoo USING btree AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 cuckoo_cmp(cuckoo, cuckoo),
	FUNCTION 4 pg_catalog.btequalimage(oid);
COMMENT ON OPERATOR FAMILY cuckoo_ops USING btree IS
	'cuckoo filters in byte order (shorter first, then by bytes), for unique constraints, sorts and merge joins';
COMMENT ON OPERATOR CLASS cuckoo_ops USING btree IS
	'cuckoo filters in byte order (shorter first, then by bytes), for unique constraints, sorts and merge joins';

CREATE OPERATOR CLASS cuckoo_ops DEFAULT FOR TYPE cuckoo USING hash AS
	OPERATOR 1 =,
	FUNCTION 1 cuckoo_hash(cuckoo),
	FUNCTION 2 cuckoo_hash_extended(cuckoo, bigint);
COMMENT ON OPERATOR FAMILY cuckoo_ops USING hash IS
	'cuckoo filters by the hash of their bytes, for hash aggregation, hash joins and hash indexes';
COMMENT ON OPERATOR CLASS cuckoo_ops USING hash IS
	'cuckoo filters by the hash of their bytes, for hash aggregation, hash joins and hash indexes';

CREATE FUNCTION cuckoo_info(filter cuckoo,
	OUT buckets bigint, OUT bucket_size integer, OUT fingerprint_bits integer,
	OUT bytes bigint, OUT capacity bigint, OUT target_fpr double precision,
	OUT items bigint, OUT load_factor double precision,
	OUT est_fpr double precision, OUT tables integer, OUT element text,
	OUT overfilled boolean)
	RETURNS record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_info(cuckoo) IS
	'geometry, item count, load, current false-positive rate, element type of a cuckoo filter, and whether it holds more than it was sized for';

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

-- cuckoo_agg(value, p): sized from the values themselves
CREATE FUNCTION cuckoo_agg_sizeless_transfn(internal, anyelement, double precision)
	RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION cuckoo_agg_sizeless_combinefn(internal, internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION cuckoo_agg_sizeless_serialfn(internal) RETURNS bytea
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION cuckoo_agg_sizeless_deserialfn(bytea, internal) RETURNS internal
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION cuckoo_agg_sizeless_finalfn(internal) RETURNS cuckoo
	AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION cuckoo_agg_sizeless_transfn(internal, anyelement, double precision) IS
	'cuckoo_agg(value, p) transition function';
COMMENT ON FUNCTION cuckoo_agg_sizeless_combinefn(internal, internal) IS
	'cuckoo_agg(value, p) combine function';
COMMENT ON FUNCTION cuckoo_agg_sizeless_serialfn(internal) IS
	'cuckoo_agg(value, p) state serialization';
COMMENT ON FUNCTION cuckoo_agg_sizeless_deserialfn(bytea, internal) IS
	'cuckoo_agg(value, p) state deserialization';
COMMENT ON FUNCTION cuckoo_agg_sizeless_finalfn(internal) IS
	'cuckoo_agg(value, p) final function: sizes the filter for the distinct values seen';

CREATE AGGREGATE cuckoo_agg(value anyelement, p double precision) (
	SFUNC = cuckoo_agg_sizeless_transfn,
	STYPE = internal,
	FINALFUNC = cuckoo_agg_sizeless_finalfn,
	FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = cuckoo_agg_sizeless_combinefn,
	SERIALFUNC = cuckoo_agg_sizeless_serialfn,
	DESERIALFUNC = cuckoo_agg_sizeless_deserialfn,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE cuckoo_agg(anyelement, double precision) IS
	'cuckoo filter of the non-null values (every copy) at false-positive rate p, sized for the distinct values it sees';

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
-- The amqfilter index access method (src/index/index_handler.c): a bloom filter of
-- a column on index pages, kept current by PostgreSQL on every write path.
-- A scan of "column = value" or "column = ANY (array)" that the filter
-- rules out reads nothing of the table, so a partition it rules out is
-- skipped, by plain SQL.  Its operator classes are those of the hash
-- access method, with the same operators and hash functions: the same
-- equality as hash joins and hash partitioning.
--

CREATE FUNCTION amqfilter_index_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION amqfilter_index_handler(internal) IS
	'the handler of the amqfilter index access method';

CREATE ACCESS METHOD amqfilter TYPE INDEX HANDLER amqfilter_index_handler;
COMMENT ON ACCESS METHOD amqfilter IS
	'bloom filter of a column: skips a table (a partition) that cannot hold the value looked up with = or = ANY';

CREATE OPERATOR FAMILY aclitem_ops USING amqfilter;
CREATE OPERATOR CLASS aclitem_ops DEFAULT FOR TYPE aclitem USING amqfilter FAMILY aclitem_ops AS
	OPERATOR 1 pg_catalog.= (aclitem, aclitem),
	FUNCTION 1 pg_catalog.hash_aclitem_extended(aclitem,bigint);
CREATE OPERATOR FAMILY array_ops USING amqfilter;
CREATE OPERATOR CLASS array_ops DEFAULT FOR TYPE anyarray USING amqfilter FAMILY array_ops AS
	OPERATOR 1 pg_catalog.= (anyarray, anyarray),
	FUNCTION 1 pg_catalog.hash_array_extended(anyarray,bigint);
CREATE OPERATOR FAMILY bool_ops USING amqfilter;
CREATE OPERATOR CLASS bool_ops DEFAULT FOR TYPE boolean USING amqfilter FAMILY bool_ops AS
	OPERATOR 1 pg_catalog.= (boolean, boolean),
	FUNCTION 1 pg_catalog.hashcharextended("char",bigint);
CREATE OPERATOR FAMILY bpchar_ops USING amqfilter;
CREATE OPERATOR CLASS bpchar_ops DEFAULT FOR TYPE character USING amqfilter FAMILY bpchar_ops AS
	OPERATOR 1 pg_catalog.= (character, character),
	FUNCTION 1 pg_catalog.hashbpcharextended(character,bigint);
CREATE OPERATOR FAMILY bytea_ops USING amqfilter;
CREATE OPERATOR CLASS bytea_ops DEFAULT FOR TYPE bytea USING amqfilter FAMILY bytea_ops AS
	OPERATOR 1 pg_catalog.= (bytea, bytea),
	FUNCTION 1 pg_catalog.hashvarlenaextended(internal,bigint);
CREATE OPERATOR FAMILY char_ops USING amqfilter;
CREATE OPERATOR CLASS char_ops DEFAULT FOR TYPE "char" USING amqfilter FAMILY char_ops AS
	OPERATOR 1 pg_catalog.= ("char", "char"),
	FUNCTION 1 pg_catalog.hashcharextended("char",bigint);
CREATE OPERATOR FAMILY cid_ops USING amqfilter;
CREATE OPERATOR CLASS cid_ops DEFAULT FOR TYPE cid USING amqfilter FAMILY cid_ops AS
	OPERATOR 1 pg_catalog.= (cid, cid),
	FUNCTION 1 pg_catalog.hashint4extended(integer,bigint);
CREATE OPERATOR FAMILY date_ops USING amqfilter;
CREATE OPERATOR CLASS date_ops DEFAULT FOR TYPE date USING amqfilter FAMILY date_ops AS
	OPERATOR 1 pg_catalog.= (date, date),
	FUNCTION 1 pg_catalog.hashint4extended(integer,bigint);
CREATE OPERATOR FAMILY enum_ops USING amqfilter;
CREATE OPERATOR CLASS enum_ops DEFAULT FOR TYPE anyenum USING amqfilter FAMILY enum_ops AS
	OPERATOR 1 pg_catalog.= (anyenum, anyenum),
	FUNCTION 1 pg_catalog.hashenumextended(anyenum,bigint);
CREATE OPERATOR FAMILY float_ops USING amqfilter;
CREATE OPERATOR CLASS float4_ops DEFAULT FOR TYPE real USING amqfilter FAMILY float_ops AS
	OPERATOR 1 pg_catalog.= (real, real),
	FUNCTION 1 pg_catalog.hashfloat4extended(real,bigint);
CREATE OPERATOR CLASS float8_ops DEFAULT FOR TYPE double precision USING amqfilter FAMILY float_ops AS
	OPERATOR 1 pg_catalog.= (double precision, double precision),
	FUNCTION 1 pg_catalog.hashfloat8extended(double precision,bigint);
ALTER OPERATOR FAMILY float_ops USING amqfilter ADD
	OPERATOR 1 pg_catalog.= (double precision, real);
ALTER OPERATOR FAMILY float_ops USING amqfilter ADD
	OPERATOR 1 pg_catalog.= (real, double precision);
CREATE OPERATOR FAMILY integer_ops USING amqfilter;
CREATE OPERATOR CLASS int2_ops DEFAULT FOR TYPE smallint USING amqfilter FAMILY integer_ops AS
	OPERATOR 1 pg_catalog.= (smallint, smallint),
	FUNCTION 1 pg_catalog.hashint2extended(smallint,bigint);
CREATE OPERATOR CLASS int4_ops DEFAULT FOR TYPE integer USING amqfilter FAMILY integer_ops AS
	OPERATOR 1 pg_catalog.= (integer, integer),
	FUNCTION 1 pg_catalog.hashint4extended(integer,bigint);
CREATE OPERATOR CLASS int8_ops DEFAULT FOR TYPE bigint USING amqfilter FAMILY integer_ops AS
	OPERATOR 1 pg_catalog.= (bigint, bigint),
	FUNCTION 1 pg_catalog.hashint8extended(bigint,bigint);
ALTER OPERATOR FAMILY integer_ops USING amqfilter ADD
	OPERATOR 1 pg_catalog.= (bigint, integer);
ALTER OPERATOR FAMILY integer_ops USING amqfilter ADD
	OPERATOR 1 pg_catalog.= (bigint, smallint);
ALTER OPERATOR FAMILY integer_ops USING amqfilter ADD
	OPERATOR 1 pg_catalog.= (integer, bigint);
ALTER OPERATOR FAMILY integer_ops USING amqfilter ADD
	OPERATOR 1 pg_catalog.= (integer, smallint);
ALTER OPERATOR FAMILY integer_ops USING amqfilter ADD
	OPERATOR 1 pg_catalog.= (smallint, bigint);
ALTER OPERATOR FAMILY integer_ops USING amqfilter ADD
	OPERATOR 1 pg_catalog.= (smallint, integer);
CREATE OPERATOR FAMILY interval_ops USING amqfilter;
CREATE OPERATOR CLASS interval_ops DEFAULT FOR TYPE interval USING amqfilter FAMILY interval_ops AS
	OPERATOR 1 pg_catalog.= (interval, interval),
	FUNCTION 1 pg_catalog.interval_hash_extended(interval,bigint);
CREATE OPERATOR FAMILY jsonb_ops USING amqfilter;
CREATE OPERATOR CLASS jsonb_ops DEFAULT FOR TYPE jsonb USING amqfilter FAMILY jsonb_ops AS
	OPERATOR 1 pg_catalog.= (jsonb, jsonb),
	FUNCTION 1 pg_catalog.jsonb_hash_extended(jsonb,bigint);
CREATE OPERATOR FAMILY macaddr8_ops USING amqfilter;
CREATE OPERATOR CLASS macaddr8_ops DEFAULT FOR TYPE macaddr8 USING amqfilter FAMILY macaddr8_ops AS
	OPERATOR 1 pg_catalog.= (macaddr8, macaddr8),
	FUNCTION 1 pg_catalog.hashmacaddr8extended(macaddr8,bigint);
CREATE OPERATOR FAMILY macaddr_ops USING amqfilter;
CREATE OPERATOR CLASS macaddr_ops DEFAULT FOR TYPE macaddr USING amqfilter FAMILY macaddr_ops AS
	OPERATOR 1 pg_catalog.= (macaddr, macaddr),
	FUNCTION 1 pg_catalog.hashmacaddrextended(macaddr,bigint);
CREATE OPERATOR FAMILY network_ops USING amqfilter;
CREATE OPERATOR CLASS inet_ops DEFAULT FOR TYPE inet USING amqfilter FAMILY network_ops AS
	OPERATOR 1 pg_catalog.= (inet, inet),
	FUNCTION 1 pg_catalog.hashinetextended(inet,bigint);
CREATE OPERATOR FAMILY numeric_ops USING amqfilter;
CREATE OPERATOR CLASS numeric_ops DEFAULT FOR TYPE numeric USING amqfilter FAMILY numeric_ops AS
	OPERATOR 1 pg_catalog.= (numeric, numeric),
	FUNCTION 1 pg_catalog.hash_numeric_extended(numeric,bigint);
CREATE OPERATOR FAMILY oid_ops USING amqfilter;
CREATE OPERATOR CLASS oid_ops DEFAULT FOR TYPE oid USING amqfilter FAMILY oid_ops AS
	OPERATOR 1 pg_catalog.= (oid, oid),
	FUNCTION 1 pg_catalog.hashoidextended(oid,bigint);
CREATE OPERATOR FAMILY oidvector_ops USING amqfilter;
CREATE OPERATOR CLASS oidvector_ops DEFAULT FOR TYPE oidvector USING amqfilter FAMILY oidvector_ops AS
	OPERATOR 1 pg_catalog.= (oidvector, oidvector),
	FUNCTION 1 pg_catalog.hashoidvectorextended(oidvector,bigint);
CREATE OPERATOR FAMILY pg_lsn_ops USING amqfilter;
CREATE OPERATOR CLASS pg_lsn_ops DEFAULT FOR TYPE pg_lsn USING amqfilter FAMILY pg_lsn_ops AS
	OPERATOR 1 pg_catalog.= (pg_lsn, pg_lsn),
	FUNCTION 1 pg_catalog.pg_lsn_hash_extended(pg_lsn,bigint);
CREATE OPERATOR FAMILY multirange_ops USING amqfilter;
CREATE OPERATOR CLASS multirange_ops DEFAULT FOR TYPE anymultirange USING amqfilter FAMILY multirange_ops AS
	OPERATOR 1 pg_catalog.= (anymultirange, anymultirange),
	FUNCTION 1 pg_catalog.hash_multirange_extended(anymultirange,bigint);
CREATE OPERATOR FAMILY range_ops USING amqfilter;
CREATE OPERATOR CLASS range_ops DEFAULT FOR TYPE anyrange USING amqfilter FAMILY range_ops AS
	OPERATOR 1 pg_catalog.= (anyrange, anyrange),
	FUNCTION 1 pg_catalog.hash_range_extended(anyrange,bigint);
CREATE OPERATOR FAMILY record_ops USING amqfilter;
CREATE OPERATOR CLASS record_ops DEFAULT FOR TYPE record USING amqfilter FAMILY record_ops AS
	OPERATOR 1 pg_catalog.= (record, record),
	FUNCTION 1 pg_catalog.hash_record_extended(record,bigint);
CREATE OPERATOR FAMILY text_ops USING amqfilter;
CREATE OPERATOR CLASS name_ops DEFAULT FOR TYPE name USING amqfilter FAMILY text_ops AS
	OPERATOR 1 pg_catalog.= (name, name),
	FUNCTION 1 pg_catalog.hashnameextended(name,bigint);
CREATE OPERATOR CLASS text_ops DEFAULT FOR TYPE text USING amqfilter FAMILY text_ops AS
	OPERATOR 1 pg_catalog.= (text, text),
	FUNCTION 1 pg_catalog.hashtextextended(text,bigint);
ALTER OPERATOR FAMILY text_ops USING amqfilter ADD
	OPERATOR 1 pg_catalog.= (name, text);
ALTER OPERATOR FAMILY text_ops USING amqfilter ADD
	OPERATOR 1 pg_catalog.= (text, name);
CREATE OPERATOR FAMILY tid_ops USING amqfilter;
CREATE OPERATOR CLASS tid_ops DEFAULT FOR TYPE tid USING amqfilter FAMILY tid_ops AS
	OPERATOR 1 pg_catalog.= (tid, tid),
	FUNCTION 1 pg_catalog.hashtidextended(tid,bigint);
CREATE OPERATOR FAMILY time_ops USING amqfilter;
CREATE OPERATOR CLASS time_ops DEFAULT FOR TYPE time without time zone USING amqfilter FAMILY time_ops AS
	OPERATOR 1 pg_catalog.= (time without time zone, time without time zone),
	FUNCTION 1 pg_catalog.time_hash_extended(time without time zone,bigint);
CREATE OPERATOR FAMILY timestamp_ops USING amqfilter;
CREATE OPERATOR CLASS timestamp_ops DEFAULT FOR TYPE timestamp without time zone USING amqfilter FAMILY timestamp_ops AS
	OPERATOR 1 pg_catalog.= (timestamp without time zone, timestamp without time zone),
	FUNCTION 1 pg_catalog.timestamp_hash_extended(timestamp without time zone,bigint);
CREATE OPERATOR FAMILY timestamptz_ops USING amqfilter;
CREATE OPERATOR CLASS timestamptz_ops DEFAULT FOR TYPE timestamp with time zone USING amqfilter FAMILY timestamptz_ops AS
	OPERATOR 1 pg_catalog.= (timestamp with time zone, timestamp with time zone),
	FUNCTION 1 pg_catalog.timestamp_hash_extended(timestamp without time zone,bigint);
CREATE OPERATOR FAMILY timetz_ops USING amqfilter;
CREATE OPERATOR CLASS timetz_ops DEFAULT FOR TYPE time with time zone USING amqfilter FAMILY timetz_ops AS
	OPERATOR 1 pg_catalog.= (time with time zone, time with time zone),
	FUNCTION 1 pg_catalog.timetz_hash_extended(time with time zone,bigint);
CREATE OPERATOR FAMILY uuid_ops USING amqfilter;
CREATE OPERATOR CLASS uuid_ops DEFAULT FOR TYPE uuid USING amqfilter FAMILY uuid_ops AS
	OPERATOR 1 pg_catalog.= (uuid, uuid),
	FUNCTION 1 pg_catalog.uuid_hash_extended(uuid,bigint);
CREATE OPERATOR FAMILY xid8_ops USING amqfilter;
CREATE OPERATOR CLASS xid8_ops DEFAULT FOR TYPE xid8 USING amqfilter FAMILY xid8_ops AS
	OPERATOR 1 pg_catalog.= (xid8, xid8),
	FUNCTION 1 pg_catalog.hashint8extended(bigint,bigint);
CREATE OPERATOR FAMILY xid_ops USING amqfilter;
CREATE OPERATOR CLASS xid_ops DEFAULT FOR TYPE xid USING amqfilter FAMILY xid_ops AS
	OPERATOR 1 pg_catalog.= (xid, xid),
	FUNCTION 1 pg_catalog.hashint4extended(integer,bigint);

CREATE FUNCTION amqfilter_index_info(index regclass,
	OUT bytes bigint, OUT generations integer, OUT entries bigint,
	OUT everywhere bigint, OUT pages_per_range integer, OUT ranges bigint,
	OUT false_positive_rate double precision,
	OUT target_false_positive_rate double precision,
	OUT build_entries bigint, OUT saturated boolean,
	OUT partition_index regclass)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT ROWS 1;
COMMENT ON FUNCTION amqfilter_index_info(regclass) IS
	'an amqfilter index: its size, generations, entries (a value and a block range), those that say "everywhere", the table''s blocks per range and ranges, its rate of "maybe" for absent values now and its target, and whether a page or the index filled up (then REINDEX it); for the index of a partitioned table, a row per partition''s index and a total';

CREATE FUNCTION amqfilter_index_candidates(index regclass, value anyelement)
	RETURNS SETOF regclass
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT ROWS 1;
COMMENT ON FUNCTION amqfilter_index_candidates(regclass, anyelement) IS
	'the tables (for the index of a partitioned table, the partitions) whose amqfilter index may hold value; needs SELECT on the column';

CREATE FUNCTION amqfilter_index_filter(index regclass,
	p double precision DEFAULT NULL)
	RETURNS bloom
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION amqfilter_index_filter(regclass, double precision) IS
	'the bloom filter of what an amqfilter index covers (its column or expression over its table''s rows, every partition''s for a partitioned index), at rate p (NULL: the index''s false_positive_rate), built from the table as the caller: the caller''s privileges and policies apply';

CREATE FUNCTION bloom_index_contains(index regclass, value anyelement)
	RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION bloom_index_contains(regclass, anyelement) IS
	'false if the amqfilter index rules value out of its column, true if it may be there; needs SELECT on the column';

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
