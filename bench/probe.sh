#!/usr/bin/env bash
# bench/probe.sh: what a probe of a stored filter costs, read through TOAST
# slices, next to the query it stands in for and next to reading the filter
# whole (amqfilter.probe_read = 'whole', what every probe did before 0.2).
#
#   sudo bash bench/probe.sh
#
# Builds and installs the extension (unless AMQ_BENCH_SKIP_BUILD=1), starts a
# throwaway PostgreSQL 15 cluster (one core per query, JIT off, every statement
# under a 120 s statement_timeout: a query that would run longer is reported as
# a timeout, never waited for) and measures, each against a baseline in the
# same session, interleaved run by run so that load on a shared machine hits
# both alike:
#
#   guard       one probe of a stored filter of $GUARD_KEYS keys at p = 0.1%
#               (the README's cache guard) vs a primary-key lookup of the same
#               key in the table of those keys.  Target: <= 3x.
#   partitions  which of $PARTS filters of $PART_KEYS keys (p = 0.1%) may hold a
#               key (the README's per-partition filter table) vs looking the key
#               up in the $PARTS partitions' btree indexes.  Target: <= 3x.
#   scan        a scan of $SCAN_ROWS rows probing one stored filter (12 MB)
#               (p = 1%) with probe_read 'auto' vs 'whole' (the behaviour before
#               slices).  Target: <= 1.1x.
#   latency     the guard and the partition lookup with random keys as pgbench
#               sees them (prepared statements, one client): the time an
#               application waits, against the same baselines.  Target: <= 3x.
#   calibration what one slice costs in chunks of a whole read, the constant
#               behind the 'auto' rule (AMQ_CHUNK_COST_SLICES in
#               src/glue/filter_access.c)
#
# Times are medians of RUNS runs (default 9; 3 for the scans) of EXPLAIN
# (ANALYZE, TIMING OFF)'s "Execution Time", in one session after a warm-up run
# of each query, as an application with a connection pool sees them (a new
# connection would also pay for loading the library and warming the catalog
# caches).  Prints the results and writes them to bench/RESULTS.md, replacing
# the section this script wrote before (bench/run.sh and bench/sharded.sh keep it).
#
# Environment: RUNS, AMQ_PROBE_GUARD_KEYS (20000000), AMQ_PROBE_PARTS (50),
# AMQ_PROBE_PART_KEYS (1000000), AMQ_PROBE_SCAN_ROWS (10000000): smaller counts
# for trying the script out; the recorded results use the defaults.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

RUNS=${RUNS:-9}
SCAN_RUNS=${SCAN_RUNS:-3}
GUARD_KEYS=${AMQ_PROBE_GUARD_KEYS:-20000000}
PARTS=${AMQ_PROBE_PARTS:-50}
PART_KEYS=${AMQ_PROBE_PART_KEYS:-1000000}
SCAN_ROWS=${AMQ_PROBE_SCAN_ROWS:-10000000}
TIMEOUT_S=120
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md
SECTION="## Stored filters: probes through slices"
ROWS_OUT=()
CALIBRATION=

for v in RUNS SCAN_RUNS GUARD_KEYS PARTS PART_KEYS SCAN_ROWS; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -ge 1 ] || die "$v must be a whole number >= 1"
done

# medians RUNS MODE:SQL...: the median execution time in ms (to 0.001 ms) of each
# SQL, one a line, in the order given, or "timeout".  All run in one session:
# each once to warm up, then RUNS rounds of every one in turn.  MODE is the
# amqfilter.probe_read each SQL runs with.
medians() {
	local runs=$1 n i item out
	shift
	n=$#
	out=$(
		for ((i = 0; i <= runs; i++)); do
			for item in "$@"; do
				printf "SET amqfilter.probe_read = '%s';\n" "${item%%:*}"
				printf 'EXPLAIN (ANALYZE, TIMING OFF) %s;\n' "${item#*:}"
			done
		done | run_psql -At 2>&1
	) || {
		grep -q 'statement timeout' <<<"$out" || die "failed: $*: $out"
		for ((i = 0; i < n; i++)); do echo timeout; done
		return
	}
	sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' <<<"$out" |
		awk -v n="$n" '
			NR > n { i = (NR - 1) % n; t[i, ++c[i]] = $1 }
			END {
				for (i = 0; i < n; i++) {
					m = c[i]
					for (a = 1; a <= m; a++) v[a] = t[i, a]
					for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++)
						if (v[b] < v[a]) { x = v[a]; v[a] = v[b]; v[b] = x }
					printf "%.3f\n", (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
				}
			}'
}

