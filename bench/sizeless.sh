#!/usr/bin/env bash
# bench/sizeless.sh: the aggregates that size their filter from the values,
# bloom_agg(value, p) and cuckoo_agg(value, p), against the same aggregates
# given the exact distinct count, bloom_agg(value, n, p), side by side in one
# run.
#
#   sudo bash bench/sizeless.sh
#
# Builds and installs the extension (unless AMQ_BENCH_SKIP_BUILD=1), starts a
# throwaway cluster (one core: max_parallel_workers_per_gather = 0, JIT off,
# work_mem 4 MB, every statement under a 300 s
# statement_timeout) and loads t(id int8, t text): $ROWS rows, id distinct,
# t with $ROWS / 10 distinct values each ten times.  Then, for blocked,
# counting and cuckoo filters over id, and blocked over t:
#
#   build   the median execution time of the sizeless form against the sized
#           one (interleaved rounds, so both see the same machine);
#   bytes   the sizeless filter's bytes against the sized one's;
#   rate    the share of $PROBES absent values the sizeless filter answers
#           "maybe" for, against p;
#   memory  the temporary file bytes the sizeless build wrote
#           (pg_stat_database.temp_bytes): the hashes past work_mem.
#
# Replaces (or appends) the "Sizeless aggregates" section of bench/RESULTS.md.
#
# Environment:
#   AMQ_BENCH_ROWS=10000000  rows (a smaller count for trying the script out;
#                            the recorded results use the default)
#   RUNS=5                   rounds per median
#   AMQ_BENCH_SKIP_BUILD=1   use the installed extension
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

ROWS=${AMQ_BENCH_ROWS:-10000000}
RUNS=${RUNS:-5}
PROBES=1000000
P=0.01
TIMEOUT_S=300
BUILD_TARGET=1.5
BYTES_TARGET=1.05
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md
SECTION='## Sizeless aggregates'

for v in ROWS RUNS; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -ge 1 ] || die "$v must be a whole number >= 1"
done
DISTINCT_T=$((ROWS / 10 > 0 ? ROWS / 10 : 1))

start=$SECONDS
bench_build_and_install
start_cluster "jit = off" "statement_timeout = '${TIMEOUT_S}s'" \
	"max_parallel_workers_per_gather = 0" "shared_buffers = '2GB'" "work_mem = '4MB'"

log "load: $ROWS rows"
run_psql -q -c "CREATE EXTENSION amqfilter;
	CREATE TABLE t AS
		SELECT g::int8 AS id, 'value ' || (g % $DISTINCT_T) AS t
		  FROM generate_series(1, $ROWS) g;
	CREATE TABLE built (name text PRIMARY KEY, sized bytea, sizeless bytea);"
run_psql -q -c "VACUUM ANALYZE t"

# name | column | distinct values | sized form | sizeless form
CASES=(
	"blocked|id|$ROWS|bloom_agg(id, $ROWS, $P)|bloom_agg(id, $P)"
	"counting|id|$ROWS|bloom_agg(id, $ROWS, $P, 'counting')|bloom_agg(id, $P, 'counting')"
	"cuckoo|id|$ROWS|cuckoo_agg(id, $ROWS, $P)|cuckoo_agg(id, $P)"
	"blocked, text, 10 copies each|t|$DISTINCT_T|bloom_agg(t, $DISTINCT_T, $P)|bloom_agg(t, $P)"
)

temp_bytes() {
	run_psql -At -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()"
}

