#!/usr/bin/env bash
# test/xmajor.sh: amqfilter across PostgreSQL majors.
#
#   sudo bash test/xmajor.sh 15 17 18 19
#
# Against the extension already installed for each major named (test/run.sh
# --all installs it: here for the host's major, in the Debian roots of
# test/pgroots.sh for the others), two things a cluster of several majors, or
# one moving to a newer major, relies on:
#
#   1. sharded: test/sharded.sh with its coordinator on 18 and its shards on 15
#      and 17 (when those three are named): filters built on a shard of one
#      major read on a coordinator of another, shipped filters giving the same
#      rows as the plain joins;
#   2. dump and restore onto a newer major: a database with filters of every
#      kind, a filter index on a table and one on a partitioned table, dumped
#      from each major named and restored on the next newer one (and from the
#      oldest straight onto the newest), in custom format by the newer major's
#      pg_dump, as PostgreSQL advises, and in plain format by the older one's:
#      every filter byte-identical and answering the same, the indexes rebuilt
#      on the newer major and used, finding every row (those inserted after the
#      restore too), and skipping the partitions that cannot hold a value.
#
# Every cluster listens on 127.0.0.1, so that a pg_dump in one root reaches a
# server in another.  Prints PASS or FAIL per check; exits non-zero when any
# check failed.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

trap stop_cluster EXIT

# What a dump must carry: filters of every kind, an indexed table and an
# indexed partitioned table.
FIXTURES_SQL=$(cat <<'SQL'
CREATE EXTENSION amqfilter;
CREATE TABLE filters (id int PRIMARY KEY, what text, b bloom, c cuckoo);
INSERT INTO filters
SELECT 1, 'blocked, int8', bloom_agg(g::int8, 20000, 0.01), cuckoo_agg(g::int8, 20000, 0.01)
  FROM generate_series(1, 20000, 2) g
UNION ALL
SELECT 2, 'classic and sizeless, text', bloom_agg('k' || g, 5000, 0.001, 'classic'),
       cuckoo_agg('k' || g, 0.01)
  FROM generate_series(1, 3000) g
UNION ALL
SELECT 3, 'counting and dleft, duplicates', bloom_agg(g % 500, 2000, 0.01, 'counting'),
       cuckoo_agg(g % 500, 2000, 0.01)
  FROM generate_series(1, 1500) g
UNION ALL
SELECT 4, 'dleft, sizeless', bloom_agg(g, 0.01, 'dleft'), NULL
  FROM generate_series(1, 700) g
UNION ALL
SELECT 5, 'empty', bloom_agg(g, 100, 0.01), cuckoo_agg(g, 100, 0.01)
  FROM generate_series(1, 0) g;
UPDATE filters SET c = cuckoo_delete(c, 7::int8) WHERE id = 1;
CREATE TABLE items (id int8, k int8, t text);
INSERT INTO items SELECT g, g * 7919 % 100000, 'row ' || g FROM generate_series(1, 50000) g;
CREATE INDEX items_k ON items USING amqfilter (k);
CREATE TABLE parts (id int8, k int8) PARTITION BY RANGE (id);
CREATE TABLE parts_0 PARTITION OF parts FOR VALUES FROM (0) TO (10000);
CREATE TABLE parts_1 PARTITION OF parts FOR VALUES FROM (10000) TO (20000);
CREATE TABLE parts_2 PARTITION OF parts FOR VALUES FROM (20000) TO (30000);
CREATE TABLE parts_3 PARTITION OF parts FOR VALUES FROM (30000) TO (40000);
INSERT INTO parts SELECT g, g * 3 FROM generate_series(0, 39999) g;
CREATE INDEX parts_k ON parts USING amqfilter (k);
ANALYZE;
SQL
)

# Every index, built or rebuilt by a restore, hashes with one seed: absent
# values' answers repeat from run to run.
INDEX_SEED=20260104

# The bytes of every filter, one line each.
BYTES_SQL="SELECT id, md5(b::bytea), md5(c::bytea) FROM filters ORDER BY id"

# What the filters answer: contains, and counts where the layout keeps them.
ANSWERS_SQL="SELECT md5(string_agg(concat_ws(',', id, v,
		bloom_contains(b, v::int8), cuckoo_contains(c, v::int8),
		CASE WHEN id = 3 THEN bloom_count(b, v::int8) END,
		CASE WHEN id IN (1, 3) THEN cuckoo_count(c, v::int8) END), ';' ORDER BY id, v))
	FROM filters, generate_series(0, 25000, 7) v WHERE id <> 2"
