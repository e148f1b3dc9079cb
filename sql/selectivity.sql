-- Planner estimates of probes.  A filter known at plan time is estimated
-- from its own summary and the column's statistics; the estimates are
-- checked against the actual row counts within a factor of 3 (the bands are
-- wide so that sampling noise in ANALYZE never makes the test flap).

CREATE SCHEMA selectivity;
SET search_path = selectivity, public;

CREATE TABLE t AS SELECT g::int8 AS id FROM generate_series(1, 100000) g;
-- half NULLs: NULLs never pass a probe
CREATE TABLE half_null AS
SELECT CASE WHEN g % 2 = 0 THEN g::int8 END AS id FROM generate_series(1, 100000) g;
ANALYZE t, half_null;

CREATE TABLE filters AS
SELECT name, b, c FROM (VALUES
  -- every 10th id: 10% of t plus about 1% false positives
  ('tenth', (SELECT bloom_agg(id, 10000, 0.01) FROM t WHERE id % 10 = 0),
            (SELECT cuckoo_agg(id, 10000, 0.01) FROM t WHERE id % 10 = 0)),
  -- 100 ids: the false positives are most of what passes
  ('hundred', (SELECT bloom_agg(id, 100, 0.01) FROM t WHERE id <= 100),
              (SELECT cuckoo_agg(id, 100, 0.01) FROM t WHERE id <= 100)),
  -- the sizeless empty filter
  ('empty', (SELECT bloom_agg(id, 10, 0.01) FROM t WHERE false),
            (SELECT cuckoo_agg(id, 10, 0.01) FROM t WHERE false))) v(name, b, c);

-- the planner's row estimate for a query
CREATE FUNCTION estimated_rows(query text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
  RETURN (plan -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
END $$;
CREATE FUNCTION actual_rows(query text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
BEGIN
  EXECUTE 'SELECT count(*) FROM (' || query || ') q' INTO n;
  RETURN n;
END $$;

-- each probe form with the filter as a constant: within 3x of the actual rows
SELECT name, form,
       estimated_rows(q) BETWEEN actual_rows(q) / 3 AND greatest(actual_rows(q), 1) * 3 AS within_3x
  FROM filters,
       LATERAL (VALUES
         ('bloom @>', format('SELECT * FROM t WHERE %L::bloom @> id', b)),
         ('bloom <@', format('SELECT * FROM t WHERE id <@ %L::bloom', b)),
         ('bloom_contains', format('SELECT * FROM t WHERE bloom_contains(%L::bloom, id)', b)),
         ('bloom_contained_by', format('SELECT * FROM t WHERE bloom_contained_by(id, %L::bloom)', b)),
         ('cuckoo @>', format('SELECT * FROM t WHERE %L::cuckoo @> id', c)),
         ('cuckoo <@', format('SELECT * FROM t WHERE id <@ %L::cuckoo', c)),
         ('cuckoo_contains', format('SELECT * FROM t WHERE cuckoo_contains(%L::cuckoo, id)', c)),
         ('cuckoo_contained_by', format('SELECT * FROM t WHERE cuckoo_contained_by(id, %L::cuckoo)', c)))
         v(form, q)
 ORDER BY name, form;

-- the estimate follows what the filter holds: 10% of t, then about 1%
SELECT round(estimated_rows(format('SELECT * FROM t WHERE %L::bloom @> id', b)) / 1000) AS thousand_rows
  FROM filters WHERE name IN ('tenth', 'hundred') ORDER BY name DESC;

-- NULLs never pass: half the column is NULL; leaving them out of the
-- estimate would double it, so this band is narrower (1.5x)
SELECT estimated_rows(q) BETWEEN actual_rows(q) / 1.5 AND actual_rows(q) * 1.5 AS nulls_counted
  FROM filters, LATERAL format('SELECT * FROM half_null WHERE %L::bloom @> id', b) q
 WHERE name = 'tenth';

-- a parameter of a custom plan is known at plan time too
SELECT b::text AS tenth_bloom FROM filters WHERE name = 'tenth' \gset
PREPARE probe(bloom) AS SELECT * FROM t WHERE $1 @> id;
SET plan_cache_mode = force_custom_plan;
CREATE FUNCTION estimated_rows_execute(filter bloom) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  EXECUTE format('EXPLAIN (FORMAT JSON) EXECUTE probe(%L)', filter) INTO plan;
  RETURN (plan -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
END $$;
SELECT estimated_rows_execute(:'tenth_bloom') BETWEEN 11000 / 3 AND 11000 * 3 AS custom_plan_estimated;
RESET plan_cache_mode;

-- a filter known only at run time (a scalar subquery) keeps PostgreSQL's
-- defaults: half the rows for the operator, a third for the function
SELECT estimated_rows('SELECT * FROM t WHERE (SELECT b FROM filters WHERE name = ''tenth'') @> id')
         BETWEEN 40000 AND 60000 AS operator_default,
       estimated_rows('SELECT * FROM t WHERE bloom_contains((SELECT b FROM filters WHERE name = ''tenth''), id)')
         BETWEEN 25000 AND 42000 AS function_default;

DROP SCHEMA selectivity CASCADE;