ROWS_OUT=()
worst_build=0
worst_bytes=0
worst_rate_ok=yes
for c in "${CASES[@]}"; do
	IFS='|' read -r name column distinct sized sizeless <<<"$c"
	log "$name"
	mapfile -t ms < <(interleaved_ms "$RUNS" "SELECT $sized FROM t" "SELECT $sizeless FROM t")
	# the temporary file of one sizeless build (statistics are flushed at
	# the end of a transaction; the pause lets the collector catch up)
	before=$(temp_bytes)
	run_psql -q -c "SELECT $sizeless FROM t" >/dev/null
	sleep 1
	spilled=$(($(temp_bytes) - before))
	run_psql -q -c "INSERT INTO built SELECT '$name', ($sized)::bytea, ($sizeless)::bytea FROM t"
	type=${sized%%_agg*}
	read -r bytes_sized bytes_sizeless capacity < <(run_psql -At -F ' ' -c "
		SELECT length(sized), length(sizeless), (${type}_info(sizeless::$type)).capacity
		  FROM built WHERE name = '$name'")
	# absent values: ids past the table, or text no row has
	if [ "$column" = id ]; then
		probe="generate_series($((ROWS + 1))::int8, $((ROWS + PROBES))) v"
	else
		probe="(SELECT 'absent ' || g AS v FROM generate_series(1, $PROBES) g) a"
	fi
	# the filter cast once, in an InitPlan
	rate=$(run_psql -At -c "SELECT count(*) FILTER (WHERE
		  (SELECT sizeless::$type FROM built WHERE name = '$name') @> v)::float8 / $PROBES
		  FROM $probe")
	build_ratio=$(ratio "${ms[1]}" "${ms[0]}" 2)
	bytes_ratio=$(ratio "$bytes_sizeless" "$bytes_sized" 3)
	rate_ok=$(awk -v r="$rate" -v p=$P -v n=$PROBES 'BEGIN { print (r <= p + 3 * sqrt(p * (1 - p) / n)) ? "yes" : "no" }')
	worst_build=$(awk -v a="$worst_build" -v b="$build_ratio" 'BEGIN { print (b > a) ? b : a }')
	worst_bytes=$(awk -v a="$worst_bytes" -v b="$bytes_ratio" 'BEGIN { print (b > a) ? b : a }')
	[ "$rate_ok" = yes ] || worst_rate_ok=no
	ROWS_OUT+=("| $name | \`SELECT $sizeless FROM t\` | ${ms[0]} | ${ms[1]} | $build_ratio | $bytes_sized | $bytes_sizeless | $bytes_ratio | $(printf '%.5f' "$rate") | $capacity / $distinct | $((spilled / 1048576)) |")
done

{
	results_without_section "$RESULTS_FILE" "$SECTION"
	echo "$SECTION"
	echo
	echo "bench/sizeless.sh, $(date -u '+%Y-%m-%d'), PostgreSQL $(run_psql -At -c 'SHOW server_version'),"
	echo "$(nproc) cores. One core (max_parallel_workers_per_gather = 0), JIT off, work_mem"
	echo "$(run_psql -At -c 'SHOW work_mem'); t(id int8, t text), $ROWS rows, id distinct, t $DISTINCT_T"
	echo "distinct values ten times each; p = $P. Build times are medians of $RUNS interleaved"
	echo "rounds of the \"Execution Time\" of EXPLAIN (ANALYZE, TIMING OFF), in ms. The"
	echo "sized form is given the exact distinct count. Rate: the share of $PROBES absent"
	echo "values the sizeless filter answers \"maybe\" for. Spilled: the temporary file"
	echo "the sizeless build wrote (its hashes past work_mem), MB."
	echo
	echo "| filter | sizeless form | sized ms | sizeless ms | build ratio | sized bytes | sizeless bytes | bytes ratio | rate | sized for / distinct | spilled MB |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"
	printf '%s\n' "${ROWS_OUT[@]}"
	echo
	echo "| measure | target | measured |"
	echo "|---|---|---:|"
	echo "| build, sizeless / sized (worst) | <= $BUILD_TARGET | $worst_build |"
	echo "| bytes, sizeless / sized (worst) | <= $BYTES_TARGET | $worst_bytes |"
	echo "| rate <= p (three standard deviations over $PROBES probes), every filter | yes | $worst_rate_ok |"
} >"$RESULTS_FILE.new"
mv "$RESULTS_FILE.new" "$RESULTS_FILE"
results_section "$RESULTS_FILE" "$SECTION"
echo "sizeless bench: done in $((SECONDS - start))s; results written to ${RESULTS_FILE#"$AMQ_ROOT"/}"
