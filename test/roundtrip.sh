#!/usr/bin/env bash
# test/roundtrip.sh: the round trips a DBA relies on, end to end.
#
#   sudo bash test/roundtrip.sh
#
# Against the installed extension (it does not build; test/run.sh builds first):
#
#   1. pg_dump of a database with bloom and cuckoo columns (empty, sizeless empty,
#      small, TOASTed 200k-value, grown, after deletes, with duplicates, text
#      elements, int8 outside the int4 range, both bloom layouts, NULLs), restored
#      into a fresh database in plain format (psql -f) and in custom format
#      (pg_restore): every filter byte-identical (md5 of f::bytea per row) and
#      answering a fixed set of probes the same (digest of contains/count answers);
#   2. binary and text COPY TO a file and COPY FROM it into a fresh table:
#      byte-identical, same answers, and the re-exported file identical;
#   3. values patched so that the header claims a huge size over a short body, or a
#      small size over a big body, through text and binary COPY FROM: each COPY
#      fails with 22P02 (text) or 22P03 (binary), loads nothing, and the server
#      stays up without a crash restart (an unlogged canary table keeps its row).
#      The unpatched originals load through the same files, so the fixtures work;
#   4. the largest filter amqfilter builds (~800 MB) through pg_dump and restore:
#      byte-identical (about a minute);
#   5. the filter index of a partitioned table is dumped as its definition and
#      rebuilt on every partition by either restore: lookups through it find
#      every row (one written after the source's build, one after the restore),
#      and amqfilter_index_candidates names every partition holding a value;
#      the options ALTER INDEX set on it are on every index of the tree, the
#      restore has the extension's event trigger once (its CREATE EXTENSION's),
#      and ALTER INDEX on the restored partitioned index reaches every partition.
#
# It prints PASS or FAIL per check and exits non-zero when any check failed.
#
# By default it starts its own throwaway cluster (test/lib.sh's start_cluster) and
# removes it on exit.  With AMQ_USE_RUNNING_CLUSTER=1 it uses the cluster that the
# libpq variables PGHOST, PGPORT and PGUSER point at (e.g. one a caller started with
# start_cluster, which exports them); it then creates databases named
# amq_rt_<pid>_* there and drops them on exit.  The user must be a superuser.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

WORK=
DB_PREFIX=amq_rt_$$
SRC_DB=${DB_PREFIX}_src
PLAIN_DB=${DB_PREFIX}_plain
CUSTOM_DB=${DB_PREFIX}_custom
LARGE_DB=${DB_PREFIX}_largest
OWN_CLUSTER=yes


# psql with our options: no psqlrc, stop at the first error, quiet.
q() {
	run_psql -q "$@"
}

# q_at DB SQL: unaligned, tuples only, `|`-separated output of SQL in DB.
q_at() {
	q -At -F '|' -d "$1" -c "$2"
}

cleanup() {
	local status=$?
	if [ "$OWN_CLUSTER" = no ] && [ -n "${PGHOST:-}${PGPORT:-}" ]; then
		local db
		for db in "$SRC_DB" "$PLAIN_DB" "$CUSTOM_DB" "${LARGE_DB}_src" "${LARGE_DB}_dst"; do
			q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
		done
	fi
	[ -z "$WORK" ] || rm -rf "$WORK"
	stop_cluster
	exit "$status"
}

# ---------------------------------------------------------------------------
# The filters
# ---------------------------------------------------------------------------

