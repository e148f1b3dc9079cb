#!/usr/bin/env bash
# test/upgrade.sh: upgrading amqfilter in place gives what a fresh install gives.
#
#   sudo bash test/upgrade.sh
#
# Against the installed extension (test/run.sh builds and installs it first), in a
# throwaway cluster (test/lib.sh's start_cluster):
#
#   1. the release files agree: amqfilter.control's default_version is the Makefile's
#      EXTVERSION, its full script exists, and every older released version has an
#      upgrade path to it;
#   2. for each older version V: CREATE EXTENSION amqfilter VERSION 'V' in a fresh
#      database, store bloom filters (both layouts, the sizeless empty one, a TOASTed
#      one) and cuckoo filters (small, grown, after deletes, empty) in a table and
#      record their bytes and the answers to fixed probes; ALTER EXTENSION amqfilter
#      UPDATE; then
#        - the extension's objects (pg_describe_object of its pg_depend members) and
#          their definitions (function signatures, volatility, strictness, parallel
#          safety, C symbols, aggregate support functions, operators, casts, types,
#          event triggers, comments) equal those of a fresh install of the default version;
#        - the stored filters have the same bytes and give the same answers, and new
#          filters built after the upgrade equal the stored ones.
#
# It prints PASS or FAIL per check and exits non-zero when any check failed.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

WORK=$(mktemp -d /tmp/amqfilter-upgrade.XXXXXX)
trap 'rm -rf "$WORK"; stop_cluster' EXIT


# check NAME FILE_A FILE_B: pass when the files are equal, else show the difference.
check_same() {
	local name=$1 a=$2 b=$3
	if cmp -s "$a" "$b"; then
		pass "$name ($(wc -l <"$a") lines)"
	else
		fail "$name"
		diff "$a" "$b" | head -n 40 || true
	fi
}

# Everything that defines the extension's SQL surface, one line per object, sorted:
# two databases with equal output have equal extensions.  Comments are included, so
# an upgrade script that forgets a COMMENT ON fails too.
DESCRIBE_SQL=$(cat <<'SQL'
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'amqfilter'),
members AS (
	SELECT d.classid, d.objid, d.objsubid
	FROM pg_depend d, ext
	WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid
	  AND d.deptype = 'e'
)
SELECT pg_describe_object(m.classid, m.objid, m.objsubid)
	|| coalesce(' | ' || (
		SELECT format('returns %s; %s%s; %s; parallel %s; cost %s; rows %s; %s %s',
			pg_get_function_result(p.oid),
			CASE p.provolatile WHEN 'i' THEN 'immutable' WHEN 's' THEN 'stable' ELSE 'volatile' END,
			CASE WHEN p.proisstrict THEN ' strict' ELSE '' END,
			p.prokind, p.proparallel, p.procost, p.prorows, p.prosrc,
			coalesce(p.probin, ''))
		FROM pg_proc p WHERE m.classid = 'pg_proc'::regclass AND p.oid = m.objid), '')
	|| coalesce(' | ' || (
		SELECT format('sfunc %s; stype %s; final %s (extra %s, modify %s); combine %s; '
					  'serial %s; deserial %s; init %s',
			a.aggtransfn::regprocedure, a.aggtranstype::regtype,
			a.aggfinalfn, a.aggfinalextra, a.aggfinalmodify, a.aggcombinefn,
			a.aggserialfn, a.aggdeserialfn, coalesce(a.agginitval, '-'))
		FROM pg_aggregate a WHERE m.classid = 'pg_proc'::regclass AND a.aggfnoid = m.objid), '')
	|| coalesce(' | ' || (
		SELECT format('%s(%s, %s) -> %s; proc %s; commutator %s; negator %s; restrict %s; join %s',
			o.oprname, o.oprleft::regtype, o.oprright::regtype, o.oprresult::regtype,
			o.oprcode, o.oprcom::regoperator, o.oprnegate::regoperator, o.oprrest, o.oprjoin)
		FROM pg_operator o WHERE m.classid = 'pg_operator'::regclass AND o.oid = m.objid), '')
	|| coalesce(' | ' || (
		SELECT format('cast via %s; context %s; method %s',
			c.castfunc::regprocedure, c.castcontext, c.castmethod)
		FROM pg_cast c WHERE m.classid = 'pg_cast'::regclass AND c.oid = m.objid), '')
	|| coalesce(' | ' || (
		SELECT format('type len %s; align %s; storage %s; in %s; out %s; recv %s; send %s; '
					  'typmod %s/%s; analyze %s; category %s',
			t.typlen, t.typalign, t.typstorage, t.typinput, t.typoutput, t.typreceive,
			t.typsend, t.typmodin, t.typmodout, t.typanalyze, t.typcategory)
		FROM pg_type t WHERE m.classid = 'pg_type'::regclass AND t.oid = m.objid), '')
	|| coalesce(' | ' || (
		SELECT format('on %s; tags %s; function %s; enabled %s',
			e.evtevent, e.evttags, e.evtfoid::regprocedure, e.evtenabled)
		FROM pg_event_trigger e
		WHERE m.classid = 'pg_event_trigger'::regclass AND e.oid = m.objid), '')
	|| coalesce(' | comment: ' || obj_description(m.objid,
		(SELECT relname FROM pg_class WHERE oid = m.classid)), '')
FROM members m
ORDER BY 1;
SQL
)

