#!/usr/bin/env bash
# bench/run.sh: amqfilter's benchmark suite.
#
#   sudo bash bench/run.sh
#
# Builds and installs the extension, starts a throwaway PostgreSQL 15 cluster and
# measures, on one core (max_parallel_workers_per_gather = 0, JIT off, table held in
# shared_buffers), the per-row cost of the Bloom filter against a plain scan:
#
#   build   bloom_agg over 10M int8 rows   vs  count(col) over the same rows
#   probe   filter @> col for 10M rows     vs  col <> -1 for the same rows
#           (the 12 MB filter is read from a table, TOASTed, through an InitPlan;
#           also, for reference, a 120 kB filter that stays in the CPU cache)
#   FPR     measured false-positive rate and bits per key against the target p
#
# Each time is the median of $RUNS runs of the "Execution Time" that
# EXPLAIN (ANALYZE, TIMING OFF) reports.  Prints the results and writes them, with
# the machine they were measured on, to bench/RESULTS.md.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

RUNS=${RUNS:-5}
ROWS=10000000
FPR_KEYS=1000000
SMALL_KEYS=100000
RATIO_TARGET=1.2
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md

LAYOUTS=(blocked classic)

# Rows of the markdown tables, filled in as measurements come.
TIMING_ROWS=()
FPR_ROWS=()

load_data() {
	log "bench: loading $ROWS rows into t(col int8)"
	run_psql -q >/dev/null <<-SQL
		CREATE EXTENSION amqfilter;
		CREATE EXTENSION pg_prewarm;
		CREATE TABLE t (col int8);
		INSERT INTO t SELECT g FROM generate_series(1, $ROWS) g;
		VACUUM ANALYZE t;
		SELECT pg_prewarm('t');
	SQL
}

# layout_args LAYOUT: the extra bloom_agg argument for LAYOUT ('' for the default).
layout_args() {
	if [ "$1" = blocked ]; then echo ""; else echo ", '$1'"; fi
}

# compare NAME BASELINE_MS SQL: time SQL, print and record its ratio to the baseline.
compare() {
	local name=$1 baseline=$2 sql=$3 ms ratio verdict
	ms=$(median_exec_ms "$RUNS" "$sql")
	ratio=$(awk -v a="$ms" -v b="$baseline" 'BEGIN { printf "%.2f", a / b }')
	verdict=$(awk -v r="$ratio" -v t="$RATIO_TARGET" 'BEGIN { print (r <= t) ? "yes" : "no" }')
	printf '%-28s %10.1f ms  %10.1f ms  ratio %s (target <= %s: %s)\n' \
		"$name" "$ms" "$baseline" "$ratio" "$RATIO_TARGET" "$verdict"
	TIMING_ROWS+=("| $name | \`$sql\` | $ms | $baseline | $ratio | $verdict |")
}

bench_build() {
	local baseline_sql="SELECT count(col) FROM t" baseline layout
	log "bench: build (warming up, then $RUNS runs each)"
	exec_ms "$baseline_sql" >/dev/null
	baseline=$(median_exec_ms "$RUNS" "$baseline_sql")
	TIMING_ROWS+=("| build baseline | \`$baseline_sql\` | $baseline | | | |")
	for layout in "${LAYOUTS[@]}"; do
		compare "build, $layout" "$baseline" \
			"SELECT bloom_agg(col, $ROWS, 0.01$(layout_args "$layout")) FROM t"
	done
}

bench_probe() {
	local baseline_sql="SELECT count(*) FROM t WHERE col <> -1" baseline i
	log "bench: probe (filters stored in a table, read through an InitPlan)"
	run_psql -q <<-SQL
		CREATE TABLE filters AS
		SELECT 1 AS id, bloom_agg(col, $ROWS, 0.01) AS f FROM t
		UNION ALL
		SELECT 2 AS id, bloom_agg(col, $ROWS, 0.01, 'classic') AS f FROM t
		UNION ALL
		SELECT 3 AS id, bloom_agg(col, $SMALL_KEYS, 0.01) AS f FROM t WHERE col <= $SMALL_KEYS;
		VACUUM ANALYZE filters;
	SQL
	exec_ms "$baseline_sql" >/dev/null
	baseline=$(median_exec_ms "$RUNS" "$baseline_sql")
	TIMING_ROWS+=("| probe baseline | \`$baseline_sql\` | $baseline | | | |")
	for i in 1 2; do
		compare "probe, ${LAYOUTS[i - 1]}" "$baseline" \
			"SELECT count(*) FROM t WHERE (SELECT f FROM filters WHERE id = $i) @> col"
	done
	compare_literal "$baseline"
	# Not a target: a filter small enough to stay in the CPU cache separates the
	# per-call cost from the cost of memory misses in the 12 MB filters.
	compare "probe, blocked, in cache" "$baseline" \
		"SELECT count(*) FROM t WHERE (SELECT f FROM filters WHERE id = 3) @> col"
}