# Every kind of value a dump must carry.  `elem` says which probes fit the filter.
# The tables are created by a superuser in public; nothing else lives in SRC_DB.
FIXTURES_SQL=$(cat <<'SQL'
CREATE EXTENSION amqfilter;

CREATE TABLE bf (id int PRIMARY KEY, kind text NOT NULL, elem text NOT NULL, f bloom);
CREATE TABLE cf (id int PRIMARY KEY, kind text NOT NULL, elem text NOT NULL, f cuckoo);

INSERT INTO bf VALUES
  (1, 'empty blocked', 'int8', bloom_empty(1000, 0.01)),
  (2, 'empty classic', 'int8', bloom_empty(1000, 0.01, 'classic')),
  (3, 'sizeless (zero-row aggregate)', 'int8',
      (SELECT bloom_agg(g::bigint, 1000, 0.01) FROM generate_series(1, 0) g)),
  (4, 'sizeless (zero-row union aggregate)', 'int8',
      (SELECT bloom_union_agg(f) FROM (SELECT bloom_empty(10, 0.1) WHERE false) s(f))),
  (5, 'small blocked', 'int8',
      (SELECT bloom_agg(g::bigint, 100, 0.01) FROM generate_series(1, 10) g)),
  (6, 'small classic', 'int8',
      (SELECT bloom_agg(g::bigint, 100, 0.01, 'classic') FROM generate_series(1, 10) g)),
  (7, 'large blocked, 200k values (TOAST)', 'int8',
      (SELECT bloom_agg(g::bigint, 200000, 0.01) FROM generate_series(1, 200000) g)),
  (8, 'large classic, 200k values (TOAST)', 'int8',
      (SELECT bloom_agg(g::bigint, 200000, 0.01, 'classic') FROM generate_series(1, 200000) g)),
  (9, 'text elements', 'text',
      (SELECT bloom_agg('k' || g, 1000, 0.01) FROM generate_series(1, 500) g)),
  (10, 'int8 outside the int4 range', 'int8',
      (SELECT bloom_agg(g * 10000000000, 1000, 0.001, 'classic') FROM generate_series(-300, 300) g)),
  (11, 'NULL', 'int8', NULL),
  (12, 'union of two filters', 'int8',
      (SELECT bloom_agg(g::bigint, 5000, 0.01) FROM generate_series(1, 3000) g)
      | (SELECT bloom_agg(g::bigint, 5000, 0.01) FROM generate_series(2000, 6000) g)),
  (13, 'intersection of two filters', 'int8',
      (SELECT bloom_agg(g::bigint, 5000, 0.01, 'classic') FROM generate_series(1, 3000) g)
      & (SELECT bloom_agg(g::bigint, 5000, 0.01, 'classic') FROM generate_series(2000, 6000) g)),
  (14, 'NULL', 'text', NULL),
  (15, 'counting, duplicates', 'int8',
      (SELECT bloom_agg(g % 700, 1000, 0.01, 'counting') FROM generate_series(1, 2000) g)),
  (16, 'dleft, duplicates', 'int8',
      (SELECT bloom_agg(g % 700, 1000, 0.01, 'dleft') FROM generate_series(1, 2000) g)),
  (17, 'dleft after deletes', 'int8',
      bloom_delete(bloom_delete((SELECT bloom_agg(g::bigint, 100, 0.01, 'dleft')
                                   FROM generate_series(1, 50) g), 3::bigint), 4::bigint)),
  (18, 'large counting, 100k values (TOAST)', 'int8',
      (SELECT bloom_agg(g::bigint, 100000, 0.01, 'counting') FROM generate_series(1, 100000) g));

INSERT INTO cf VALUES
  (1, 'empty', 'int8', cuckoo_empty(1000, 0.01)),
  (2, 'sizeless (zero-row aggregate)', 'int8',
      (SELECT cuckoo_agg(g::bigint, 1000, 0.01) FROM generate_series(1, 0) g)),
  (3, 'small', 'int8',
      (SELECT cuckoo_agg(g::bigint, 100, 0.01) FROM generate_series(1, 10) g)),
  (4, 'large, 200k values (TOAST)', 'int8',
      (SELECT cuckoo_agg(g::bigint, 200000, 0.01) FROM generate_series(1, 200000) g)),
  (5, 'grown: several tables', 'int8',
      (SELECT cuckoo_agg(g::bigint, 100, 0.01) FROM generate_series(1, 3000) g)),
  (6, 'duplicates: growth tables and counted copies', 'int8',
      (SELECT cuckoo_agg(g % 400, 100, 0.01) FROM generate_series(1, 4000) g)),
  (7, 'text elements, 32-bit fingerprints', 'text',
      (SELECT cuckoo_agg('k' || g, 1000, 2e-9) FROM generate_series(1, 500) g)),
  (8, 'int8 outside the int4 range', 'int8',
      (SELECT cuckoo_agg(g * 10000000000, 1000, 0.001) FROM generate_series(-300, 300) g)),
  (9, 'NULL', 'int8', NULL),
  (10, 'union of two filters', 'int8',
      (SELECT cuckoo_agg(g::bigint, 2000, 0.01) FROM generate_series(1, 1500) g)
      | (SELECT cuckoo_agg(g::bigint, 2000, 0.01) FROM generate_series(1000, 3000) g)),
  (11, 'victim slot taken', 'int8',
      (SELECT cuckoo_agg(7::bigint, 1, 0.5) FROM generate_series(1, 5) g));

-- after deletes: one table, and a grown filter (deletes re-home victims)
DO $$
DECLARE
	f1 cuckoo;
	f2 cuckoo;
BEGIN
	SELECT cuckoo_agg(g::bigint, 5000, 0.01) INTO f1 FROM generate_series(1, 5000) g;
	FOR i IN 1..5000 BY 3 LOOP
		f1 := cuckoo_delete(f1, i::bigint);
	END LOOP;
	SELECT cuckoo_agg(g::bigint, 100, 0.01) INTO f2 FROM generate_series(1, 3000) g;
	FOR i IN 2..3000 BY 2 LOOP
		f2 := cuckoo_delete(f2, i::bigint);
	END LOOP;
	INSERT INTO cf VALUES (12, 'after deletes', 'int8', f1),
	                      (13, 'grown, then deletes', 'int8', f2);
END
$$;
SQL
)

