#!/usr/bin/env bash
# bench/remote_join.sh: a plain join of a local table of keys with a table
# sharded through postgres_fdw, the runtime join filter sent to the shards
# (amqfilter.join_filter = on) against the filter off, in one run.
#
#   sudo bash bench/remote_join.sh
#
# Builds and installs the extension (unless AMQ_BENCH_SKIP_BUILD=1) and starts
# three throwaway clusters (JIT off, one core per query, statement_timeout
# 300 s: a query that would run longer is a timeout, never waited for): a
# coordinator with the library preloaded, and two shards each holding half
# of events(k bigint, payload text), $ROWS rows in all, every key 0 .. KEYS-1
# $COPIES times, keys below KEYS/2 on shard 1, the others on shard 2.  The
# coordinator's events is range-partitioned over the two foreign tables
# (servers with extensions 'amqfilter'); each local table wanted_N holds N
# distinct keys spread over both shards.  For each N, with the servers
# async_capable and not, it measures
#
#   SELECT count(*), sum(length(e.payload)) FROM events e JOIN wanted_N w ON w.k = e.k
#
# alternating the filter on and off for $ROUNDS rounds (median execution
# time, EXPLAIN (ANALYZE, TIMING OFF)), and the rows the foreign scans
# fetched, against the rows that match.  wanted_most holds 90% of the keys:
# most remote rows match, where the filter cannot pay.
#
# Replaces (or appends) the "Runtime join filters: sharded joins" section of
# bench/RESULTS.md.
#
# Environment:
#   AMQ_ROWS=10000000, AMQ_COPIES=5   sizes (KEYS = ROWS / COPIES)
#   AMQ_WANTED="1000 10000 100000"    the local tables' sizes
#   AMQ_ROUNDS=3                      rounds, alternated
#   AMQ_BENCH_SKIP_BUILD=1            use the installed extension
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

ROWS=${AMQ_ROWS:-10000000}
COPIES=${AMQ_COPIES:-5}
WANTED=${AMQ_WANTED:-"1000 10000 100000"}
ROUNDS=${AMQ_ROUNDS:-3}
TIMEOUT_S=300
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md
SECTION='## Runtime join filters: sharded joins'

for v in ROWS COPIES ROUNDS; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -ge 1 ] || die "$v must be a whole number >= 1"
done
KEYS=$((ROWS / COPIES))
HALF=$((KEYS / 2))

