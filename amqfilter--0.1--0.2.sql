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