TEXT_ANSWERS_SQL="SELECT md5(string_agg(concat_ws(',', bloom_contains(b, 'k' || v),
		cuckoo_contains(c, 'k' || v)), ';' ORDER BY v))
	FROM filters, generate_series(0, 6000, 3) v WHERE id = 2"

# Lookups through the indexes, with no sequential scan to fall back on.
LOOKUPS_SQL="SET enable_seqscan = off;
	SELECT (SELECT count(*) || '/' || sum(id) FROM items WHERE k = ANY ('{0,7919,15838,99999,3,42}')),
	       (SELECT count(*) FROM items WHERE k = 123456789),
	       (SELECT count(*) || '/' || sum(id) FROM parts WHERE k IN (3, 30000, 60000, 119997)),
	       (SELECT count(*) FROM parts WHERE k = 1)"

# q CLUSTER DB SQL: SQL's rows in database DB of CLUSTER ("host port"), unaligned.
q() {
	local host=${1% *} port=${1#* }
	PGHOST=$host PGPORT=$port run_psql -q -At -d "$2" -c "$3"
}

expect() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: got '$2', expected '$3'"; fi
}

expect_match() {
	if grep -Eq -- "$3" <<<"$2"; then
		pass "$1"
	else
		fail "$1: no match for /$3/ in:"
		printf '%s\n' "$2" | head -n 20 | sed 's/^/      /'
	fi
}

# ---------------------------------------------------------------------------
# 1. a coordinator and shards of different majors
# ---------------------------------------------------------------------------

sharded() {
	if AMQ_SHARDED_MAJORS="18 15 17" bash "$AMQ_ROOT/test/sharded.sh"; then
		pass "sharded: a coordinator on 18 with shards on 15 and 17"
	else
		fail "sharded: a coordinator on 18 with shards on 15 and 17 (the checks above)"
	fi
}

# ---------------------------------------------------------------------------
# 2. dump on one major, restore on a newer one
# ---------------------------------------------------------------------------

declare -A CLUSTER=() DIR=()

# cluster MAJOR: start a cluster of MAJOR (once) with the fixtures in database src
cluster() {
	local major=$1
	[ -z "${CLUSTER[$major]:-}" ] || return 0
	start_cluster --pg "$major" --tcp
	CLUSTER[$major]="$PGHOST $PGPORT"
	DIR[$major]=$AMQ_CLUSTER_DIR
	q "${CLUSTER[$major]}" postgres "CREATE DATABASE src"
	q "${CLUSTER[$major]}" postgres "ALTER DATABASE src SET amqfilter.index_seed = $INDEX_SEED"
	q "${CLUSTER[$major]}" src "$FIXTURES_SQL" >/dev/null
}

# pg_tool MAJOR TOOL ARGS...: TOOL (pg_dump, pg_restore) of MAJOR as root, in its
# Debian root where it runs in one; paths in ARGS as that root sees them.
pg_tool() {
	local major=$1 tool=$2 croot=${AMQ_CLUSTER_CHROOT[${DIR[$1]}]:-}
	shift 2
	if [ -n "$croot" ]; then
		pgroot_exec "$croot" "/usr/lib/postgresql/$major/bin/$tool" "$@"
	elif [ "$major" = "$AMQ_PG_MAJOR" ]; then
		"$PG_BIN/$tool" "$@"
	else
		"/usr/lib/postgresql/$major/bin/$tool" "$@"
	fi
}

