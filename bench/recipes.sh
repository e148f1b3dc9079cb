#!/usr/bin/env bash
# bench/recipes.sh: what each recipe of the README costs next to the plain query
# it stands in for, measured in one run on one machine.
#
#   sudo bash bench/recipes.sh
#
# Builds and installs the extension (unless AMQ_BENCH_SKIP_BUILD=1), starts a
# throwaway PostgreSQL 15 cluster (one core per query, JIT off, work_mem at its
# default of 4 MB, statement_timeout 60 s: a query that would run longer is
# reported as a timeout, never waited for) and measures, with the README's SQL:
#
#   guard       one probe of a stored filter of every key (p = 0.1%) vs the
#               primary-key lookup it protects
#   partitions  one lookup of a key that is not the partition key, in a copy
#               of orders with an amqfilter index on the key instead of a btree:
#               amqfilter_index_candidates() alone, and the plain query there
#               (only the partitions whose index may hold the key are read), vs
#               the plain query over all partitions' btree indexes
#   trigger     one-row INSERT into a table whose key filter is kept by the
#               README's statement trigger vs the same INSERT without it: time and
#               WAL bytes
#
# The join recipes are measured by bench/joins.sh.  t has $AMQ_RECIPE_ROWS int8 rows
# (default 10M); the guard filter covers t; the partitioned table has $AMQ_RECIPE_PARTS partitions of
# $AMQ_RECIPE_PART_ROWS rows (default 20 x 500k).  A lookup's time is what the client
# waits in a session that ran it before: the median of LOOKUP_RUNS (default 51)
# runs of psql's \timing after one warm-up run.  An INSERT's time is the median of
# RUNS (default 3) runs of EXPLAIN (ANALYZE, TIMING OFF)'s "Execution Time".
# Writes bench/RECIPES.md; the README quotes it.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

RUNS=${RUNS:-3}
LOOKUP_RUNS=${LOOKUP_RUNS:-51}
ROWS=${AMQ_RECIPE_ROWS:-10000000}
PARTS=${AMQ_RECIPE_PARTS:-20}
PART_ROWS=${AMQ_RECIPE_PART_ROWS:-500000}
TIMEOUT_S=60
RESULTS_FILE=$AMQ_ROOT/bench/RECIPES.md
ROWS_OUT=()

for v in ROWS PARTS PART_ROWS LOOKUP_RUNS; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -ge 2 ] || die "$v must be a whole number >= 2"
done

# time_ms SQL: what a client waits for SQL in a session that has run it before,
# as an application on a pooled connection does: the median of LOOKUP_RUNS times
# of psql's \timing (parse, plan, execute and the round trip), to 0.001 ms,
# after one warm-up run in the same session; "timeout" when a run passed the
# statement_timeout.  EXPLAIN's "Execution Time" of a fresh session would leave
# out the plain query's planning but count the plans a function makes inside,
# and the catalog reads every new session pays.
time_ms() {
	local sql=$1 out i
	if ! out=$({
		printf '%s\n' '\timing on'
		for ((i = 0; i <= LOOKUP_RUNS; i++)); do echo "$sql;"; done
	} | run_psql -q -o /dev/null 2>&1); then
		grep -q 'statement timeout' <<<"$out" || die "failed: $sql: $out"
		echo timeout
		return
	fi
	sed -n 's/^Time: \([0-9.]*\) ms.*$/\1/p' <<<"$out" | tail -n "$LOOKUP_RUNS" | median 3
}

# row NAME RECIPE_SQL PLAIN_SQL: time both and record a row of the results.
row() {
	local name=$1 recipe=$2 plain=$3 r p ratio
	r=$(time_ms "$recipe")
	p=$(time_ms "$plain")
	if [ "$r" = timeout ] || [ "$p" = timeout ]; then
		ratio="n/a"
		[ "$r" = timeout ] && r="> $((TIMEOUT_S * 1000)) (timeout)"
		[ "$p" = timeout ] && p="> $((TIMEOUT_S * 1000)) (timeout)"
	else
		ratio=$(awk -v a="$r" -v b="$p" 'BEGIN { printf "%.2f", a / b }')
	fi
	printf '%-34s recipe %14s ms   plain %14s ms   ratio %s\n' "$name" "$r" "$p" "$ratio"
	ROWS_OUT+=("| $name | \`$recipe\` | $r | \`$plain\` | $p | $ratio |")
}