# ratio A B: A / B to two decimals, or n/a
ratio() {
	if [ "$1" = timeout ] || [ "$2" = timeout ]; then
		echo "n/a"
	else
		awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'
	fi
}

# record NAME SQL MS BASE_SQL BASE_MS TARGET [WHOLE_MS]: print and keep a result row
record() {
	local name=$1 sql=$2 ms=$3 base_sql=$4 base_ms=$5 target=$6 whole=${7:-}
	local r ok=reference
	r=$(ratio "$ms" "$base_ms")
	if [ -n "$target" ] && [ "$r" != n/a ]; then
		ok=$(awk -v r="$r" -v t="$target" 'BEGIN { print (r <= t) ? "yes" : "no" }')
	fi
	printf '%-36s %12s ms  baseline %12s ms  ratio %6s  (target <= %s: %s)%s\n' \
		"$name" "$ms" "$base_ms" "$r" "${target:--}" "$ok" \
		"${whole:+  whole read $whole ms}"
	ROWS_OUT+=("| $name | \`$sql\` | $ms | \`$base_sql\` | $base_ms | $r | ${target:+<= $target} | $ok | ${whole:-} |")
}

load() {
	log "probe: loading $GUARD_KEYS guard keys, $PARTS x $PART_KEYS partition keys, $SCAN_ROWS scan rows"
	run_psql -q >/dev/null <<-SQL
		CREATE EXTENSION amqfilter;
		-- the cache guard: users and a filter of every id
		-- (in statements of at most 5M rows, each well within the timeout)
		CREATE TABLE users (id int8);
		SELECT format('INSERT INTO users SELECT generate_series(%s, %s)',
		              c + 1, least(c + 5000000, $GUARD_KEYS))
		  FROM generate_series(0, $GUARD_KEYS - 1, 5000000) c \gexec
		ALTER TABLE users ADD PRIMARY KEY (id);
		CREATE TABLE key_guard (name text PRIMARY KEY, f bloom NOT NULL);
		INSERT INTO key_guard SELECT 'users', bloom_agg(id, $GUARD_KEYS, 0.001) FROM users;
		-- partitions: order ids spread over list partitions (partition m holds
		-- the ids congruent to m), an index on order_id in each, and one filter
		-- per partition
		CREATE TABLE orders (order_id int8, part int) PARTITION BY LIST (part);
		SELECT format('CREATE TABLE orders_%s PARTITION OF orders FOR VALUES IN (%s)', m, m)
		  FROM generate_series(1, $PARTS) m \gexec
		SELECT format('INSERT INTO orders_%s SELECT %s + %s * g, %s FROM generate_series(0, %s) g',
		              m, m, $PARTS, m, $PART_KEYS - 1)
		  FROM generate_series(1, $PARTS) m \gexec
		CREATE INDEX ON orders (order_id);
		CREATE TABLE partition_filters (part regclass PRIMARY KEY, f bloom NOT NULL);
		SELECT format('INSERT INTO partition_filters SELECT %L::regclass, bloom_agg(order_id, %s, 0.001) FROM orders_%s',
		              'orders_' || m, $PART_KEYS, m)
		  FROM generate_series(1, $PARTS) m \gexec
		-- the scan: rows and one 12 MB filter of them
		CREATE TABLE t (col int8);
		SELECT format('INSERT INTO t SELECT generate_series(%s, %s)',
		              c + 1, least(c + 5000000, $SCAN_ROWS))
		  FROM generate_series(0, $SCAN_ROWS - 1, 5000000) c \gexec
		CREATE TABLE scan_filters (id int PRIMARY KEY, f bloom NOT NULL);
		INSERT INTO scan_filters SELECT 1, bloom_agg(col, $SCAN_ROWS, 0.01) FROM t;
		VACUUM ANALYZE;
	SQL
	run_psql -At -c "SELECT 'guard filter ' || pg_column_size(f) || ' bytes' FROM key_guard
		UNION ALL SELECT 'partition filters ' || sum(pg_column_size(f)) || ' bytes' FROM partition_filters
		UNION ALL SELECT 'scan filter ' || pg_column_size(f) || ' bytes' FROM scan_filters" >&2
}

