#!/usr/bin/env bash
# bench/sharded.sh: what a filter saves when a table is sharded with postgres_fdw,
# measured in one run on one machine.
#
#   sudo bash bench/sharded.sh
#
# Builds and installs the extension (unless AMQ_BENCH_SKIP_BUILD=1), starts three
# throwaway clusters on this machine (two shards, then the coordinator; one core per
# query, JIT off, statement_timeout 120 s everywhere: a query that would run longer
# is reported as a timeout, never waited for) and loads:
#
#   shards     events(k int8, payload text), UNLOGGED, $ROWS rows in all, half on
#              each shard, $KEYS distinct keys (shard 1 the lower half of the keys,
#              shard 2 the upper half, every key $ROWS / $KEYS times)
#   coordinator  the partitioned table events whose two partitions are the shards'
#              tables (postgres_fdw, extensions 'amqfilter', fetch_size 10000), and
#              wanted(k int8), $LOCAL keys spread evenly over all keys
#
# and measures, with the README's SQL (each time the median of RUNS, default 3,
# runs of EXPLAIN (ANALYZE, TIMING OFF)'s "Execution Time" after a warm-up run; rows
# fetched are what the foreign scans returned to the coordinator):
#
#   semi-join  events e WHERE e.k IN (SELECT k FROM wanted): plain, and pre-filtered
#              by e.k <@ (SELECT bloom_agg(k, $LOCAL, 0.01) FROM wanted), which
#              sends the filter to each shard; both again with the servers'
#              async_capable option on (the shards then scan at the same time)
#   build      a bloom filter of every key of events (n = $KEYS, p = 0.01): built on
#              each shard by bloom_agg and merged with bloom_union_agg, vs built on
#              the coordinator from all keys pulled over; and the same for cuckoo
#              (cuckoo_agg(DISTINCT k, ...): it counts rows, not keys)
#
# Appends (or replaces) the "Sharded tables" section at the end of bench/RESULTS.md.
#
# Environment:
#   RUNS=3                 runs per median
#   AMQ_SHARDED_ROWS=10000000, AMQ_SHARDED_KEYS=1000000, AMQ_SHARDED_LOCAL=10000
#                          sizes (smaller ones for trying the script out; the
#                          recorded results use the defaults)
#   AMQ_BENCH_SKIP_BUILD=1 use the installed extension
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

RUNS=${RUNS:-3}
ROWS=${AMQ_SHARDED_ROWS:-10000000}
KEYS=${AMQ_SHARDED_KEYS:-1000000}
LOCAL=${AMQ_SHARDED_LOCAL:-10000}
TIMEOUT_S=120
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md
SECTION='## Sharded tables (postgres_fdw)'

for v in RUNS ROWS KEYS LOCAL; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -ge 1 ] || die "$v must be a whole number >= 1"
done
[ $((KEYS % 2)) -eq 0 ] && [ $((ROWS % KEYS)) -eq 0 ] && [ "$LOCAL" -le "$KEYS" ] \
	|| die "KEYS must be even and divide ROWS, and LOCAL be at most KEYS"

SETTINGS=("max_parallel_workers_per_gather = 0" "jit = off" "shared_buffers = '512MB'"
	"statement_timeout = '${TIMEOUT_S}s'")
SHARDS=()
JOIN_ROWS=()
BUILD_ROWS=()

