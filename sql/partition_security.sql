--
-- Partition filters in other people's sessions: no function or operator a
-- role plants on a search_path is ever called by the extension, whoever
-- runs it; a filter tells a role no more than the rows it may read; nobody
-- but a build writes filters.
--
SET client_min_messages = warning;
\set SHOW_CONTEXT never

CREATE ROLE regress_amq_mallory;
CREATE ROLE regress_amq_alice;
CREATE ROLE regress_amq_reader;
CREATE ROLE regress_amq_partial;
CREATE ROLE regress_amq_colreader;
GRANT CREATE ON SCHEMA public TO regress_amq_mallory, regress_amq_alice;

--
-- 1. The trap: a schema of Mallory's whose operators and functions match the
-- argument types the extension's queries use more exactly than
-- pg_catalog's do, each recording who called it
--
CREATE SCHEMA regress_amq_evil AUTHORIZATION regress_amq_mallory;
SET ROLE regress_amq_mallory;
CREATE TABLE regress_amq_evil.calls (who name, what text);
GRANT INSERT ON regress_amq_evil.calls TO PUBLIC;
GRANT USAGE ON SCHEMA regress_amq_evil TO PUBLIC;
CREATE FUNCTION regress_amq_evil.spy(what text) RETURNS boolean
	LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO regress_amq_evil.calls VALUES (current_user, what);
	RETURN true;
END $$;
-- each operator records its call and then answers as pg_catalog's would,
-- so that nothing but the record tells it ran
DO $$
DECLARE
	t record;
BEGIN
	FOR t IN SELECT * FROM (VALUES ('regclass', 'regclass', 'oid'), ('oid', 'oid', 'oid'),
		('regclass', 'oid', 'oid'), ('oid', 'regclass', 'oid'), ('name', 'name', 'name'),
		('bigint', 'bigint', 'bigint'), ('bigint', 'integer', 'bigint'),
		('text', 'text', 'text'), ('xid', 'xid', 'xid'), ('tid', 'tid', 'tid'),
		('oid[]', 'oid[]', 'oid[]')) v(l, r, cmp)
	LOOP
		EXECUTE format('CREATE FUNCTION regress_amq_evil.eq(%s, %s) RETURNS boolean
			LANGUAGE sql AS $f$ SELECT regress_amq_evil.spy(%L)
				AND $1::%s OPERATOR(pg_catalog.=) $2::%s $f$',
			t.l, t.r, '=(' || t.l || ', ' || t.r || ')', t.cmp, t.cmp);
		EXECUTE format('CREATE OPERATOR regress_amq_evil.= (LEFTARG = %s, RIGHTARG = %s,
			FUNCTION = regress_amq_evil.eq)', t.l, t.r);
	END LOOP;
END $$;
-- exact-match look-alikes of the functions the extension calls
CREATE FUNCTION regress_amq_evil.bloom_contains(bloom, bigint) RETURNS boolean
	LANGUAGE sql AS $$ SELECT regress_amq_evil.spy('bloom_contains') $$;
CREATE FUNCTION regress_amq_evil.bloom_contains(bloom, text) RETURNS boolean
	LANGUAGE sql AS $$ SELECT regress_amq_evil.spy('bloom_contains') $$;
CREATE FUNCTION regress_amq_evil.amqfilter_partition_written(regclass) RETURNS boolean
	LANGUAGE sql AS $$ SELECT NOT regress_amq_evil.spy('written') $$;
CREATE FUNCTION regress_amq_evil.quote_ident(text) RETURNS text
	LANGUAGE sql AS $$ SELECT regress_amq_evil.spy('quote_ident')::text $$;
CREATE FUNCTION regress_amq_evil.count_add(bigint, bigint) RETURNS bigint
	LANGUAGE sql AS $$ SELECT CASE WHEN regress_amq_evil.spy('count') THEN $1 + 1 END $$;
CREATE AGGREGATE regress_amq_evil.count(bigint) (
	SFUNC = regress_amq_evil.count_add, STYPE = bigint, INITCOND = '0');
RESET ROLE;
-- the trap is armed: plain SQL under that path calls it
SET search_path = public, regress_amq_evil;
SELECT 'pg_class'::regclass = 'pg_class'::regclass AS plain_sql_calls_it;
SELECT who, what FROM regress_amq_evil.calls;
TRUNCATE regress_amq_evil.calls;
RESET search_path;