bench_guard() {
	local key=$((GUARD_KEYS / 2 + 7)) absent=$((GUARD_KEYS * 3)) k probe lookup
	local -a m
	log "probe: cache guard"
	for k in "$key present" "$absent absent"; do
		probe="SELECT f @> ${k% *}::bigint FROM key_guard WHERE name = 'users'"
		lookup="SELECT 1 FROM users WHERE id = ${k% *}"
		mapfile -t m < <(medians "$RUNS" "auto:$probe" "auto:$lookup" "whole:$probe")
		record "guard: one probe, ${k#* } key" "$probe" "${m[0]}" "$lookup" "${m[1]}" 3 "${m[2]}"
	done
}

bench_partitions() {
	local key=$((PARTS * PART_KEYS / 2 + 3)) which lookup
	local -a m
	log "probe: per-partition filters"
	which="SELECT part FROM partition_filters WHERE f @> $key::bigint"
	lookup="SELECT * FROM orders WHERE order_id = $key"
	mapfile -t m < <(medians "$RUNS" "auto:$which" "auto:$lookup" "whole:$which")
	record "partitions: which may hold the key" "$which" "${m[0]}" "$lookup" "${m[1]}" 3 "${m[2]}"
}

bench_scan() {
	local scan="SELECT count(*) FROM t WHERE (SELECT f FROM scan_filters WHERE id = 1) @> col"
	local -a m
	log "probe: scan of $SCAN_ROWS rows"
	mapfile -t m < <(medians "$SCAN_RUNS" "auto:$scan" "whole:$scan")
	record "scan: $SCAN_ROWS rows, auto" "$scan" "${m[0]}" "the same, probe_read = 'whole'" "${m[1]}" 1.1
}

# What one slice costs in chunks of a whole read: 100,000 probes of the 12 MB
# filter through slices only, against the same reading it whole once, give the
# cost of a slice (blocked: one slice a probe, the header read once); one probe
# read whole against one through slices gives the cost of a whole read, hence of
# a chunk.  The rows probed are a table of their own, so no scan dilutes the
# difference.
bench_calibration() {
	local rows=100000 chunks mb per_slice per_chunk
	local scan="SELECT count(*) FROM calib WHERE (SELECT f FROM scan_filters WHERE id = 1) @> col"
	local one="SELECT f @> 7::bigint FROM scan_filters WHERE id = 1"
	local -a m
	log "probe: calibration"
	run_psql -q -c "CREATE TABLE calib AS SELECT generate_series(1, $rows)::int8 AS col" \
		-c "VACUUM ANALYZE calib"
	mapfile -t m < <(medians "$RUNS" "slices:$scan" "whole:$scan" "whole:$one" "slices:$one")
	# TOAST_MAX_CHUNK_SIZE is 1996 bytes with the default 8 kB blocks
	chunks=$(run_psql -At -c "SELECT ceil(pg_column_size(f) / 1996.0) FROM scan_filters")
	mb=$(run_psql -At -c "SELECT round(pg_column_size(f) / 1048576.0, 1) FROM scan_filters")
	per_slice=$(awk -v a="${m[0]}" -v b="${m[1]}" -v n="$rows" 'BEGIN { printf "%.2f", (a - b) * 1000 / n }')
	per_chunk=$(awk -v a="${m[2]}" -v b="${m[3]}" -v n="$chunks" 'BEGIN { printf "%.3f", (a - b) * 1000 / n }')
	CALIBRATION="Calibration of the 'auto' rule: $rows probes of the $mb MB filter through
slices took ${m[0]} ms, reading it whole once ${m[1]} ms: $per_slice µs a slice. One
probe reading its $chunks chunks whole took ${m[2]} ms, through slices ${m[3]} ms:
$per_chunk µs a chunk. A chunk read whole cost as much as
$(awk -v a="$per_slice" -v b="$per_chunk" 'BEGIN { printf "%.1f", (a > 0) ? b / a : 0 }') slices (the 'auto' rule assumes $(sed -n 's/^#define AMQ_CHUNK_COST_SLICES[[:space:]]*//p' "$AMQ_ROOT/src/glue/filter_access.c"): AMQ_CHUNK_COST_SLICES in src/glue/filter_access.c)."
	echo "$CALIBRATION"
}