# Preconditions: the fixtures really are what their names say.
PRECONDITIONS_SQL=$(cat <<'SQL'
SELECT 'large bloom filters stored out of line',
       bool_and(pg_column_size(f) > 100000)
         AND (SELECT pg_relation_size(reltoastrelid) > 400000 FROM pg_class WHERE oid = 'bf'::regclass)
  FROM bf WHERE id IN (7, 8)
UNION ALL
SELECT 'large cuckoo filter stored out of line',
       bool_and(pg_column_size(f) > 100000)
         AND (SELECT pg_relation_size(reltoastrelid) > 200000 FROM pg_class WHERE oid = 'cf'::regclass)
  FROM cf WHERE id = 4
UNION ALL
SELECT 'sizeless bloom filters are layout empty',
       bool_and((bloom_info(f)).layout = 'empty') FROM bf WHERE id IN (3, 4)
UNION ALL
SELECT 'sizeless cuckoo filter has no tables', (cuckoo_info(f)).tables = 0 FROM cf WHERE id = 2
UNION ALL
SELECT 'all four bloom layouts present',
       count(DISTINCT (bloom_info(f)).layout) FILTER (WHERE (bloom_info(f)).layout <> 'empty') = 4 FROM bf
UNION ALL
SELECT 'large counting filter stored out of line', pg_column_size(f) > 100000 FROM bf WHERE id = 18
UNION ALL
SELECT 'grown cuckoo filters have 3+ tables',
       bool_and((cuckoo_info(f)).tables >= 3) FROM cf WHERE id IN (5, 6, 13)
UNION ALL
SELECT 'cuckoo filters after deletes lost items',
       bool_and((cuckoo_info(f)).items < CASE id WHEN 12 THEN 5000 ELSE 3000 END) FROM cf WHERE id IN (12, 13)
UNION ALL
SELECT 'NULL filters present',
       (SELECT count(*) FROM bf WHERE f IS NULL) = 2 AND (SELECT count(*) FROM cf WHERE f IS NULL) = 1;
SQL
)

# Probe values: int8 in and around the int4 range (every value up to 3100, so all
# members of the small filters, then a stride through the large ones, and values
# beyond the int4 range for the other hash path), and text keys for the text filters.
INT8_PROBES="(SELECT g::bigint AS v FROM generate_series(-100, 3100) g
              UNION ALL SELECT g FROM generate_series(3101, 201000, 97) g
              UNION ALL SELECT g * 10000000000 FROM generate_series(-310, 310, 7) g
              UNION ALL VALUES (-9223372036854775808), (9223372036854775807), (0), (7), (42))"
TEXT_PROBES="(SELECT 'k' || g AS v FROM generate_series(-50, 1500, 3) g
              UNION ALL VALUES (''), ('k'), ('K1'))"

# report_sql TABLE_SUFFIX: one line per row of bf<suffix> and cf<suffix>: id, kind,
# md5 and length of the bytes, the info row.
bytes_report_sql() {
	local s=$1
	cat <<SQL
SELECT 'bloom', id, kind, coalesce(md5(f::bytea), 'NULL'), octet_length(f::bytea),
       CASE WHEN f IS NULL THEN 'NULL' ELSE bloom_info(f)::text END
  FROM bf$s
UNION ALL
SELECT 'cuckoo', id, kind, coalesce(md5(f::bytea), 'NULL'), octet_length(f::bytea),
       CASE WHEN f IS NULL THEN 'NULL' ELSE cuckoo_info(f)::text END
  FROM cf$s
ORDER BY 1, 2;
SQL
}

# answers_report_sql TABLE_SUFFIX: one line per row: id, number of probes answered
# true, and an md5 of all the answers in probe order (contains, plus the count for
# cuckoo), then the bytes after one more add and delete (int8 filters with tables).
answers_report_sql() {
	local s=$1
	cat <<SQL
SELECT 'bloom', id,
       CASE WHEN f IS NULL THEN 'NULL'
            WHEN elem = 'int8' THEN
              (SELECT count(*) FILTER (WHERE f @> p.v) || ' ' || sum(bloom_count(f, p.v)) || ' ' ||
                      md5(string_agg(coalesce((f @> p.v)::text, 'null'), ',' ORDER BY p.v))
                 FROM $INT8_PROBES p)
            ELSE
              (SELECT count(*) FILTER (WHERE f @> p.v) || ' ' ||
                      md5(string_agg(coalesce((f @> p.v)::text, 'null'), ',' ORDER BY p.v))
                 FROM $TEXT_PROBES p)
       END,
       CASE WHEN elem = 'int8' AND (bloom_info(f)).layout <> 'empty'
            THEN md5(bloom_add(f, 123456789::bigint)::bytea) END
  FROM bf$s
UNION ALL
SELECT 'cuckoo', id,
       CASE WHEN f IS NULL THEN 'NULL'
            WHEN elem = 'int8' THEN
              (SELECT count(*) FILTER (WHERE f @> p.v) || ' ' || sum(cuckoo_count(f, p.v)) || ' ' ||
                      md5(string_agg(coalesce((f @> p.v)::text, 'null') || ':' || cuckoo_count(f, p.v),
                                     ',' ORDER BY p.v))
                 FROM $INT8_PROBES p)
            ELSE
              (SELECT count(*) FILTER (WHERE f @> p.v) || ' ' || sum(cuckoo_count(f, p.v)) || ' ' ||
                      md5(string_agg(coalesce((f @> p.v)::text, 'null') || ':' || cuckoo_count(f, p.v),
                                     ',' ORDER BY p.v))
                 FROM $TEXT_PROBES p)
       END,
       CASE WHEN elem = 'int8' AND (cuckoo_info(f)).tables > 0
            THEN md5(cuckoo_delete(cuckoo_add(f, 123456789::bigint), 7::bigint)::bytea) END
  FROM cf$s
ORDER BY 1, 2;
SQL
}