# on_shard I SQL: run SQL on shard I (1 or 2).
on_shard() {
	local host=${SHARDS[$1 - 1]% *} port=${SHARDS[$1 - 1]#* }
	PGHOST=$host PGPORT=$port run_psql -q -At -c "$2"
}

load_shard() {
	local i=$1 half=$((KEYS / 2)) per_shard=$((ROWS / 2))
	on_shard "$i" "
		CREATE EXTENSION amqfilter;
		CREATE UNLOGGED TABLE events (k int8 NOT NULL, payload text);
		INSERT INTO events
			SELECT $(((i - 1) * half)) + g % $half, 'event ' || g
			FROM generate_series(0, $((per_shard - 1))) g;"
	on_shard "$i" "VACUUM ANALYZE events"
}

# The coordinator's foreign servers, partitioned table and local keys.
load_coordinator() {
	local i host port
	run_psql -q -c "CREATE EXTENSION amqfilter; CREATE EXTENSION postgres_fdw;"
	for i in 1 2; do
		host=${SHARDS[i - 1]% *} port=${SHARDS[i - 1]#* }
		run_psql -q -c "
			CREATE SERVER shard$i FOREIGN DATA WRAPPER postgres_fdw
				OPTIONS (host '$host', port '$port', dbname 'postgres',
					extensions 'amqfilter', fetch_size '10000');
			CREATE USER MAPPING FOR CURRENT_USER SERVER shard$i OPTIONS (user '$PGUSER');"
	done
	run_psql -q -c "
		CREATE TABLE events (k int8 NOT NULL, payload text) PARTITION BY RANGE (k);
		CREATE FOREIGN TABLE events_1 PARTITION OF events
			FOR VALUES FROM (MINVALUE) TO ($((KEYS / 2))) SERVER shard1 OPTIONS (table_name 'events');
		CREATE FOREIGN TABLE events_2 PARTITION OF events
			FOR VALUES FROM ($((KEYS / 2))) TO (MAXVALUE) SERVER shard2 OPTIONS (table_name 'events');
		ANALYZE events;
		CREATE TABLE wanted AS
			SELECT (g * ($KEYS / $LOCAL))::int8 AS k FROM generate_series(0, $((LOCAL - 1))) g;
		ANALYZE wanted;"
}

set_async() {
	run_psql -q -c "ALTER SERVER shard1 OPTIONS (ADD async_capable '$1');
		ALTER SERVER shard2 OPTIONS (ADD async_capable '$1');" 2>/dev/null \
		|| run_psql -q -c "ALTER SERVER shard1 OPTIONS (SET async_capable '$1');
			ALTER SERVER shard2 OPTIONS (SET async_capable '$1');"
}

time_ms() {
	timed_ms "$RUNS" "$1"
}

# fetched_rows SQL: rows the foreign scans of SQL fetched, or "timeout".
fetched_rows() {
	local out
	if ! out=$(run_psql -At -c "EXPLAIN (ANALYZE, TIMING OFF) $1" 2>&1); then
		grep -q 'statement timeout' <<<"$out" || die "failed: $1: $out"
		echo timeout
		return
	fi
	foreign_scan_rows <<<"$out"
}

ratio() {
	if [ "$1" = timeout ] || [ "$2" = timeout ] || [ "$2" = 0 ]; then
		echo "n/a"
	else
		awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'
	fi
}

shown_ms() {
	if [ "$1" = timeout ]; then echo "> $((TIMEOUT_S * 1000)) (timeout)"; else echo "$1"; fi
}

PLAIN_JOIN="SELECT e.k, e.payload FROM events e WHERE e.k IN (SELECT k FROM wanted)"
FILTERED_JOIN="SELECT e.k, e.payload FROM events e
	WHERE e.k <@ (SELECT bloom_agg(k, $LOCAL, 0.01) FROM wanted)
	  AND e.k IN (SELECT k FROM wanted)"

bench_join() {
	local label=$1 plain_ms filtered_ms plain_rows filtered_rows result_rows
	plain_rows=$(fetched_rows "$PLAIN_JOIN")
	filtered_rows=$(fetched_rows "$FILTERED_JOIN")
	result_rows=$(run_psql -At -c "SELECT count(*) FROM ($PLAIN_JOIN) j")
	[ "$(run_psql -At -c "SELECT count(*) FROM ($FILTERED_JOIN) j")" = "$result_rows" ] \
		|| die "the filtered join returned another number of rows than the plain one"
	plain_ms=$(time_ms "$PLAIN_JOIN")
	filtered_ms=$(time_ms "$FILTERED_JOIN")
	printf '%-26s plain %s rows %s ms   filtered %s rows %s ms\n' "$label" \
		"$plain_rows" "$plain_ms" "$filtered_rows" "$filtered_ms" >&2
	JOIN_ROWS+=("| $label | $result_rows | $plain_rows | $filtered_rows | $(ratio "$plain_rows" "$filtered_rows") | $(shown_ms "$plain_ms") | $(shown_ms "$filtered_ms") | $(ratio "$plain_ms" "$filtered_ms") |")
}

# bench_build TYPE: the filter of every key, built on the shards and merged vs built
# on the coordinator from all keys.  The cuckoo filter takes each key once (it
# counts every row it is given: over repeated keys it would hold every copy).
bench_build() {
	local type=$1 arg=k remote pull remote_ms pull_ms remote_rows pull_rows same
	[ "$type" = bloom ] || arg="DISTINCT k"
	remote="SELECT ${type}_union_agg(f) FROM (
		SELECT ${type}_agg($arg, $KEYS, 0.01) AS f FROM events_1
		UNION ALL SELECT ${type}_agg($arg, $KEYS, 0.01) FROM events_2) s"
	pull="SELECT ${type}_agg($arg, $KEYS, 0.01) FROM events"
	if [ "$type" = bloom ]; then
		same=$(run_psql -At -c "SELECT ($remote)::bytea = ($pull)::bytea")
	else
		# the same count for every key and as many keys never added
		same=$(run_psql -At -c "WITH m AS ($remote), c AS ($pull)
			SELECT count(*) FILTER (WHERE cuckoo_count(m.f, g) <> cuckoo_count(c.f, g)) = 0
			FROM m AS m(f), c AS c(f), generate_series(0::int8, $((2 * KEYS - 1))) g")
	fi
	remote_rows=$(fetched_rows "$remote")
	pull_rows=$(fetched_rows "$pull")
	remote_ms=$(time_ms "$remote")
	pull_ms=$(time_ms "$pull")
	printf '%-26s remote %s rows %s ms   pull-all %s rows %s ms   same: %s\n' "$type build" \
		"$remote_rows" "$remote_ms" "$pull_rows" "$pull_ms" "$same" >&2
	BUILD_ROWS+=("| \`${type}_agg($arg, $KEYS, 0.01)\` | $remote_rows | $(shown_ms "$remote_ms") | $pull_rows | $(shown_ms "$pull_ms") | $(ratio "$pull_ms" "$remote_ms") | $same |")
}

write_results() {
	{
		echo "Generated by \`sudo bash bench/sharded.sh\` (bench/run.sh keeps this section)."
		echo
		echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "- Commit: $(git -C "$AMQ_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
		echo "- CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1) (nproc: $(nproc))"
		echo "- Measured while other work shared the machine's cores: the times are"
		echo "  noisier than those above, the rows fetched are exact."
		echo
		echo "A coordinator and two shards, three PostgreSQL 15 clusters on this one"
		echo "machine, talking over unix sockets. The shards hold $ROWS rows of"
		echo "events(k int8, payload text) in all, $KEYS distinct keys (each shard one half"
		echo "of the key range); the coordinator sees them as the two foreign partitions of"
		echo "one table (postgres_fdw, \`extensions 'amqfilter'\`, \`fetch_size '10000'\`)"
		echo "and holds wanted(k), $LOCAL keys ($(awk -v l="$LOCAL" -v k="$KEYS" 'BEGIN { printf "%g", 100 * l / k }')% of the keys) spread over both"
		echo "shards. One core per query, JIT off, statement_timeout $TIMEOUT_S s. Times are"
		echo "the median of $RUNS runs of EXPLAIN (ANALYZE, TIMING OFF)'s \"Execution Time\""
		echo "on the coordinator, in ms, after a warm-up run; rows fetched are the rows"
		echo "the foreign scans returned to the coordinator."
		echo
		echo "### Semi-join: plain vs pre-filtered"
		echo
		echo "Plain: \`$PLAIN_JOIN\`. Filtered: the same with"
		echo "\`AND e.k <@ (SELECT bloom_agg(k, $LOCAL, 0.01) FROM wanted)\`, which each shard"
		echo "evaluates (the filter travels as a query parameter). Targets: >= 10x fewer"
		echo "rows fetched, >= 5x faster."
		echo
		echo "| servers | result rows | rows fetched, plain | rows fetched, filtered | fewer rows | ms, plain | ms, filtered | faster |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|"
		printf '%s\n' "${JOIN_ROWS[@]}"
		echo
		echo "### One filter of all keys: built on the shards and merged vs pulled"
		echo
		echo "Remote: each shard runs the aggregate (pushed down) and the coordinator merges"
		echo "the two filters with \`bloom_union_agg\` / \`cuckoo_union_agg\`. Pull-all: the"
		echo "aggregate over the partitioned table, which PostgreSQL 15 runs on the"
		echo "coordinator over every key fetched. Same filter: bloom bytes equal; cuckoo"
		echo "counts equal for every key and as many keys never added. The cuckoo filter"
		echo "takes each key once (\`DISTINCT\`, which the shards evaluate too): it counts"
		echo "every row, and would hold all $((ROWS / KEYS)) copies of each key."
		echo "Default server options (the shards build one after the other)."
		echo
		echo "| aggregate | rows fetched, remote | ms, remote | rows fetched, pull-all | ms, pull-all | faster | same filter |"
		echo "|---|---:|---:|---:|---:|---:|---|"
		printf '%s\n' "${BUILD_ROWS[@]}"
	} | results_replace_section "$RESULTS_FILE" "$SECTION"
}

main() {
	local start=$SECONDS pids=() pid
	bench_build_and_install
	start_cluster "${SETTINGS[@]}"
	SHARDS+=("$PGHOST $PGPORT")
	start_cluster "${SETTINGS[@]}"
	SHARDS+=("$PGHOST $PGPORT")
	# the coordinator last: the libpq environment stays pointed at it
	start_cluster "${SETTINGS[@]}"

	log "load: $ROWS rows on two shards"
	load_shard 1 & pids+=($!)
	load_shard 2 & pids+=($!)
	for pid in "${pids[@]}"; do
		wait "$pid" || die "loading a shard failed"
	done
	load_coordinator

	bench_join "default"
	set_async true
	bench_join "async_capable 'true'"
	set_async false
	bench_build bloom
	bench_build cuckoo
	write_results
	stop_cluster

	echo
	results_section "$RESULTS_FILE" "$SECTION"
	echo "sharded bench: done in $((SECONDS - start))s; results written to ${RESULTS_FILE#"$AMQ_ROOT"/}"
}

main "$@"
