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
-- Partition filters: one bloom filter per leaf partition of a table, kept in
-- an extension-owned table; lookups scan only the partitions whose filter may
-- hold a value.  A write to a partition after its filter was built marks the
-- filter stale (src/partition_filter.c says how, and what writers pay), and a
-- stale filter, a partition without one, or one whose trigger is missing or
-- not enabled ALWAYS, is always scanned.
--
-- The extension is relocatable, so its SQL functions find the objects of its
-- schema at run time (pg_extension.extnamespace) and name them qualified.
--

CREATE TABLE amqfilter_partition_filter (
	parent regclass NOT NULL,
	partition regclass NOT NULL,
	column_name name NOT NULL,
	filter bloom NOT NULL,
	rows bigint NOT NULL,
	distinct_values bigint NOT NULL,
	built_at timestamptz NOT NULL,
	stale boolean NOT NULL DEFAULT false,
	PRIMARY KEY (partition, column_name)
);
COMMENT ON TABLE amqfilter_partition_filter IS
	'one bloom filter per leaf partition and column, built by bloom_partition_build; stale once the partition is written';
SELECT pg_catalog.pg_extension_config_dump('amqfilter_partition_filter', '');

-- Anyone may use partition filters, but only those of tables they may read
-- (the partition, or the table it was built through), and only the owner of a partition may record its filter: a filter that claims
-- a partition lacks a value hides rows from everybody's lookups.
ALTER TABLE amqfilter_partition_filter ENABLE ROW LEVEL SECURITY;
GRANT SELECT, INSERT, UPDATE, DELETE ON amqfilter_partition_filter TO PUBLIC;
CREATE POLICY readers ON amqfilter_partition_filter FOR SELECT
	USING (pg_catalog.has_table_privilege(partition, 'SELECT')
		   OR pg_catalog.has_table_privilege(parent, 'SELECT'));
CREATE POLICY owners ON amqfilter_partition_filter FOR ALL
	USING (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
								   WHERE c.oid = partition), 'USAGE'));

CREATE FUNCTION amqfilter_partition_check(parent regclass, column_name name)
	RETURNS regtype
	AS 'MODULE_PATHNAME' LANGUAGE C STABLE;
COMMENT ON FUNCTION amqfilter_partition_check(regclass, name) IS
	'internal: the type of a column, checked to exist and to be hashable by filters';

CREATE FUNCTION amqfilter_partition_written(partition regclass) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION amqfilter_partition_written(regclass) IS
	'internal: condition of the partition filter trigger, true at the first write to a partition in a transaction';

CREATE FUNCTION amqfilter_partition_pending(partition regclass) RETURNS boolean
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION amqfilter_partition_pending(regclass) IS
	'internal: true if this transaction wrote the partition since its filter was built, before the mark made at commit';

CREATE FUNCTION amqfilter_partition_forget() RETURNS void
	AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION amqfilter_partition_forget() IS
	'internal: makes the next write to each partition in this transaction mark its filter stale again';

CREATE FUNCTION amqfilter_partition_mark() RETURNS trigger
	AS 'MODULE_PATHNAME' LANGUAGE C;
COMMENT ON FUNCTION amqfilter_partition_mark() IS
	'internal: trigger marking the filters of a written partition stale';

CREATE FUNCTION bloom_partition_build(parent regclass, column_name name,
	p double precision DEFAULT 0.001,
	OUT partition regclass, OUT rows bigint, OUT distinct_values bigint,
	OUT bytes bigint)
	RETURNS SETOF record
	LANGUAGE plpgsql VOLATILE
AS $build$
#variable_conflict use_column
DECLARE
	sch text;
	leaf regclass;
	kind "char";
	trig record;
	f bloom;
	nrows bigint;
	ndistinct bigint;
	nbytes bigint;