# compare NAME FILE_A FILE_B: PASS when both are non-empty and identical.
compare() {
	local name=$1 a=$2 b=$3
	if [ ! -s "$a" ]; then
		fail "$name (no rows from the source side)"
	elif cmp -s "$a" "$b"; then
		pass "$name ($(wc -l <"$a") rows)"
	else
		fail "$name"
		{ diff "$a" "$b" || true; } | head -n 20 | sed 's/^/      /' || true
	fi
}

# report DB SUFFIX TAG: write the bytes and answers reports of DB to $WORK/TAG.*
report() {
	local db=$1 s=$2 tag=$3
	q_at "$db" "$(bytes_report_sql "$s")" >"$WORK/$tag.bytes" || true
	q_at "$db" "$(answers_report_sql "$s")" >"$WORK/$tag.answers" || true
}

# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------

# The filter index of a two-level partitioned table, and a row written after
# its build.
PARTITION_FIXTURES_SQL="
SET client_min_messages = warning;
CREATE TABLE pt (id int8, k text) PARTITION BY RANGE (id);
CREATE TABLE pt_1 PARTITION OF pt FOR VALUES FROM (0) TO (1000);
CREATE TABLE pt_2 PARTITION OF pt FOR VALUES FROM (1000) TO (3000) PARTITION BY RANGE (id);
CREATE TABLE pt_2a PARTITION OF pt_2 FOR VALUES FROM (1000) TO (2000);
CREATE TABLE pt_2b PARTITION OF pt_2 FOR VALUES FROM (2000) TO (3000);
INSERT INTO pt SELECT g, 'k' || (g % 1500) FROM generate_series(0, 2999) g;
CREATE INDEX pt_k_filter ON pt USING amqfilter (k);
ALTER INDEX pt_k_filter SET (false_positive_rate = 0.002);
INSERT INTO pt VALUES (2500, 'written after the build');"

PARTITION_VALUES="('k1'), ('k700'), ('k1499'), ('nope'), ('written after the build'), ('after the restore')"

# per value: the rows a query that can only read the partitions through the
# index returns, the rows that are there, and whether every partition that
# holds the value is a candidate of the index
PARTITION_LOOKUP_SQL="
SET enable_seqscan = off;
SELECT v, (SELECT count(*) FROM pt WHERE k = v),
       (SELECT count(*) FROM pt WHERE k || '' = v),
       (SELECT coalesce(bool_and(c), true) FROM (
           SELECT tableoid::regclass IN (SELECT amqfilter_index_candidates('pt_k_filter', v)) c
             FROM pt WHERE k || '' = v) x)
  FROM (VALUES $PARTITION_VALUES) x(v) ORDER BY v;"

# the options of every index of the partitioned index's tree, in one line
PARTITION_OPTIONS_SQL="
SELECT string_agg(coalesce(array_to_string(c.reloptions, ','), '-'), ' ' ORDER BY c.relname)
  FROM pg_partition_tree('pt_k_filter') t JOIN pg_class c ON c.oid = t.relid"