load() {
	log "recipes: loading t ($ROWS rows), users, orders ($PARTS x $PART_ROWS)"
	run_psql -q >/dev/null <<-SQL
		CREATE EXTENSION amqfilter;
		CREATE TABLE t AS SELECT g::int8 AS id FROM generate_series(1, $ROWS) g;
		CREATE TABLE users (id int8 PRIMARY KEY, name text);
		INSERT INTO users SELECT id, 'u' || id FROM t;
		CREATE TABLE key_guard (name text PRIMARY KEY, f bloom NOT NULL);
		INSERT INTO key_guard SELECT 'users', bloom_agg(id, $ROWS, 0.001) FROM users;

		CREATE TABLE orders (order_id int8 NOT NULL, month int NOT NULL) PARTITION BY LIST (month);
		SELECT format('CREATE TABLE orders_%s PARTITION OF orders FOR VALUES IN (%s)', m, m)
		  FROM generate_series(1, $PARTS) m \gexec
		-- order ids are scattered over the months, as ids are in time-partitioned tables
		INSERT INTO orders
		SELECT g, 1 + (hashint8(g) & 2147483647) % $PARTS FROM generate_series(1, $PARTS * $PART_ROWS) g;
		CREATE INDEX ON orders (order_id);
		-- the same rows under the filter index (p = 0.1%) instead of the btree
		CREATE TABLE orders_f (LIKE orders) PARTITION BY LIST (month);
		SELECT format('CREATE TABLE orders_f_%s PARTITION OF orders_f FOR VALUES IN (%s)', m, m)
		  FROM generate_series(1, $PARTS) m \gexec
		INSERT INTO orders_f SELECT * FROM orders;
		CREATE INDEX orders_f_filter ON orders_f USING amqfilter (order_id)
		  WITH (false_positive_rate = 0.001);
		VACUUM ANALYZE;
	SQL
}

bench_lookups() {
	local key=$((ROWS / 2 + 7)) okey=$((PARTS * PART_ROWS / 2 + 3))
	log "recipes: one-key lookups"
	row "guard: one probe" \
		"SELECT f @> $key::bigint FROM key_guard WHERE name = 'users'" \
		"SELECT 1 FROM users WHERE id = $key"
	row "guard: one probe, absent key" \
		"SELECT f @> $((ROWS * 3))::bigint FROM key_guard WHERE name = 'users'" \
		"SELECT 1 FROM users WHERE id = $((ROWS * 3))"
	row "partitions: which may hold the key" \
		"SELECT * FROM amqfilter_index_candidates('orders_f_filter', $okey::bigint)" \
		"SELECT * FROM orders WHERE order_id = $okey"
	row "partitions: the rows, filter index" \
		"SELECT * FROM orders_f WHERE order_id = $okey" \
		"SELECT * FROM orders WHERE order_id = $okey"
}