-- 2. Mallory's own table with a filter: her writes are recorded as the
-- extension's tables' owner (a superuser here), under her search_path
SET ROLE regress_amq_mallory;
CREATE TABLE public.regress_m (id int8, k int8) PARTITION BY RANGE (id);
CREATE TABLE public.regress_m_1 PARTITION OF public.regress_m FOR VALUES FROM (0) TO (100);
CREATE TABLE public.regress_m_2 PARTITION OF public.regress_m FOR VALUES FROM (100) TO (200);
INSERT INTO public.regress_m SELECT g, g FROM generate_series(0, 199) g;
SET search_path = regress_amq_evil, public;
SELECT count(*) FROM bloom_partition_build('regress_m', 'k');
INSERT INTO regress_m VALUES (1, 5000);
UPDATE regress_m SET k = 5001 WHERE id = 150;
COPY regress_m FROM STDIN;
2	5002
\.
SELECT count(*) FROM bloom_partition_lookup(NULL::regress_m, 'k', 5000);
SELECT count(*) FROM bloom_partition_lookup(NULL::regress_m, 'k', 5001::int);
SELECT count(*) FROM bloom_partition_candidates('regress_m', 'k', 5002);
SELECT partition, state FROM bloom_partition_status('regress_m', 'k') ORDER BY 1::text;
RESET search_path;
RESET ROLE;
SELECT who, what FROM regress_amq_evil.calls;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_amq_mallory';

-- 3. Alice, and a superuser, call every function with Mallory's schema on
-- their path, before pg_catalog and after it
CREATE TABLE regress_a (id int8, k int8, t text) PARTITION BY RANGE (id);
CREATE TABLE regress_a_1 PARTITION OF regress_a FOR VALUES FROM (0) TO (100);
CREATE TABLE regress_a_2 PARTITION OF regress_a FOR VALUES FROM (100) TO (200);
INSERT INTO regress_a SELECT g, g, 't' || g FROM generate_series(0, 199) g;
ALTER TABLE regress_a OWNER TO regress_amq_alice;
ALTER TABLE regress_a_1 OWNER TO regress_amq_alice;
ALTER TABLE regress_a_2 OWNER TO regress_amq_alice;
CREATE FUNCTION regress_calls_each_way() RETURNS TABLE (path text, rows bigint)
	LANGUAGE plpgsql AS $$
DECLARE
	p text;
BEGIN
	FOREACH p IN ARRAY ARRAY['regress_amq_evil, public', 'public, regress_amq_evil',
							 'pg_catalog, regress_amq_evil, public']
	LOOP
		PERFORM set_config('search_path', p, true);
		PERFORM bloom_partition_build('regress_a', 'k');
		PERFORM bloom_partition_build('regress_a', 't');
		INSERT INTO regress_a VALUES (3, 7000, 'w');
		rows := (SELECT count(*) FROM bloom_partition_lookup(NULL::regress_a, 'k', 7000))
			+ (SELECT count(*) FROM bloom_partition_lookup(NULL::regress_a, 't', 't150'))
			+ (SELECT count(*) FROM bloom_partition_lookup(NULL::regress_a, 't', 'w'::text))
			+ (SELECT count(*) FROM bloom_partition_candidates('regress_a', 'k', 7000))
			+ (SELECT count(*) FROM bloom_partition_candidates('regress_a', 'k', 150::int))
			+ (SELECT count(*) FROM bloom_partition_status('regress_a', 'k'));
		DELETE FROM regress_a WHERE k = 7000;
		path := p;
		RETURN NEXT;
	END LOOP;
END $$;
SET ROLE regress_amq_alice;
SELECT * FROM regress_calls_each_way();
RESET ROLE;
SELECT who, what FROM regress_amq_evil.calls;
SELECT * FROM regress_calls_each_way();
SELECT who, what FROM regress_amq_evil.calls;

-- every function of the extension that runs queries pins its search_path,
-- and none is SECURITY DEFINER
SELECT p.proname, p.proconfig, p.prosecdef
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'amqfilter')
   AND d.deptype = 'e' AND (p.proname LIKE '%partition%' OR p.prosecdef)
 ORDER BY p.proname;

--
-- 4. Row-level security and column privileges: a filter is readable only by
-- a role that could read every value of its column
--
CREATE TABLE regress_sec (id int, ssn text) PARTITION BY RANGE (id);
CREATE TABLE regress_sec_1 PARTITION OF regress_sec FOR VALUES FROM (0) TO (1000);
CREATE TABLE regress_sec_2 PARTITION OF regress_sec FOR VALUES FROM (1000) TO (2000);
INSERT INTO regress_sec SELECT g, 'secret-' || g FROM generate_series(0, 1999) g;
ALTER TABLE regress_sec ENABLE ROW LEVEL SECURITY;
CREATE POLICY hide_all ON regress_sec FOR SELECT TO regress_amq_reader USING (false);
CREATE POLICY first_half ON regress_sec FOR SELECT TO regress_amq_partial USING (id < 1000);
GRANT SELECT ON regress_sec TO regress_amq_reader, regress_amq_partial;
SELECT count(*) FROM bloom_partition_build('regress_sec', 'ssn');
SELECT count(*) FROM bloom_partition_build('regress_sec', 'id');

-- a role whose policy hides every row learns nothing from the filters
SET ROLE regress_amq_reader;
SELECT count(*) FROM regress_sec WHERE ssn = 'secret-1';
SELECT count(*) AS filters, bool_or(filter @> 'secret-1'::text) AS leaks,
       sum(rows) AS rows, sum(distinct_values) AS distinct_values
  FROM amqfilter_partition_filter WHERE partition::text LIKE 'regress_sec%';