# the event triggers of the database, and whether each is the extension's
EVENT_TRIGGERS_SQL="
SELECT count(*), bool_and(EXISTS (
           SELECT FROM pg_depend d
            WHERE d.classid = 'pg_event_trigger'::regclass AND d.objid = e.oid
              AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'))
  FROM pg_event_trigger e"

setup_partition_index() {
	local n
	q -d "$SRC_DB" -c "$PARTITION_FIXTURES_SQL" >/dev/null \
		|| { fail "fixture: partitioned table with a filter index"; return 1; }
	n=$(q_at "$SRC_DB" "SELECT count(*) FROM amqfilter_index_info('pt_k_filter')") || true
	if [ "$n" = 4 ]; then
		pass "fixture: partitioned table with a filter index (3 partitions' indexes and a total)"
	else
		fail "fixture: partitioned table with a filter index (3 partitions' indexes and a total; '$n' rows)"
	fi
}

# check_partition_index DB TAG: the filter index is dumped as its definition
# and rebuilt on every partition by the restore; lookups through it find every
# row (the row written after the source's build too), its candidates name every
# partition that holds a value, and a write after the restore is found.
check_partition_index() {
	local db=$1 tag=$2 index
	index=$(q_at "$db" "SET enable_seqscan = off;
		SELECT (SELECT count(*) FROM pg_indexes WHERE indexdef ~ 'USING amqfilter'),
		       (SELECT count(*) FROM pt WHERE k = 'k700'),
		       bloom_index_contains(
		           (SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'pt_1'::regclass),
		           'k700'::text)" | tail -n 1) || true
	if [ "$index" = "5|2|t" ]; then
		pass "$tag dump: the filter index is rebuilt on every partition and answers"
	else
		fail "$tag dump: the filter index is rebuilt on every partition and answers ('$index')"
	fi
	q_at "$db" "INSERT INTO pt VALUES (5, 'after the restore')" >/dev/null || true
	q_at "$db" "$PARTITION_LOOKUP_SQL" >"$WORK/$tag.lookups" || true
	if [ "$(wc -l <"$WORK/$tag.lookups")" -eq 6 ] \
		&& awk -F'|' '$2 != $3 || $4 != "t" { bad = 1 } END { exit bad }' "$WORK/$tag.lookups" \
		&& grep -q '^after the restore|1|1|t$' "$WORK/$tag.lookups" \
		&& grep -q '^written after the build|1|1|t$' "$WORK/$tag.lookups"; then
		pass "$tag dump: lookups through the index find every row, and its candidates every partition"
	else
		fail "$tag dump: lookups through the index find every row, and its candidates every partition"
		sed 's/^/      /' "$WORK/$tag.lookups"
	fi
	local options triggers set='false_positive_rate=0.002'
	options=$(q_at "$db" "$PARTITION_OPTIONS_SQL") || true
	if [ "$options" = "$set $set $set $set $set" ]; then
		pass "$tag dump: the options ALTER INDEX set are on every index of the tree"
	else
		fail "$tag dump: the options ALTER INDEX set are on every index of the tree ('$options')"
	fi
	triggers=$(q_at "$db" "$EVENT_TRIGGERS_SQL") || true
	if [ "$triggers" = "1|t" ]; then
		pass "$tag dump: one event trigger, the extension's"
	else
		fail "$tag dump: one event trigger, the extension's ('$triggers')"
	fi
	q_at "$db" "ALTER INDEX pt_k_filter RESET (false_positive_rate)" >/dev/null || true
	options=$(q_at "$db" "$PARTITION_OPTIONS_SQL") || true
	if [ "$options" = "- - - - -" ]; then
		pass "$tag dump: ALTER INDEX on the restored partitioned index reaches every index"
	else
		fail "$tag dump: ALTER INDEX on the restored partitioned index reaches every index ('$options')"
	fi
}

setup_source() {
	log "fixtures: building filters in $SRC_DB"
	if ! q -d postgres -c "CREATE DATABASE $SRC_DB TEMPLATE template0" \
		|| ! q -d "$SRC_DB" -c "$FIXTURES_SQL"; then
		fail "fixtures: source database and filters created"
		return 1
	fi
	local name ok
	while IFS='|' read -r name ok; do
		if [ "$ok" = t ]; then pass "fixture: $name"; else fail "fixture: $name ($ok)"; fi
	done < <(q_at "$SRC_DB" "$PRECONDITIONS_SQL")
	report "$SRC_DB" "" src
	# Sanity of the reports themselves: every non-NULL filter answered, and the
	# large filters found their members.
	if grep -q '^bloom|7|[1-9][0-9]* ' "$WORK/src.answers" \
		&& [ "$(grep -c '|NULL|' "$WORK/src.answers")" -eq 3 ] \
		&& [ "$(wc -l <"$WORK/src.answers")" -eq 31 ]; then
		pass "fixture: probe report covers all 31 rows"
	else
		fail "fixture: probe report is incomplete"
		sed 's/^/      /' "$WORK/src.answers"
	fi
}

check_dump_plain() {
	local file=$WORK/dump.sql
	log "pg_dump: plain format, restored with psql -f"
	if ! "$PG_BIN/pg_dump" --no-password -d "$SRC_DB" -f "$file"; then
		fail "pg_dump plain format"
		return
	fi
	q -d postgres -c "CREATE DATABASE $PLAIN_DB TEMPLATE template0" || { fail "create $PLAIN_DB"; return; }
	if ! q -d "$PLAIN_DB" -f "$file" >"$WORK/restore-plain.log" 2>&1; then
		fail "plain dump restores with psql -f"
		head -n 20 "$WORK/restore-plain.log" | sed 's/^/      /'
		return
	fi
	pass "plain dump restores with psql -f"
	report "$PLAIN_DB" "" plain
	compare "plain dump: filters byte-identical" "$WORK/src.bytes" "$WORK/plain.bytes"
	compare "plain dump: filters answer the same" "$WORK/src.answers" "$WORK/plain.answers"
	check_partition_index "$PLAIN_DB" plain
}

check_dump_custom() {
	local file=$WORK/dump.custom
	log "pg_dump: custom format, restored with pg_restore"
	if ! "$PG_BIN/pg_dump" --no-password -Fc -d "$SRC_DB" -f "$file"; then
		fail "pg_dump custom format"
		return
	fi
	q -d postgres -c "CREATE DATABASE $CUSTOM_DB TEMPLATE template0" || { fail "create $CUSTOM_DB"; return; }
	if ! "$PG_BIN/pg_restore" --no-password --exit-on-error -d "$CUSTOM_DB" "$file" \
		>"$WORK/restore-custom.log" 2>&1; then
		fail "custom dump restores with pg_restore"
		head -n 20 "$WORK/restore-custom.log" | sed 's/^/      /'
		return
	fi
	pass "custom dump restores with pg_restore"
	report "$CUSTOM_DB" "" custom
	compare "custom dump: filters byte-identical" "$WORK/src.bytes" "$WORK/custom.bytes"
	compare "custom dump: filters answer the same" "$WORK/src.answers" "$WORK/custom.answers"
	check_partition_index "$CUSTOM_DB" custom
}

# The largest filter amqfilter builds (just under its size limit, ~800 MB) must
# survive pg_dump, whose COPY writes its text form: base64 of the bytes, which
# for a 1 GB filter would pass PostgreSQL's 1 GB value limit.  One table, plain
# format, bytes compared.  About a minute, most of it TOAST reading and writing
# 800 MB.
check_largest() {
	local file=$WORK/largest.sql n=4460000000 before after
	log "pg_dump: the largest filter ($n values at p = 0.5, classic)"
	q -d postgres -c "CREATE DATABASE ${LARGE_DB}_src TEMPLATE template0" \
		&& q -d "${LARGE_DB}_src" -c "CREATE EXTENSION amqfilter;
			CREATE UNLOGGED TABLE largest AS SELECT bloom_add(bloom_empty($n, 0.5, 'classic'), 42::bigint) AS f" \
		|| { fail "largest filter built"; return; }
	# each use of f reads all of it from TOAST (about 8 s): one digest is all we take
	before=$(q_at "${LARGE_DB}_src" "SELECT md5(f::bytea) FROM largest")
	if ! "$PG_BIN/pg_dump" --no-password -d "${LARGE_DB}_src" -f "$file"; then
		fail "pg_dump of the largest filter"
		return
	fi
	q -d postgres -c "CREATE DATABASE ${LARGE_DB}_dst TEMPLATE template0" \
		&& q -d "${LARGE_DB}_dst" -f "$file" >/dev/null \
		|| { fail "restore of the largest filter"; return; }
	after=$(q_at "${LARGE_DB}_dst" "SELECT md5(f::bytea) FROM largest")
	rm -f "$file"
	q -d postgres -c "DROP DATABASE ${LARGE_DB}_src" -c "DROP DATABASE ${LARGE_DB}_dst"
	if [ -n "$before" ] && [ "$before" = "$after" ]; then
		pass "largest filter (804,302,544 bytes, md5 $before) survives pg_dump and restore"
	else
		fail "largest filter: '$before' before, '$after' after pg_dump and restore"
	fi
}

# check_copy FORMAT: COPY bf and cf out to files (client side, \copy), into fresh
# tables, and compare; then export the copies and compare the files.
check_copy() {
	local format=$1 t
	log "COPY: $format format"
	for t in bf cf; do
		q -d "$SRC_DB" \
			-c "\\copy $t TO '$WORK/$t.$format' WITH (FORMAT $format)" \
			-c "CREATE TABLE ${t}_$format (LIKE $t INCLUDING ALL)" \
			-c "\\copy ${t}_$format FROM '$WORK/$t.$format' WITH (FORMAT $format)" \
			-c "\\copy ${t}_$format TO '$WORK/$t.again.$format' WITH (FORMAT $format)" \
			|| fail "$format COPY of $t runs"
		if cmp -s "$WORK/$t.$format" "$WORK/$t.again.$format"; then
			pass "$format COPY of $t: exporting the copy gives the same file"
		else
			fail "$format COPY of $t: exporting the copy gives a different file"
		fi
	done
	# the reports read bf_<format> and cf_<format>
	report "$SRC_DB" "_$format" "copy-$format"
	compare "$format COPY: filters byte-identical" "$WORK/src.bytes" "$WORK/copy-$format.bytes"
	compare "$format COPY: filters answer the same" "$WORK/src.answers" "$WORK/copy-$format.answers"
}

# Patched values: name|type|source expression|patch.  A patch is applied by SQL
# to the bytes of a valid filter; le64/le32 write little-endian integers.
MALFORMED_SQL=$(cat <<'SQL'
CREATE FUNCTION le64(numeric) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT decode(string_agg(lpad(to_hex((div($1 % 18446744073709551616, power(256::numeric, i)) % 256)::int),
                                2, '0'), '' ORDER BY i), 'hex')
    FROM generate_series(0, 7) i
$$;
CREATE FUNCTION le32(numeric) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT substr(le64($1), 1, 4)
$$;
CREATE FUNCTION patch(b bytea, off int, v bytea) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT overlay(b PLACING v FROM off + 1 FOR length(v))
$$;
CREATE UNLOGGED TABLE crash_canary AS SELECT 1 AS alive;
CREATE TABLE bad (name text PRIMARY KEY, typ text NOT NULL, b bytea NOT NULL);

-- valid originals (controls: they must load through the same pipeline)
INSERT INTO bad
  SELECT 'valid small bloom', 'bloom', f::bytea FROM bf WHERE id = 5
  UNION ALL SELECT 'valid large bloom', 'bloom', f::bytea FROM bf WHERE id = 7
  UNION ALL SELECT 'valid small cuckoo', 'cuckoo', f::bytea FROM cf WHERE id = 3
  UNION ALL SELECT 'valid large cuckoo', 'cuckoo', f::bytea FROM cf WHERE id = 4
  UNION ALL SELECT 'valid grown cuckoo', 'cuckoo', f::bytea FROM cf WHERE id = 5;

-- bloom: nbits (u64 at offset 24)
INSERT INTO bad
  -- huge claimed size, short body
  SELECT 'bloom: largest valid nbits over a 64-byte body', 'bloom',
         patch(b, 24, le64(16777213 * 512::numeric)) FROM bad WHERE name = 'valid small bloom'
  UNION ALL SELECT 'bloom: nbits 2^62 over a 64-byte body', 'bloom',
         patch(b, 24, le64(2::numeric ^ 62)) FROM bad WHERE name = 'valid small bloom'
  UNION ALL SELECT 'bloom: nbits 2^64-512 over a 64-byte body', 'bloom',
         patch(b, 24, le64(2::numeric ^ 64 - 512)) FROM bad WHERE name = 'valid small bloom'
  -- body bytes = nbits/8 modulo 2^32: a 32-bit length check would accept it
  UNION ALL SELECT 'bloom: nbits 2^35 + real nbits (length mod 2^32 matches)', 'bloom',
         patch(b, 24, le64(2::numeric ^ 35 + (octet_length(b) - 56) * 8)) FROM bad WHERE name = 'valid small bloom'
  -- big body, small claimed size
  UNION ALL SELECT 'bloom: nbits 512 over a 240 kB body', 'bloom',
         patch(b, 24, le64(512)) FROM bad WHERE name = 'valid large bloom'
  UNION ALL SELECT 'bloom: nbits one block short of the body', 'bloom',
         patch(b, 24, le64((octet_length(b) - 56) * 8 - 512)) FROM bad WHERE name = 'valid large bloom'
  UNION ALL SELECT 'bloom: nbits one block past the body', 'bloom',
         patch(b, 24, le64((octet_length(b) - 56) * 8 + 512)) FROM bad WHERE name = 'valid large bloom'
  UNION ALL SELECT 'bloom: valid header, body truncated by one byte', 'bloom',
         substr(b, 1, octet_length(b) - 1) FROM bad WHERE name = 'valid large bloom'
  UNION ALL SELECT 'bloom: valid header, one byte appended', 'bloom',
         b || '\x00'::bytea FROM bad WHERE name = 'valid large bloom';

-- cuckoo: first table's buckets (u64 at offset 64), tables (u32 at offset 40)
INSERT INTO bad
  SELECT 'cuckoo: buckets MAX_BUCKETS over a small body', 'cuckoo',
         patch(b, 64, le64(536870847)) FROM bad WHERE name = 'valid small cuckoo'
  UNION ALL SELECT 'cuckoo: buckets 2^40 over a small body', 'cuckoo',
         patch(b, 64, le64(2::numeric ^ 40)) FROM bad WHERE name = 'valid small cuckoo'
  UNION ALL SELECT 'cuckoo: buckets 2^64-1 over a small body', 'cuckoo',
         patch(b, 64, le64(2::numeric ^ 64 - 1)) FROM bad WHERE name = 'valid small cuckoo'
  UNION ALL SELECT 'cuckoo: tables 2^32-1 over a one-table body', 'cuckoo',
         patch(b, 40, le32(2::numeric ^ 32 - 1)) FROM bad WHERE name = 'valid small cuckoo'
  UNION ALL SELECT 'cuckoo: buckets 1 over a 260 kB body', 'cuckoo',
         patch(b, 64, le64(1)) FROM bad WHERE name = 'valid large cuckoo'
  UNION ALL SELECT 'cuckoo: buckets one less than the body holds', 'cuckoo',
         patch(b, 64, le64(get_byte(b, 64) + 256 * get_byte(b, 65) + 65536 * get_byte(b, 66) - 1))
    FROM bad WHERE name = 'valid large cuckoo'
  UNION ALL SELECT 'cuckoo: tables 1 over a grown body', 'cuckoo',
         patch(b, 40, le32(1)) FROM bad WHERE name = 'valid grown cuckoo'
  UNION ALL SELECT 'cuckoo: tables + 1 over a grown body', 'cuckoo',
         patch(b, 40, le32(get_byte(b, 40) + 1)) FROM bad WHERE name = 'valid grown cuckoo'
  UNION ALL SELECT 'cuckoo: valid header, body truncated by 8 bytes', 'cuckoo',
         substr(b, 1, octet_length(b) - 8) FROM bad WHERE name = 'valid large cuckoo'
  UNION ALL SELECT 'cuckoo: valid header, 8 bytes appended', 'cuckoo',
         b || '\x0000000000000000'::bytea FROM bad WHERE name = 'valid large cuckoo';

CREATE TABLE load_bloom (f bloom);
CREATE TABLE load_cuckoo (f cuckoo);
SQL
)

# try_load NAME TYPE FORMAT: COPY FROM the prepared file for NAME into load_TYPE.
# Prints "ok" on success, else the SQLSTATE and message of the error ("unknown" when
# there is no error line).
try_load() {
	local name=$1 typ=$2 format=$3 file=$4 out line status=0
	out=$(run_psql -q -d "$SRC_DB" -v VERBOSITY=verbose \
		-c "TRUNCATE load_$typ" \
		-c "\\copy load_$typ FROM '$file' WITH (FORMAT $format)" 2>&1) || status=$?
	if [ "$status" -eq 0 ]; then
		echo ok
	else
		line=$(sed -n 's/^.*ERROR:  \([0-9A-Z]\{5\}: .*\)$/\1/p;T;q' <<<"$out")
		echo "${line:-unknown}"
	fi
}

# server_alive: the server answers a new connection, and did not crash-restart
# (crash recovery empties unlogged tables).
server_alive() {
	[ "$(q_at "$SRC_DB" "SELECT count(*) FROM crash_canary" 2>/dev/null)" = 1 ]
}

check_malformed() {
	log "malformed values through COPY FROM"
	if ! q -d "$SRC_DB" -c "$MALFORMED_SQL"; then
		fail "malformed values prepared"
		return
	fi
	local n=0 name typ format file expect got message rows
	while IFS='|' read -r n name typ; do
		for format in text binary; do
			file=$WORK/bad.$n.$format
			if [ "$format" = text ]; then
				# one line: the canonical base64 text form
				q_at "$SRC_DB" "SELECT translate(encode(b, 'base64'), E'\\n', '') FROM bad WHERE name = '$name'" \
					>"$file"
			else
				# a bytea's binary COPY field is its bytes, the same as the filter's
				q -d "$SRC_DB" -c "\\copy (SELECT b FROM bad WHERE name = '$name') TO '$file' WITH (FORMAT binary)"
			fi
			if [[ $name == valid* ]]; then expect=ok
			elif [ "$format" = text ]; then expect=22P02
			else expect=22P03
			fi
			message=$(try_load "$name" "$typ" "$format" "$file")
			got=${message%%:*}
			rows=$(q_at "$SRC_DB" "SELECT count(*) FROM load_$typ" 2>/dev/null || echo '?')
			if [ "$expect" = ok ]; then
				local same
				same=$(q_at "$SRC_DB" "SELECT bool_and(l.f::bytea = b.b) FROM load_$typ l, bad b
				                        WHERE b.name = '$name'" 2>/dev/null || echo '?')
				if [ "$got" = ok ] && [ "$rows" = 1 ] && [ "$same" = t ]; then
					pass "$format COPY FROM, $name: loads, byte-identical"
				else
					fail "$format COPY FROM, $name: got $got, $rows rows, identical=$same"
				fi
			elif [ "$got" = "$expect" ] && [ "$rows" = 0 ]; then
				pass "$format COPY FROM, $name: rejected with $message"
			else
				fail "$format COPY FROM, $name: expected $expect, got $message ($rows rows loaded)"
			fi
			if ! server_alive; then
				fail "server alive after $format COPY FROM, $name"
				return
			fi
		done
	done < <(q_at "$SRC_DB" "SELECT row_number() OVER (ORDER BY name LIKE 'valid%' DESC, name), name, typ
	                         FROM bad ORDER BY 1")
	if server_alive; then
		pass "server up after all malformed COPYs, no crash restart"
	fi
}

main() {
	local start=$SECONDS
	if [ "${AMQ_USE_RUNNING_CLUSTER:-}" = 1 ]; then
		if [ -z "${PGHOST:-}" ] || [ -z "${PGPORT:-}" ]; then
			die "AMQ_USE_RUNNING_CLUSTER=1 needs PGHOST and PGPORT"
		fi
		OWN_CLUSTER=no
		trap cleanup EXIT
		log "cluster: using the running one on $PGHOST port $PGPORT"
	else
		# start_cluster installs its own EXIT trap; ours replaces it and calls it.
		# A crash must not be hidden by an automatic restart.
		start_cluster "restart_after_crash = off"
		trap cleanup EXIT
	fi
	WORK=$(mktemp -d /tmp/amqfilter-roundtrip.XXXXXX)

	if setup_source && setup_partition_index; then
		check_dump_plain
		check_dump_custom
		check_copy binary
		check_copy text
		check_malformed
	fi
	check_largest

	log "roundtrip: $((SECONDS - start))s"
	checks_summary roundtrip
}

main "$@"