# Filters stored in the old version: every kind the formats have.
STORE_SQL=$(cat <<'SQL'
CREATE TABLE stored (id int PRIMARY KEY, b bloom, c cuckoo);
INSERT INTO stored
SELECT 1, bloom_agg(g, 1000, 0.01), cuckoo_agg(g, 1000, 0.01)
FROM generate_series(1, 500) g;
INSERT INTO stored
SELECT 2, bloom_agg(g::text, 1000, 0.001, 'classic'), cuckoo_agg(g::text, 100, 0.01)
FROM generate_series(1, 900) g;                     -- cuckoo grows: n is too small
INSERT INTO stored
SELECT 3, bloom_agg(g, 200000, 0.01), cuckoo_agg(g, 200000, 0.01)
FROM generate_series(1, 200000) g;                  -- TOASTed values
INSERT INTO stored
SELECT 4, bloom_agg(g, 10, 0.01), cuckoo_agg(g, 10, 0.01)
FROM generate_series(1, 0) g;                       -- zero rows: sizeless empty
INSERT INTO stored
SELECT 5, bloom_add(bloom_empty(100, 0.01), 42::bigint),
       cuckoo_delete(cuckoo_add(cuckoo_add(cuckoo_empty(100, 0.01), 7), 8), 7);
SQL
)

# Bytes and answers of the stored filters, one line each.
ANSWERS_SQL=$(cat <<'SQL'
SELECT id, md5(b::bytea), md5(c::bytea),
       (SELECT string_agg(CASE WHEN id = 2 THEN (b @> g::text)::int ELSE (b @> g)::int END::text, ''
                          ORDER BY g) FROM generate_series(1, 1200, 7) g),
       (SELECT string_agg(CASE WHEN id = 2 THEN cuckoo_count(c, g::text) ELSE cuckoo_count(c, g) END::text, ','
                          ORDER BY g) FROM generate_series(1, 1200, 7) g)
FROM stored ORDER BY id;
SQL
)

# 1. The release files agree; sets DEFAULT_VERSION.
DEFAULT_VERSION=
release_files() {
	local extversion default
	extversion=$(sed -n 's/^EXTVERSION *= *//p' "$AMQ_ROOT/Makefile")
	default=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$AMQ_ROOT/amqfilter.control")
	if [ -n "$extversion" ] && [ "$extversion" = "$default" ]; then
		pass "control default_version $default = Makefile EXTVERSION"
	else
		fail "control default_version '$default' differs from Makefile EXTVERSION '$extversion'"
	fi
	if [ -f "$AMQ_ROOT/amqfilter--$default.sql" ]; then
		pass "full script amqfilter--$default.sql exists"
	else
		fail "no full script amqfilter--$default.sql"
	fi
	DEFAULT_VERSION=$default
}

# Older versions: those with a full script other than the default.
older_versions() {
	local default=$1 f v
	for f in "$AMQ_ROOT"/amqfilter--*.sql; do
		v=${f##*/amqfilter--}
		v=${v%.sql}
		case $v in *--*) continue ;; esac
		[ "$v" = "$default" ] || echo "$v"
	done
}

main() {
	local default v db fresh
	release_files
	default=$DEFAULT_VERSION

	start_cluster
	fresh=amq_up_fresh
	run_psql -q -c "CREATE DATABASE $fresh"
	run_psql -q -d "$fresh" -c "CREATE EXTENSION amqfilter"
	run_psql -At -d "$fresh" -c "$DESCRIBE_SQL" >"$WORK/fresh.objects"
	run_psql -q -d "$fresh" -c "$STORE_SQL"
	run_psql -At -d "$fresh" -c "$ANSWERS_SQL" >"$WORK/fresh.answers"

	for v in $(older_versions "$default"); do
		db=amq_up_$(tr -c 'a-z0-9\n' _ <<<"$v")
		run_psql -q -c "CREATE DATABASE $db"
		run_psql -q -d "$db" -c "CREATE EXTENSION amqfilter VERSION '$v'"
		run_psql -q -d "$db" -c "$STORE_SQL"
		run_psql -At -d "$db" -c "$ANSWERS_SQL" >"$WORK/$v.before"
		run_psql -q -d "$db" -c "ALTER EXTENSION amqfilter UPDATE"
		if [ "$(run_psql -At -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'amqfilter'")" = "$default" ]; then
			pass "$v: ALTER EXTENSION UPDATE reaches $default"
		else
			fail "$v: ALTER EXTENSION UPDATE did not reach $default"
		fi
		run_psql -At -d "$db" -c "$DESCRIBE_SQL" >"$WORK/$v.objects"
		check_same "$v -> $default: objects and definitions equal a fresh install" \
			"$WORK/fresh.objects" "$WORK/$v.objects"
		run_psql -At -d "$db" -c "$ANSWERS_SQL" >"$WORK/$v.after"
		check_same "$v -> $default: stored filters keep their bytes and answers" \
			"$WORK/$v.before" "$WORK/$v.after"
		check_same "$v -> $default: filters built before equal those built fresh" \
			"$WORK/fresh.answers" "$WORK/$v.after"
	done

	# the check must not pass vacuously
	if [ -n "$(older_versions "$default")" ]; then
		pass "upgrades tested from: $(older_versions "$default" | tr '\n' ' ')"
	else
		fail "no older version to upgrade from"
	fi
	if [ "$(wc -l <"$WORK/fresh.objects")" -ge 40 ] && [ "$(wc -l <"$WORK/fresh.answers")" -eq 5 ]; then
		pass "fixtures: $(wc -l <"$WORK/fresh.objects") objects, 5 stored rows"
	else
		fail "fixtures: too few objects or rows to compare"
	fi

	checks_summary upgrade
}

main "$@"