-- every partition is a candidate, for a value that is there and one that is not
SELECT c FROM bloom_partition_candidates('regress_sec', 'ssn', 'secret-1') c ORDER BY 1::text;
SELECT c FROM bloom_partition_candidates('regress_sec', 'ssn', 'absent') c ORDER BY 1::text;
SELECT count(*) FROM bloom_partition_lookup(NULL::regress_sec, 'ssn', 'secret-1');
SELECT partition, state, rows FROM bloom_partition_status('regress_sec', 'ssn') ORDER BY 1::text;
RESET ROLE;

-- a role that sees half the rows gets exactly what the plain query gives
SET ROLE regress_amq_partial;
SELECT count(*) FROM amqfilter_partition_filter WHERE partition::text LIKE 'regress_sec%';
SELECT v, (SELECT count(*) FROM bloom_partition_lookup(NULL::regress_sec, 'ssn', v)) AS lookup,
       (SELECT count(*) FROM regress_sec WHERE ssn = v) AS plain
  FROM unnest(ARRAY['secret-1', 'secret-1500', 'absent']) v;
RESET ROLE;

-- SELECT on the partition itself, which has no row security of its own:
-- its filter is readable (the role can read all its rows anyway), the
-- other's is not
GRANT SELECT ON regress_sec_1 TO regress_amq_reader;
SET ROLE regress_amq_reader;
SELECT partition::text, column_name FROM amqfilter_partition_filter
 WHERE partition::text LIKE 'regress_sec%' ORDER BY 1, 2;
-- the lookup still goes through the table asked about, whose policy hides all
SELECT count(*) FROM bloom_partition_lookup(NULL::regress_sec, 'ssn', 'secret-1');
RESET ROLE;
REVOKE SELECT ON regress_sec_1 FROM regress_amq_reader;

-- column privileges: a filter of a column the role may not read is hidden
CREATE TABLE regress_cols (id int, ssn text);
INSERT INTO regress_cols SELECT g, 'secret-' || g FROM generate_series(0, 99) g;
SELECT count(*) FROM bloom_partition_build('regress_cols', 'ssn');
SELECT count(*) FROM bloom_partition_build('regress_cols', 'id');
GRANT SELECT (id) ON regress_cols TO regress_amq_colreader;
SET ROLE regress_amq_colreader;
SELECT column_name FROM amqfilter_partition_filter WHERE partition = 'regress_cols'::regclass;
SELECT count(*) FROM bloom_partition_candidates('regress_cols', 'ssn', 'secret-1');
SELECT count(*) FROM bloom_partition_candidates('regress_cols', 'ssn', 'absent');
SELECT count(*) FROM bloom_partition_candidates('regress_cols', 'id', -1);
RESET ROLE;

-- a build as a role that row security would hide rows from is refused
ALTER TABLE regress_cols OWNER TO regress_amq_alice;
ALTER TABLE regress_cols ENABLE ROW LEVEL SECURITY;
ALTER TABLE regress_cols FORCE ROW LEVEL SECURITY;
CREATE POLICY few ON regress_cols USING (id < 10);
SET ROLE regress_amq_alice;
SELECT count(*) FROM bloom_partition_build('regress_cols', 'ssn');
RESET ROLE;

--
-- 5. Nobody writes the extension's tables but a build, which only a table's
-- owner may run
--
SELECT count(*) FROM bloom_partition_build('regress_a', 'k');
SET ROLE regress_amq_mallory;
SELECT count(*) FROM bloom_partition_build('regress_a', 'k');
UPDATE amqfilter_partition_filter SET built_at = now();
DELETE FROM amqfilter_partition_filter;
INSERT INTO amqfilter_partition_filter SELECT * FROM amqfilter_partition_filter;
DELETE FROM amqfilter_partition_write;
SELECT count(*) FROM amqfilter_partition_write;
-- calling the trigger's condition for a table she may not write records
-- nothing: no role can make another's filters useless
SELECT amqfilter_partition_written('regress_a_1');
RESET ROLE;
SELECT partition, state FROM bloom_partition_status('regress_a', 'k') ORDER BY 1::text;
-- by one who may write it, it records the write early, as if she had written
SET ROLE regress_amq_alice;
SELECT amqfilter_partition_written('regress_a_1');
RESET ROLE;
SELECT partition, state FROM bloom_partition_status('regress_a', 'k') ORDER BY 1::text;

DROP TABLE regress_m, regress_a, regress_sec, regress_cols CASCADE;
DROP FUNCTION regress_calls_each_way();
DROP SCHEMA regress_amq_evil CASCADE;
REVOKE CREATE ON SCHEMA public FROM regress_amq_mallory, regress_amq_alice;
DROP ROLE regress_amq_mallory, regress_amq_alice, regress_amq_reader,
	regress_amq_partial, regress_amq_colreader;