on() { local host=${1% *} port=${1#* }; PGHOST=$host PGPORT=$port run_psql -q -At -c "$2"; }

bench_build_and_install
SETTINGS=("jit = off" "max_parallel_workers_per_gather = 0" "statement_timeout = '${TIMEOUT_S}s'"
	"shared_buffers = '1GB'" "max_wal_size = '8GB'" "checkpoint_timeout = '1h'")
start_cluster "${SETTINGS[@]}"
SHARD1="$PGHOST $PGPORT"
start_cluster "${SETTINGS[@]}"
SHARD2="$PGHOST $PGPORT"
start_cluster "${SETTINGS[@]}" "session_preload_libraries = 'amqfilter'"
COORD="$PGHOST $PGPORT"

start=$SECONDS
log "remote_join: loading $ROWS rows over two shards ($KEYS keys, $COPIES copies each)"
for s in 1 2; do
	if [ "$s" = 1 ]; then cluster=$SHARD1 lo=0 hi=$HALF; else cluster=$SHARD2 lo=$HALF hi=$KEYS; fi
	on "$cluster" "CREATE EXTENSION amqfilter;
		CREATE UNLOGGED TABLE events (k bigint NOT NULL, payload text);
		INSERT INTO events
		SELECT $lo + g % ($hi - $lo), 'payload of row ' || g
		  FROM generate_series(0, ($hi - $lo) * $COPIES - 1) g;
		ANALYZE events;"
done
run_psql -q -c "CREATE EXTENSION amqfilter; CREATE EXTENSION postgres_fdw;"
for s in 1 2; do
	if [ "$s" = 1 ]; then cluster=$SHARD1; else cluster=$SHARD2; fi
	run_psql -q -c "CREATE SERVER shard$s FOREIGN DATA WRAPPER postgres_fdw
			OPTIONS (host '${cluster% *}', port '${cluster#* }', dbname 'postgres',
			         extensions 'amqfilter', fetch_size '10000');
		CREATE USER MAPPING FOR CURRENT_USER SERVER shard$s OPTIONS (user '$PGUSER');"
done
run_psql -q -c "CREATE TABLE events (k bigint NOT NULL, payload text) PARTITION BY RANGE (k);
	CREATE FOREIGN TABLE events_1 PARTITION OF events FOR VALUES FROM (MINVALUE) TO ($HALF)
		SERVER shard1 OPTIONS (table_name 'events');
	CREATE FOREIGN TABLE events_2 PARTITION OF events FOR VALUES FROM ($HALF) TO (MAXVALUE)
		SERVER shard2 OPTIONS (table_name 'events');
	ANALYZE events;"
for n in $WANTED; do
	# n distinct keys, spread over both shards (a permutation of 0 .. KEYS-1)
	run_psql -q -c "CREATE TABLE wanted_$n AS
		SELECT DISTINCT ((g::bigint * 2654435761) % $KEYS) AS k FROM generate_series(1, $n) g;
		ANALYZE wanted_$n;"
done
run_psql -q -c "CREATE TABLE wanted_most AS
	SELECT k FROM generate_series(0, $KEYS - 1) k WHERE k % 10 <> 0;
	ANALYZE wanted_most;"
log "remote_join: loaded in $((SECONDS - start))s"

ROWS_OUT=()
measure() {
	local table=$1 async=$2 sql on_sql off_sql on_rows off_rows matching times on_ms off_ms
	sql="SELECT count(*), sum(length(e.payload)) FROM events e JOIN $table w ON w.k = e.k"
	on_sql="SET amqfilter.join_filter = on; $sql"
	off_sql="SET amqfilter.join_filter = off; $sql"
	matching=$(run_psql -At -c "$sql" | cut -d'|' -f1)
	[ "$matching" = "$(run_psql -At -c "SET amqfilter.join_filter = on" -c "$sql" | tail -n 1 | cut -d'|' -f1)" ] \
		|| die "$table: the join counted differently with the filter on"
	[ "$(run_psql -At -c "SET amqfilter.join_filter = on" -c "$sql" | tail -n 1)" = "$(run_psql -At -c "$sql")" ] \
		|| die "$table: the join's sum differs with the filter on"
	on_rows=$(run_psql -At -c "SET amqfilter.join_filter = on" \
		-c "EXPLAIN (ANALYZE, TIMING OFF) $sql" | foreign_scan_rows)
	off_rows=$(run_psql -At -c "EXPLAIN (ANALYZE, TIMING OFF) $sql" | foreign_scan_rows)
	times=$(interleaved_ms "$ROUNDS" "$on_sql" "$off_sql")
	on_ms=$(sed -n 1p <<<"$times")
	off_ms=$(sed -n 2p <<<"$times")
	printf '%-12s async=%-5s matching %9s  fetched on %9s off %9s   %9s ms on %9s ms off  %sx\n' \
		"$table" "$async" "$matching" "$on_rows" "$off_rows" "$on_ms" "$off_ms" "$(ratio "$off_ms" "$on_ms" 2)"
	ROWS_OUT+=("| $(run_psql -At -c "SELECT count(*) FROM $table") | $async | $matching | $on_rows | $off_rows | $on_ms | $off_ms | $(ratio "$off_ms" "$on_ms" 2)x |")
}

for async in false true; do
	run_psql -q -c "ALTER SERVER shard1 OPTIONS (ADD async_capable '$async');
		ALTER SERVER shard2 OPTIONS (ADD async_capable '$async');"
	for n in $WANTED; do
		measure "wanted_$n" "$async"
	done
	measure wanted_most "$async"
	run_psql -q -c "ALTER SERVER shard1 OPTIONS (DROP async_capable);
		ALTER SERVER shard2 OPTIONS (DROP async_capable);"
done

{
	results_provenance bench/remote_join.sh
	echo
	echo "Three clusters on this machine: a coordinator and two shards, $ROWS rows"
	echo "of events(k bigint, payload text) in all ($KEYS keys, $COPIES rows each,"
	echo "half the keys on each shard), the coordinator's events partitioned over"
	echo "the two foreign tables. The query: \`SELECT count(*), sum(length(e.payload))"
	echo "FROM events e JOIN wanted w ON w.k = e.k\`, wanted holding the local keys"
	echo "(the last row: 90% of all keys). Execution time, median of $ROUNDS"
	echo "alternated rounds; rows fetched: what the foreign scans returned"
	echo "(EXPLAIN ANALYZE). The answers were checked equal on and off."
	echo
	echo "| local keys | async_capable | matching rows | fetched, filter on | fetched, off | ms on | ms off | off / on |"
	echo "|---:|---|---:|---:|---:|---:|---:|---:|"
	printf '%s\n' "${ROWS_OUT[@]}"
} | results_replace_section "$RESULTS_FILE" "$SECTION"
log "remote_join: done in $((SECONDS - start))s; results in ${RESULTS_FILE#"$AMQ_ROOT"/}"
stop_cluster