# compare_literal BASELINE_MS: the blocked 12 MB filter written into the query
# as a literal constant.  The stored filter read through an InitPlan must cost
# about the same: it is detoasted and checked once per query, not once per row.
# (The statement is 16 MB of text, so it goes through a file, not the command line.)
compare_literal() {
	local baseline=$1 file ms ratio i
	file=$(mktemp /tmp/amqfilter-literal.XXXXXX)
	run_psql -At -o "$file" -c "SELECT 'EXPLAIN (ANALYZE, TIMING OFF) SELECT count(*) FROM t WHERE '
		|| quote_literal(f::text) || '::bloom @> col;' FROM filters WHERE id = 1"
	ms=$(for ((i = 0; i < RUNS; i++)); do
		run_psql -At -f "$file" | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p'
	done | median)
	rm -f "$file"
	ratio=$(awk -v a="$ms" -v b="$baseline" 'BEGIN { printf "%.2f", a / b }')
	printf '%-28s %10.1f ms  %10.1f ms  ratio %s (no target: compare with the row above)\n' \
		"probe, blocked, literal" "$ms" "$baseline" "$ratio"
	TIMING_ROWS+=("| probe, blocked, literal | the same filter as a 16 MB literal in the query | $ms | $baseline | $ratio | (reference) |")
}

# One row per (layout, p): the filter built over keys 1..N, probed with the N keys
# N+1..2N that are known to be absent.  "ok" allows three standard deviations of
# sampling noise above p.
bench_fpr() {
	log "bench: false-positive rate and bits per key over $FPR_KEYS keys"
	local rows row
	rows=$(run_psql -q -At -F $'\t' <<-SQL
		CREATE TEMP TABLE fpr AS
		SELECT l.layout, p.p, bloom_agg(g, $FPR_KEYS, p.p, l.layout) AS f
		FROM (VALUES ('blocked'), ('classic')) AS l(layout),
		     (VALUES (0.01::float8), (0.001), (0.0001)) AS p(p),
		     generate_series(1::int8, $FPR_KEYS) AS g
		GROUP BY l.layout, p.p;

		SELECT layout, p, round(fpr::numeric, 6),
		       CASE WHEN fpr <= p + 3 * sqrt(p / $FPR_KEYS) THEN 'yes' ELSE 'no' END,
		       false_negatives, hashes,
		       round(bits_per_key::numeric, 2),
		       round(planned_bits_per_key::numeric, 2),
		       round((1.44 * ln(1 / p) / ln(2))::numeric, 2)
		FROM (SELECT layout, p,
		             (SELECT count(*) FROM generate_series($FPR_KEYS + 1::int8, 2 * $FPR_KEYS) g
		               WHERE f @> g)::float8 / $FPR_KEYS AS fpr,
		             (SELECT count(*) FROM generate_series(1::int8, $FPR_KEYS) g
		               WHERE NOT f @> g) AS false_negatives,
		             (bloom_info(f)).hashes,
		             (bloom_info(f)).bits::float8 / $FPR_KEYS AS bits_per_key,
		             (bloom_params($FPR_KEYS, p, layout)).bits_per_key AS planned_bits_per_key
		      FROM fpr) AS m
		ORDER BY layout, p DESC;
	SQL
	)
	while IFS= read -r row; do
		FPR_ROWS+=("| ${row//$'\t'/ | } |")
	done <<<"$rows"
}

machine_info() {
	local cpu
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
	echo "- CPU: ${cpu:-unknown} (nproc: $(nproc))"
	echo "- Memory: $(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "- PostgreSQL: $(run_psql -At -c 'SELECT version()')"
	echo "- Kernel: $(uname -sr)"
	echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	if git -C "$AMQ_ROOT" rev-parse --short HEAD >/dev/null 2>&1; then
		echo "- Commit: $(git -C "$AMQ_ROOT" rev-parse --short HEAD)"
	fi
}

write_results() {
	{
		echo "# amqfilter benchmark results"
		echo
		echo "Generated by \`sudo bash bench/run.sh\`; do not edit by hand."
		echo
		machine_info
		echo
		echo "## Build and probe cost"
		echo
		echo "Single core (max_parallel_workers_per_gather = 0), JIT off, the $ROWS-row"
		echo "table t(col int8) held in shared_buffers. Times are the median of $RUNS runs of"
		echo "the \"Execution Time\" from EXPLAIN (ANALYZE, TIMING OFF), in milliseconds."
		echo "The ratio is against the plain scan doing the same work without a filter;"
		echo "the target is <= $RATIO_TARGET. The \"in cache\" row probes a filter over the"
		echo "first $SMALL_KEYS values (120 kB), for reference: it has no target."
		echo
		echo "| measurement | query | ms | baseline ms | ratio | within target |"
		echo "|---|---|---:|---:|---:|---|"
		printf '%s\n' "${TIMING_ROWS[@]}"
		echo
		echo "## False-positive rate and size"
		echo
		echo "Filter built for n = $FPR_KEYS keys (1..n), probed with the n absent keys"
		echo "n+1..2n. \"FPR ok\" means measured <= p + 3·sqrt(p/n) (sampling noise)."
		echo "Bits per key: the filter's \`bloom_info(f).bits\` / n, what \`bloom_params\`"
		echo "plans, and the lower bound 1.44·log2(1/p) for any Bloom filter."
		echo
		echo "| layout | p | measured FPR | FPR ok | false negatives | hashes | bits/key | planned bits/key | bound bits/key |"
		echo "|---|---:|---:|---|---:|---:|---:|---:|---:|"
		printf '%s\n' "${FPR_ROWS[@]}"
	} >"$RESULTS_FILE"
}

main() {
	local start=$SECONDS
	ensure_packages
	build_and_install
	start_cluster "max_parallel_workers_per_gather = 0" "jit = off" \
		"shared_buffers = '2GB'"

	load_data
	bench_build
	bench_probe
	bench_fpr
	write_results
	stop_cluster

	echo
	sed -n '/^## False-positive/,$p' "$RESULTS_FILE"
	echo
	echo "bench: done in $((SECONDS - start))s; results written to ${RESULTS_FILE#"$AMQ_ROOT"/}"
}

main "$@"