# latencies RUNS SCRIPT...: the median latency in ms that pgbench reports over
# RUNS rounds of 5 s for each script (prepared statements, one client), one a
# line, the scripts taking turns round by round.  Unlike "Execution Time" this
# is what the application waits for: parsing, the protocol and the result
# included.
latencies() {
	local runs=$1 i s dir
	shift
	dir=$(mktemp -d)
	for ((i = 1; i <= $#; i++)); do
		printf '%s;\n' "${!i}" >"$dir/$i.sql"
	done
	for ((i = 0; i < runs; i++)); do
		for ((s = 1; s <= $#; s++)); do
			"$PG_BIN/pgbench" -n -M prepared -T 5 -f "$dir/$s.sql" 2>&1 |
				sed -n "s/^latency average = \([0-9.]*\) ms\$/$s \1/p"
		done
	done | awk -v n=$# '
		{ t[$1, ++c[$1]] = $2 }
		END {
			for (i = 1; i <= n; i++) {
				m = c[i]
				for (a = 1; a <= m; a++) v[a] = t[i, a]
				for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++)
					if (v[b] < v[a]) { x = v[a]; v[a] = v[b]; v[b] = x }
				printf "%.3f\n", (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
			}
		}'
	rm -rf "$dir"
}

# The guard and the partition lookup as the application sees them, random keys.
bench_latency() {
	local probe lookup which plookup
	local -a m
	log "probe: end-to-end latency (pgbench)"
	probe="\\set k random(1, $GUARD_KEYS)
SELECT f @> :k::bigint FROM key_guard WHERE name = 'users'"
	lookup="\\set k random(1, $GUARD_KEYS)
SELECT 1 FROM users WHERE id = :k"
	which="\\set k random(1, $((PARTS * PART_KEYS)))
SELECT part FROM partition_filters WHERE f @> :k::bigint"
	plookup="\\set k random(1, $((PARTS * PART_KEYS)))
SELECT * FROM orders WHERE order_id = :k"
	mapfile -t m < <(latencies 3 "$probe" "$lookup" "$which" "$plookup")
	record "guard: latency, random keys" "${probe#*$'\n'}" "${m[0]}" "${lookup#*$'\n'}" "${m[1]}" 3
	record "partitions: latency, random keys" "${which#*$'\n'}" "${m[2]}" "${plookup#*$'\n'}" "${m[3]}" 3
}

write_results() {
	{
		echo "Generated by \`sudo bash bench/probe.sh\`; do not edit by hand."
		echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$AMQ_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown),"
		echo "$(run_psql -At -c 'SELECT version()' | cut -d, -f1), $(nproc) cores, load average"
		echo "$(cut -d' ' -f1-3 /proc/loadavg) at the end (a load above the core count means other"
		echo "work ran alongside and single times vary; the ratios are of queries interleaved run by run)."
		echo
		echo "One core per query, JIT off. The guard filter covers $GUARD_KEYS keys at"
		echo "p = 0.1%; the partition table has $PARTS filters of $PART_KEYS keys at p = 0.1%, next"
		echo "to $PARTS list partitions with an index on order_id; the scan probes one filter of"
		echo "$SCAN_ROWS keys at p = 1%. Times are medians of $RUNS runs ($SCAN_RUNS for the scan) of"
		echo "EXPLAIN (ANALYZE, TIMING OFF)'s \"Execution Time\" in ms, in one session after a"
		echo "warm-up run. \"Whole read\" is the same probe with amqfilter.probe_read = 'whole',"
		echo "what every probe did before 0.2. The latency rows are pgbench's average latency"
		echo "(prepared statements, one client, random keys; median of 3 rounds of 5 s),"
		echo "what an application waits for a query, parsing and protocol included."
		echo
		echo "| measurement | query | ms | baseline | ms | ratio | target | within target | whole read ms |"
		echo "|---|---|---:|---|---:|---:|---|---|---:|"
		printf '%s\n' "${ROWS_OUT[@]}"
		echo
		echo "$CALIBRATION"
	} | results_replace_section "$RESULTS_FILE" "$SECTION"
}

main() {
	local start=$SECONDS
	bench_build_and_install
	start_cluster "max_parallel_workers_per_gather = 0" "jit = off" \
		"shared_buffers = '2GB'" "statement_timeout = '${TIMEOUT_S}s'" \
		"max_wal_size = '8GB'"
	load
	bench_guard
	bench_partitions
	bench_latency
	bench_scan
	bench_calibration
	write_results
	stop_cluster
	echo "probe: done in $((SECONDS - start))s; results written to ${RESULTS_FILE#"$AMQ_ROOT"/}"
}

main "$@"