# restore_check OLD NEW HOW DB: the database DB of NEW, restored from OLD's src,
# holds what src holds and its indexes work there.
restore_check() {
	local old=$1 new=$2 how=$3 db=$4 from=${CLUSTER[$1]} to=${CLUSTER[$2]} what plan
	what="$old -> $new, $how"
	expect "$what: every filter byte-identical" \
		"$(q "$to" "$db" "$BYTES_SQL")" "$(q "$from" src "$BYTES_SQL")"
	expect "$what: the filters answer the same" \
		"$(q "$to" "$db" "$ANSWERS_SQL"; q "$to" "$db" "$TEXT_ANSWERS_SQL")" \
		"$(q "$from" src "$ANSWERS_SQL"; q "$from" src "$TEXT_ANSWERS_SQL")"
	expect "$what: the indexes find every row" \
		"$(q "$to" "$db" "$LOOKUPS_SQL")" "$(q "$from" src "$LOOKUPS_SQL")"
	plan=$(q "$to" "$db" "SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT * FROM items WHERE k = 42")
	expect_match "$what: the table's filter index is used" "$plan" 'Bitmap Index Scan on items_k'
	plan=$(q "$to" "$db" "LOAD 'amqfilter'; EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF)
		SELECT * FROM parts WHERE k = 1")
	expect_match "$what: partitions the index rules a value out of are skipped" \
		"$plan" 'Partitions Removed: 4'
	expect "$what: rows inserted after the restore are found through the index" \
		"$(q "$to" "$db" "INSERT INTO items VALUES (0, 123456789, 'new');
			INSERT INTO parts VALUES (39999, 1);
			SET enable_seqscan = off;
			SELECT (SELECT count(*) FROM items WHERE k = 123456789),
			       (SELECT count(*) FROM parts WHERE k = 1),
			       (SELECT bool_or(c = 'parts_3'::regclass)
			          FROM amqfilter_index_candidates('parts_k', 1::int8) c)")" \
		"1|1|t"
}

# dump_restore OLD NEW: OLD's src onto NEW, both ways
dump_restore() {
	local old=$1 new=$2 from to file croot
	cluster "$old"
	cluster "$new"
	from=${CLUSTER[$old]} to=${CLUSTER[$new]}
	croot=${AMQ_CLUSTER_CHROOT[${DIR[$new]}]:-}

	# Custom format, by the newer major's pg_dump and pg_restore, which writes
	# the script psql runs.  PostgreSQL 15.20 and 17.12 record an attribute
	# option, pg_attver, on every column; their own pg_dump leaves it out, but
	# 18's and 19's dump it, and 18 and 19 refuse it: a PostgreSQL matter, not
	# amqfilter's, so those statements are left out of the scripts.
	file=${DIR[$new]}/from$old.dump
	q "$to" postgres "CREATE DATABASE custom$old"
	q "$to" postgres "ALTER DATABASE custom$old SET amqfilter.index_seed = $INDEX_SEED"
	if pg_tool "$new" pg_dump -h "${from% *}" -p "${from#* }" -U postgres -Fc \
		-f "${file#"$croot"}" src &&
		pg_tool "$new" pg_restore -f "${file#"$croot"}.sql" "${file#"$croot"}" &&
		sed -i '/^ALTER TABLE ONLY .* ALTER COLUMN .* SET (pg_attver=[0-9]*);$/d' "$file.sql" &&
		PGHOST=${to% *} PGPORT=${to#* } run_psql -q -d "custom$old" -f "$file.sql" >/dev/null; then
		pass "$old -> $new: dumped by $new's pg_dump, restored from its pg_restore's script"
		restore_check "$old" "$new" "custom format" "custom$old"
	else
		fail "$old -> $new: dump by $new's pg_dump and pg_restore"
	fi

	# plain format, by the older major's pg_dump, restored by psql
	file=${DIR[$old]}/plain.sql
	croot=${AMQ_CLUSTER_CHROOT[${DIR[$old]}]:-}
	q "$to" postgres "CREATE DATABASE plain$old"
	q "$to" postgres "ALTER DATABASE plain$old SET amqfilter.index_seed = $INDEX_SEED"
	if pg_tool "$old" pg_dump -h "${from% *}" -p "${from#* }" -U postgres \
		-f "${file#"$croot"}" src &&
		sed -i '/^ALTER TABLE ONLY .* ALTER COLUMN .* SET (pg_attver=[0-9]*);$/d' "$file" &&
		PGHOST=${to% *} PGPORT=${to#* } run_psql -q -d "plain$old" -f "$file" >/dev/null; then
		pass "$old -> $new: dumped by $old's pg_dump, restored by psql"
		restore_check "$old" "$new" "plain format" "plain$old"
	else
		fail "$old -> $new: plain dump by $old's pg_dump, restored by psql"
	fi
}

main() {
	local -a majors
	local i
	[ $# -ge 2 ] || die "usage: bash test/xmajor.sh MAJOR MAJOR... (two or more)"
	mapfile -t majors < <(printf '%s\n' "$@" | sort -n -u)

	if [[ " ${majors[*]} " == *" 15 "* && " ${majors[*]} " == *" 17 "* &&
		" ${majors[*]} " == *" 18 "* ]]; then
		sharded
	else
		log "sharded across majors: needs 15, 17 and 18 (coordinator 18); not run"
	fi

	for ((i = 0; i + 1 < ${#majors[@]}; i++)); do
		dump_restore "${majors[i]}" "${majors[i + 1]}"
	done
	if [ ${#majors[@]} -gt 2 ]; then
		dump_restore "${majors[0]}" "${majors[${#majors[@]} - 1]}"
	fi

	stop_cluster
	checks_summary xmajor
}

main "$@"