# One-row INSERT with and without the README's statement trigger that unions the
# new keys into the guard filter: time and WAL.
bench_trigger() {
	local with without wal_with wal_without lsn
	log "recipes: trigger-maintained filter"
	run_psql -q >/dev/null <<-SQL
		CREATE TABLE users_plain (id int8 PRIMARY KEY, name text);
		CREATE FUNCTION key_guard_add() RETURNS trigger LANGUAGE plpgsql AS \$\$
		BEGIN
		  UPDATE key_guard
		     SET f = f | (SELECT bloom_agg(id, $ROWS, 0.001) FROM new_rows)
		   WHERE name = 'users';
		  RETURN NULL;
		END \$\$;
		CREATE TRIGGER users_key_guard AFTER INSERT ON users
		  REFERENCING NEW TABLE AS new_rows
		  FOR EACH STATEMENT EXECUTE FUNCTION key_guard_add();
	SQL
	with=$(for ((i = 1; i <= RUNS; i++)); do
		exec_ms "INSERT INTO users VALUES ($ROWS + $i, 'new')"
	done | median 3)
	without=$(for ((i = 1; i <= RUNS; i++)); do
		exec_ms "INSERT INTO users_plain VALUES ($ROWS + $i, 'new')"
	done | median 3)
	lsn=$(run_psql -At -c "SELECT pg_current_wal_insert_lsn()")
	run_psql -q -c "INSERT INTO users VALUES ($ROWS + 100, 'new')"
	wal_with=$(run_psql -At -c "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$lsn')")
	lsn=$(run_psql -At -c "SELECT pg_current_wal_insert_lsn()")
	run_psql -q -c "INSERT INTO users_plain VALUES ($ROWS + 100, 'new')"
	wal_without=$(run_psql -At -c "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$lsn')")
	printf '%-34s recipe %14s ms   plain %14s ms   WAL %s vs %s bytes\n' \
		"trigger: one-row INSERT" "$with" "$without" "$wal_with" "$wal_without"
	ROWS_OUT+=("| trigger: one-row INSERT (WAL: $wal_with bytes vs $wal_without) | \`INSERT INTO users VALUES (...)\` with the trigger | $with | the same INSERT without it | $without | $(awk -v a="$with" -v b="$without" 'BEGIN { printf "%.0f", a / b }') |")
}

write_results() {
	{
		echo "# What the README's recipes cost"
		echo
		echo "Generated by \`sudo bash bench/recipes.sh\`; do not edit by hand."
		echo
		echo "- CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1) (nproc: $(nproc))"
		echo "- PostgreSQL: $(run_psql -At -c 'SELECT version()' 2>/dev/null || echo 15)"
		echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
		if git -C "$AMQ_ROOT" rev-parse --short HEAD >/dev/null 2>&1; then
			echo "- Commit: $(git -C "$AMQ_ROOT" rev-parse --short HEAD)"
		fi
		echo
		echo "One core per query (max_parallel_workers_per_gather = 0), JIT off, work_mem"
		echo "4 MB (the default), statement_timeout $TIMEOUT_S s. t has $ROWS int8 rows,"
		echo "users the same ids with a primary key and"
		echo "the guard filter of them (p = 0.1%), orders $PARTS list partitions of about"
		echo "$PART_ROWS rows with a btree on order_id, orders_f the same rows with an"
		echo "amqfilter index on order_id (p = 0.1%). A lookup's time is what the client"
		echo "waits, in ms: the median"
		echo "of $LOOKUP_RUNS runs of psql's \\timing (parse, plan, execute, round trip) in"
		echo "one session, after a warm-up run in it, the same key every time (all in"
		echo "cache), as an application on a pooled connection sees it. An INSERT's time"
		echo "is the median of $RUNS runs of EXPLAIN (ANALYZE, TIMING OFF)'s \"Execution"
		echo "Time\". The ratio is recipe / plain (below 1: the recipe pays)."
		echo
		echo "| recipe | query | ms | plain query | ms | ratio |"
		echo "|---|---|---:|---|---:|---:|"
		printf '%s\n' "${ROWS_OUT[@]}"
	} >"$RESULTS_FILE"
}

main() {
	local start=$SECONDS
	bench_build_and_install
	start_cluster "max_parallel_workers_per_gather = 0" "jit = off" \
		"shared_buffers = '2GB'" "work_mem = '4MB'" "statement_timeout = '${TIMEOUT_S}s'"
	load
	bench_lookups
	bench_trigger
	write_results
	stop_cluster
	echo
	cat "$RESULTS_FILE"
	echo "recipes: done in $((SECONDS - start))s; results written to ${RESULTS_FILE#"$AMQ_ROOT"/}"
}

main "$@"