BEGIN
	sch := (SELECT e.extnamespace::pg_catalog.regnamespace::text
			  FROM pg_catalog.pg_extension e WHERE e.extname = 'amqfilter');
	-- the checks that cost nothing, before any work
	EXECUTE format('SELECT %s.amqfilter_partition_check($1, $2)', sch)
		USING parent, column_name;
	IF p IS NULL THEN
		RAISE EXCEPTION 'p must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	EXECUTE format('SELECT %s.bloom_params(1, $1)', sch) USING p;
	IF NOT pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
								   WHERE c.oid = parent), 'USAGE') THEN
		RAISE EXCEPTION 'must be owner of table %', parent
			USING ERRCODE = 'insufficient_privilege';
	END IF;
	IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'bloom_partition_build must run at READ COMMITTED'
			USING ERRCODE = 'active_sql_transaction',
				  DETAIL = 'A build reads each partition after locking it against writers; under a transaction snapshot taken earlier it could miss rows committed in between.',
				  HINT = 'Run it in its own transaction, or one begun with ISOLATION LEVEL READ COMMITTED.';
	END IF;

	-- rows of partitions that no longer exist
	EXECUTE format('DELETE FROM %s.amqfilter_partition_filter f
		WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.oid = f.partition)', sch);

	FOR leaf, kind IN
		SELECT t.relid, c.relkind
		  FROM (SELECT * FROM pg_catalog.pg_partition_tree(parent)
		        UNION ALL   -- a table outside any partition tree
		        SELECT parent, NULL, true, 0
		         WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_partition_tree(parent))) t
		  JOIN pg_catalog.pg_class c ON c.oid = t.relid
		 WHERE t.isleaf
		 ORDER BY t.level, t.relid::text
	LOOP
		IF kind <> 'r' THEN
			RAISE NOTICE 'bloom_partition_build: % is not a plain table; it has no filter and is always scanned', leaf;
			CONTINUE;
		END IF;

		-- the trigger that marks the filter stale, enabled ALWAYS so that it
		-- fires under logical replication apply too; creating or enabling it
		-- locks out writers until the end of the transaction
		SELECT g.tgfoid, g.tgenabled INTO trig FROM pg_catalog.pg_trigger g
		 WHERE g.tgrelid = leaf AND g.tgname = 'amqfilter_partition_filter';
		IF NOT FOUND THEN
			EXECUTE format('CREATE CONSTRAINT TRIGGER amqfilter_partition_filter
				AFTER INSERT OR UPDATE ON %s DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
				WHEN (%s.amqfilter_partition_written(%L::pg_catalog.regclass))
				EXECUTE FUNCTION %s.amqfilter_partition_mark()',
				leaf, sch, leaf::oid, sch);
			EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER amqfilter_partition_filter', leaf);
		ELSIF trig.tgfoid <> format('%s.amqfilter_partition_mark()', sch)::regprocedure THEN
			RAISE EXCEPTION 'trigger "amqfilter_partition_filter" of % is not amqfilter''s', leaf
				USING ERRCODE = 'duplicate_object',
					  HINT = 'Rename or drop that trigger.';
		ELSIF trig.tgenabled <> 'A' THEN
			EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER amqfilter_partition_filter', leaf);
		END IF;
		EXECUTE format('LOCK TABLE %s IN SHARE MODE', leaf);

		-- sized for the distinct values the partition holds now
		EXECUTE format('SELECT count(*), count(DISTINCT %I) FROM %s', column_name, leaf)
			INTO nrows, ndistinct;
		EXECUTE format('SELECT %s.bloom_agg(%I, $1, $2) FROM %s', sch, column_name, leaf)
			INTO f USING greatest(ndistinct, 1), p;
		EXECUTE format('SELECT (%s.bloom_info($1)).bytes', sch) INTO nbytes USING f;

		EXECUTE format('INSERT INTO %s.amqfilter_partition_filter AS t
			(parent, partition, column_name, filter, rows, distinct_values, built_at, stale)
			VALUES ($1, $2, $3, $4, $5, $6, pg_catalog.clock_timestamp(), false)
			ON CONFLICT (partition, column_name) DO UPDATE
			SET parent = EXCLUDED.parent, filter = EXCLUDED.filter, rows = EXCLUDED.rows,
				distinct_values = EXCLUDED.distinct_values, built_at = EXCLUDED.built_at,
				stale = false', sch)
			USING parent, leaf, column_name, f, nrows, ndistinct;

		RAISE NOTICE 'bloom_partition_build: %: % rows, % distinct, % bytes', leaf, nrows, ndistinct, nbytes;
		partition := leaf;
		rows := nrows;
		distinct_values := ndistinct;
		bytes := nbytes;
		RETURN NEXT;
	END LOOP;

	-- a write later in this transaction must mark the new filters stale
	EXECUTE format('SELECT %s.amqfilter_partition_forget()', sch);
END
$build$;
COMMENT ON FUNCTION bloom_partition_build(regclass, name, double precision) IS
	'builds one bloom filter per leaf partition of parent over column_name, sized for its distinct values, into amqfilter_partition_filter';

CREATE FUNCTION bloom_partition_candidates(parent regclass, column_name name,
	value anycompatible)
	RETURNS SETOF regclass
	LANGUAGE plpgsql STABLE
AS $candidates$
DECLARE
	sch text;
BEGIN
	sch := (SELECT e.extnamespace::pg_catalog.regnamespace::text
			  FROM pg_catalog.pg_extension e WHERE e.extname = 'amqfilter');
	EXECUTE format('SELECT %s.amqfilter_partition_check($1, $2)', sch)
		USING parent, column_name;
	-- no row equals NULL
	IF value IS NULL THEN
		RETURN;
	END IF;
	RETURN QUERY EXECUTE format(
		'SELECT t.relid::pg_catalog.regclass
		   FROM (SELECT * FROM pg_catalog.pg_partition_tree($1)
		         UNION ALL   -- a table outside any partition tree
		         SELECT $1, NULL, true, 0
		          WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_partition_tree($1))) t
		   LEFT JOIN %1$s.amqfilter_partition_filter f
		     ON f.partition = t.relid AND f.column_name = $2
		  WHERE t.isleaf
		    AND (f.partition IS NULL OR f.stale
		         OR NOT EXISTS (SELECT FROM pg_catalog.pg_trigger g
		                         WHERE g.tgrelid = t.relid
		                           AND g.tgname = ''amqfilter_partition_filter''
		                           AND g.tgfoid = ''%1$s.amqfilter_partition_mark()''::pg_catalog.regprocedure
		                           AND g.tgenabled = ''A'')
		         OR %1$s.amqfilter_partition_pending(t.relid)
		         OR %1$s.bloom_contains(f.filter, $3))
		  ORDER BY t.level, t.relid::pg_catalog.text', sch)
		USING parent, column_name, value;
END
$candidates$;
COMMENT ON FUNCTION bloom_partition_candidates(regclass, name, anycompatible) IS
	'the leaf partitions of parent that may hold rows whose column_name equals value: those whose filter may contain it, and all without a current filter';

CREATE FUNCTION bloom_partition_lookup(parent anyelement, column_name name,
	value anycompatible)
	RETURNS SETOF anyelement
	LANGUAGE plpgsql STABLE
AS $lookup$
DECLARE
	sch text;
	rel regclass;
	cols text;
	part regclass;
BEGIN
	SELECT c.oid INTO rel FROM pg_catalog.pg_type t
		JOIN pg_catalog.pg_class c ON c.oid = t.typrelid
	 WHERE t.oid = pg_catalog.pg_typeof(parent) AND c.relkind IN ('r', 'p');
	IF rel IS NULL THEN
		RAISE EXCEPTION 'parent must be a null value of a table''s row type, not of type %',
			pg_catalog.pg_typeof(parent)
			USING ERRCODE = 'wrong_object_type',
				  HINT = 'Call it as bloom_partition_lookup(NULL::orders, ''customer_id'', 42).';
	END IF;
	sch := (SELECT e.extnamespace::pg_catalog.regnamespace::text
			  FROM pg_catalog.pg_extension e WHERE e.extname = 'amqfilter');
	-- the parent's columns by name, in its order: a partition may order them
	-- differently
	SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY a.attnum)
	  INTO cols FROM pg_catalog.pg_attribute a
	 WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped;
	FOR part IN EXECUTE format('SELECT * FROM %s.bloom_partition_candidates($1, $2, $3)', sch)
		USING rel, column_name, value
	LOOP
		IF pg_catalog.has_table_privilege(part, 'SELECT') THEN
			RETURN QUERY EXECUTE format('SELECT %s FROM %s WHERE %I = $1',
										cols, part, column_name)
				USING value;
		ELSE
			-- through the table asked about, whose privileges and row
			-- security then apply, restricted to the partition's rows by its
			-- constraint (which also lets the planner prune the others)
			RETURN QUERY EXECUTE format('SELECT %s FROM %s WHERE %I = $1 AND %s',
										cols, rel, column_name,
										coalesce(pg_catalog.pg_get_partition_constraintdef(part), 'true'))
				USING value;
		END IF;
	END LOOP;
END
$lookup$;
COMMENT ON FUNCTION bloom_partition_lookup(anyelement, name, anycompatible) IS
	'the rows of the table whose row type parent has (NULL::orders) whose column_name equals value, scanning only the candidate partitions';

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
