#!/usr/bin/env bash
# bench/run.sh: amqfilter's benchmark suite.
#
#   sudo bash bench/run.sh
#
# Builds and installs the extension, starts a throwaway PostgreSQL 15 cluster and
# measures, on one core (max_parallel_workers_per_gather = 0, JIT off, table held in
# shared_buffers, every statement under a 120 s statement_timeout), the per-row
# cost of the Bloom and cuckoo filters against a plain scan:
#
#   build   bloom_agg / cuckoo_agg over 10M int8 rows  vs  count(col) over the rows
#   probe   filter @> col for 10M rows     vs  col <> -1 for the same rows
#           (the 12 MB filter is read from a table, TOASTed, through an InitPlan;
#           also, for reference, a ~120 kB filter that stays in the CPU cache)
#   growth  cuckoo_agg told n = 1/10 of the rows: build and probe cost, tables,
#           bits per key and false-positive rate of the grown filter
#   FPR     measured false-positive rate and bits per key against the target p,
#           bloom and cuckoo side by side over the same keys and absent probes
#
# Each time is the median of $RUNS runs of the "Execution Time" that
# EXPLAIN (ANALYZE, TIMING OFF) reports, and each ratio is against a baseline
# measured in the same run, just before.  Prints the results and writes them, with
# the machine they were measured on, to bench/RESULTS.md.
#
# Environment:
#   RUNS=5                   runs per median
#   AMQ_BENCH_ROWS=10000000  rows of the table t (a smaller count for trying the
#                            script out; the recorded results use the default)
#   AMQ_BENCH_SKIP_BUILD=1   use the installed extension instead of building and
#                            installing the working tree first
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

RUNS=${RUNS:-5}
ROWS=${AMQ_BENCH_ROWS:-10000000}
FPR_KEYS=1000000
# The "in cache" filters: over the first SMALL_KEYS values (at most a tenth of the rows).
SMALL_KEYS=$((ROWS / 10 < 100000 ? ROWS / 10 : 100000))
# The cuckoo growth line: n told to cuckoo_agg is a tenth of the true count.
GROWTH_N=$((ROWS / 10))
RATIO_TARGET=1.2
CUCKOO_BUILD_TARGET=1.5
CUCKOO_PROBE_TARGET=1.2
CUCKOO_BITS_TARGET=11
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md

LAYOUTS=(blocked classic)

# Rows of the markdown tables, filled in as measurements come.
TIMING_ROWS=()
CUCKOO_TIMING_ROWS=()
FPR_ROWS=()
SIDE_BY_SIDE_ROWS=()
GROWTH_ROWS=()
# Ratios by measurement name, for the growth table.
declare -A RATIO_OF=()
# Sizes of the "in cache" filters, in kB.
SMALL_BLOOM_KB=
SMALL_CUCKOO_KB=

if ! [[ $ROWS =~ ^[0-9]+$ ]] || [ "$ROWS" -lt 100 ]; then
	die "AMQ_BENCH_ROWS must be a whole number >= 100, not '$ROWS'"
fi

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

# measure NAME BASELINE_MS SQL [TARGET]: time SQL and print its ratio to the
# baseline; sets MEASURED_MS, MEASURED_RATIO and VERDICT (yes/no against TARGET,
# "(reference)" without one) and records the ratio in RATIO_OF[NAME].
measure() {
	local name=$1 baseline=$2 sql=$3 target=${4:-}
	MEASURED_MS=$(median_exec_ms "$RUNS" "$sql")
	MEASURED_RATIO=$(awk -v a="$MEASURED_MS" -v b="$baseline" 'BEGIN { printf "%.2f", a / b }')
	RATIO_OF[$name]=$MEASURED_RATIO
	if [ -n "$target" ]; then
		VERDICT=$(awk -v r="$MEASURED_RATIO" -v t="$target" 'BEGIN { print (r <= t) ? "yes" : "no" }')
		printf '%-36s %10.1f ms  %10.1f ms  ratio %s (target <= %s: %s)\n' \
			"$name" "$MEASURED_MS" "$baseline" "$MEASURED_RATIO" "$target" "$VERDICT"
	else
		VERDICT="(reference)"
		printf '%-36s %10.1f ms  %10.1f ms  ratio %s (no target)\n' \
			"$name" "$MEASURED_MS" "$baseline" "$MEASURED_RATIO"
	fi
}

# compare NAME BASELINE_MS SQL: time SQL, print and record its ratio to the
# baseline in the Bloom table (target RATIO_TARGET).
compare() {
	local name=$1 baseline=$2 sql=$3
	measure "$name" "$baseline" "$sql" "$RATIO_TARGET"
	TIMING_ROWS+=("| $name | \`$sql\` | $MEASURED_MS | $baseline | $MEASURED_RATIO | $VERDICT |")
}

# compare_cuckoo NAME BASELINE_MS SQL [TARGET]: the same for the cuckoo table,
# which has a target per row (none for reference rows).
compare_cuckoo() {
	local name=$1 baseline=$2 sql=$3 target=${4:-}
	measure "$name" "$baseline" "$sql" "$target"
	CUCKOO_TIMING_ROWS+=("| $name | \`$sql\` | $MEASURED_MS | $baseline | $MEASURED_RATIO | ${target:+<= $target} | $VERDICT |")
}

# measure_baseline NAME SQL: warm up, then the median time of SQL; sets BASELINE_MS.
measure_baseline() {
	local name=$1 sql=$2
	exec_ms "$sql" >/dev/null
	BASELINE_MS=$(median_exec_ms "$RUNS" "$sql")
	printf '%-36s %10.1f ms\n' "$name" "$BASELINE_MS"
}

bench_build() {
	local baseline_sql="SELECT count(col) FROM t" layout
	log "bench: bloom build (warming up, then $RUNS runs each)"
	measure_baseline "build baseline" "$baseline_sql"
	TIMING_ROWS+=("| build baseline | \`$baseline_sql\` | $BASELINE_MS | | | |")
	for layout in "${LAYOUTS[@]}"; do
		compare "build, $layout" "$BASELINE_MS" \
			"SELECT bloom_agg(col, $ROWS, 0.01$(layout_args "$layout")) FROM t"
	done
}

bench_probe() {
	local baseline_sql="SELECT count(*) FROM t WHERE col <> -1" i
	log "bench: bloom probe (filters stored in a table, read through an InitPlan)"
	run_psql -q <<-SQL
		CREATE TABLE filters AS
		SELECT 1 AS id, bloom_agg(col, $ROWS, 0.01) AS f FROM t
		UNION ALL
		SELECT 2 AS id, bloom_agg(col, $ROWS, 0.01, 'classic') AS f FROM t
		UNION ALL
		SELECT 3 AS id, bloom_agg(col, $SMALL_KEYS, 0.01) AS f FROM t WHERE col <= $SMALL_KEYS;
		VACUUM ANALYZE filters;
	SQL
	SMALL_BLOOM_KB=$(run_psql -At -c \
		"SELECT round((bloom_info(f)).bytes / 1024.0) FROM filters WHERE id = 3")
	measure_baseline "probe baseline" "$baseline_sql"
	TIMING_ROWS+=("| probe baseline | \`$baseline_sql\` | $BASELINE_MS | | | |")
	for i in 1 2; do
		compare "probe, ${LAYOUTS[i - 1]}" "$BASELINE_MS" \
			"SELECT count(*) FROM t WHERE (SELECT f FROM filters WHERE id = $i) @> col"
	done
	compare_literal "$BASELINE_MS"
	# Not a target: a filter small enough to stay in the CPU cache separates the
	# per-call cost from the cost of memory misses in the 12 MB filters.
	compare "probe, blocked, in cache" "$BASELINE_MS" \
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
	printf '%-36s %10.1f ms  %10.1f ms  ratio %s (no target: compare with the row above)\n' \
		"probe, blocked, literal" "$ms" "$baseline" "$ratio"
	TIMING_ROWS+=("| probe, blocked, literal | the same filter as a literal in the query | $ms | $baseline | $ratio | (reference) |")
}

# The cuckoo filter, measured like the Bloom filter, each group of rows against
# its own baseline measured just before: build at p = 1% with n the true count
# (target CUCKOO_BUILD_TARGET) and with n a tenth of it, so that the filter grows
# (no target); probe with the stored filters (target CUCKOO_PROBE_TARGET for the
# right-sized one).  Stores the filters in cuckoo_filters for bench_growth.
bench_cuckoo() {
	local build_sql="SELECT count(col) FROM t" probe_sql="SELECT count(*) FROM t WHERE col <> -1"
	log "bench: cuckoo build (warming up, then $RUNS runs each)"
	measure_baseline "build baseline" "$build_sql"
	CUCKOO_TIMING_ROWS+=("| build baseline | \`$build_sql\` | $BASELINE_MS | | | | |")
	compare_cuckoo "build, cuckoo" "$BASELINE_MS" \
		"SELECT cuckoo_agg(col, $ROWS, 0.01) FROM t" "$CUCKOO_BUILD_TARGET"
	compare_cuckoo "build, cuckoo, n = rows/10 (grows)" "$BASELINE_MS" \
		"SELECT cuckoo_agg(col, $GROWTH_N, 0.01) FROM t"

	log "bench: cuckoo probe (filters stored in a table, read through an InitPlan)"
	run_psql -q <<-SQL
		CREATE TABLE cuckoo_filters AS
		SELECT 1 AS id, cuckoo_agg(col, $ROWS, 0.01) AS f FROM t
		UNION ALL
		SELECT 2 AS id, cuckoo_agg(col, $GROWTH_N, 0.01) AS f FROM t
		UNION ALL
		SELECT 3 AS id, cuckoo_agg(col, $SMALL_KEYS, 0.01) AS f FROM t WHERE col <= $SMALL_KEYS;
		VACUUM ANALYZE cuckoo_filters;
	SQL
	SMALL_CUCKOO_KB=$(run_psql -At -c \
		"SELECT round((cuckoo_info(f)).bytes / 1024.0) FROM cuckoo_filters WHERE id = 3")
	measure_baseline "probe baseline" "$probe_sql"
	CUCKOO_TIMING_ROWS+=("| probe baseline | \`$probe_sql\` | $BASELINE_MS | | | | |")
	compare_cuckoo "probe, cuckoo" "$BASELINE_MS" \
		"SELECT count(*) FROM t WHERE (SELECT f FROM cuckoo_filters WHERE id = 1) @> col" \
		"$CUCKOO_PROBE_TARGET"
	compare_cuckoo "probe, cuckoo, grown (n = rows/10)" "$BASELINE_MS" \
		"SELECT count(*) FROM t WHERE (SELECT f FROM cuckoo_filters WHERE id = 2) @> col"
	compare_cuckoo "probe, cuckoo, in cache" "$BASELINE_MS" \
		"SELECT count(*) FROM t WHERE (SELECT f FROM cuckoo_filters WHERE id = 3) @> col"
}

# What an underestimated n costs: the cuckoo filters built for n = ROWS and for
# n = ROWS / 10 over the same ROWS values.  Bits per key against the true count;
# the false-positive rate measured with FPR_KEYS values known to be absent
# (ROWS+1..ROWS+FPR_KEYS); false negatives over all ROWS values.
bench_growth() {
	log "bench: cuckoo growth (false negatives over $ROWS values, FPR over $FPR_KEYS absent ones)"
	local rows row id ratios
	rows=$(run_psql -q -At -F $'\t' <<-SQL
		SELECT id, (i).capacity, (i).tables, (i).bytes,
		       round((8.0 * (i).bytes / $ROWS)::numeric, 2),
		       round((i).load_factor::numeric, 3),
		       round((i).est_fpr::numeric, 6),
		       round(((SELECT count(*) FROM generate_series($ROWS + 1::int8, $ROWS + $FPR_KEYS) g
		                WHERE f @> g)::float8 / $FPR_KEYS)::numeric, 6),
		       (SELECT count(*) FROM t WHERE NOT f @> col)
		FROM (SELECT id, f, cuckoo_info(f) AS i FROM cuckoo_filters WHERE id IN (1, 2)) AS c
		ORDER BY id;
	SQL
	)
	while IFS=$'\t' read -r id row; do
		if [ "$id" = 1 ]; then
			ratios="${RATIO_OF[build, cuckoo]} | ${RATIO_OF[probe, cuckoo]}"
		else
			ratios="${RATIO_OF[build, cuckoo, n = rows/10 (grows)]} | ${RATIO_OF[probe, cuckoo, grown (n = rows/10)]}"
		fi
		GROWTH_ROWS+=("| ${row//$'\t'/ | } | $ratios |")
	done <<<"$rows"
}

# The false-positive rate and size of both filter types, built over the same
# FPR_KEYS keys 1..N and probed with the same N keys N+1..2N known to be absent.
# One row per (layout, p) for Bloom, and one row per p with Bloom and cuckoo side
# by side.  "ok" allows three standard deviations of sampling noise above p.
bench_fpr() {
	log "bench: false-positive rate and bits per key over $FPR_KEYS keys"
	local rows row
	run_psql -q <<-SQL
		CREATE TABLE fpr_bloom AS
		SELECT l.layout, p.p, bloom_agg(g, $FPR_KEYS, p.p, l.layout) AS f
		FROM (VALUES ('blocked'), ('classic')) AS l(layout),
		     (VALUES (0.01::float8), (0.001), (0.0001)) AS p(p),
		     generate_series(1::int8, $FPR_KEYS) AS g
		GROUP BY l.layout, p.p;

		CREATE TABLE fpr_cuckoo AS
		SELECT p.p, cuckoo_agg(g, $FPR_KEYS, p.p) AS f
		FROM (VALUES (0.01::float8), (0.001), (0.0001)) AS p(p),
		     generate_series(1::int8, $FPR_KEYS) AS g
		GROUP BY p.p;

		CREATE TABLE fpr_bloom_m AS
		SELECT layout, p,
		       (SELECT count(*) FROM generate_series($FPR_KEYS + 1::int8, 2 * $FPR_KEYS) g
		         WHERE f @> g)::float8 / $FPR_KEYS AS fpr,
		       (SELECT count(*) FROM generate_series(1::int8, $FPR_KEYS) g
		         WHERE NOT f @> g) AS false_negatives,
		       (bloom_info(f)).hashes,
		       (bloom_info(f)).bits::float8 / $FPR_KEYS AS bits_per_key,
		       8.0 * (bloom_info(f)).bytes / $FPR_KEYS AS bytes_bits_per_key,
		       (bloom_params($FPR_KEYS, p, layout)).bits_per_key AS planned_bits_per_key
		FROM fpr_bloom;

		CREATE TABLE fpr_cuckoo_m AS
		SELECT p,
		       (SELECT count(*) FROM generate_series($FPR_KEYS + 1::int8, 2 * $FPR_KEYS) g
		         WHERE f @> g)::float8 / $FPR_KEYS AS fpr,
		       (SELECT count(*) FROM generate_series(1::int8, $FPR_KEYS) g
		         WHERE NOT f @> g) AS false_negatives,
		       (i).fingerprint_bits, (i).tables, (i).load_factor,
		       8.0 * (i).bytes / $FPR_KEYS AS bits_per_key
		FROM (SELECT p, f, cuckoo_info(f) AS i FROM fpr_cuckoo) AS c;
	SQL

	rows=$(run_psql -q -At -F $'\t' <<-SQL
		SELECT layout, p, round(fpr::numeric, 6),
		       CASE WHEN fpr <= p + 3 * sqrt(p / $FPR_KEYS) THEN 'yes' ELSE 'no' END,
		       false_negatives, hashes,
		       round(bits_per_key::numeric, 2),
		       round(planned_bits_per_key::numeric, 2),
		       round((1.44 * ln(1 / p) / ln(2))::numeric, 2)
		FROM fpr_bloom_m
		ORDER BY layout, p DESC;
	SQL
	)
	while IFS= read -r row; do
		FPR_ROWS+=("| ${row//$'\t'/ | } |")
	done <<<"$rows"

	rows=$(run_psql -q -At -F $'\t' <<-SQL
		SELECT c.p,
		       round(b.fpr::numeric, 6), round(k.fpr::numeric, 6), round(c.fpr::numeric, 6),
		       CASE WHEN c.fpr <= c.p + 3 * sqrt(c.p / $FPR_KEYS) THEN 'yes' ELSE 'no' END,
		       c.false_negatives,
		       round(b.bytes_bits_per_key, 2), round(k.bytes_bits_per_key, 2),
		       round(c.bits_per_key, 2),
		       round((1.44 * ln(1 / c.p) / ln(2))::numeric, 2),
		       round((ln(1 / c.p) / ln(2))::numeric, 2),
		       c.fingerprint_bits, c.tables, round(c.load_factor::numeric, 3),
		       CASE WHEN c.p <> 0.01 THEN ''
		            WHEN c.bits_per_key <= $CUCKOO_BITS_TARGET THEN '<= $CUCKOO_BITS_TARGET: yes'
		            ELSE '<= $CUCKOO_BITS_TARGET: no' END
		FROM fpr_cuckoo_m c
		JOIN fpr_bloom_m b ON b.p = c.p AND b.layout = 'blocked'
		JOIN fpr_bloom_m k ON k.p = c.p AND k.layout = 'classic'
		ORDER BY c.p DESC;
	SQL
	)
	while IFS= read -r row; do
		SIDE_BY_SIDE_ROWS+=("| ${row//$'\t'/ | } |")
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
	local kept heading
	# the sections bench/sharded.sh, bench/probe.sh, bench/joins.sh,
	# bench/index.sh, bench/sizeless.sh, bench/shapes.sh, bench/joinfilter.sh,
	# bench/ssb.sh, bench/positions.sh and bench/skip.sh write (on 15 and 18),
	# and the two majors side by side, stay as they were
	kept=$(for heading in "## Sharded tables (postgres_fdw)" \
		"## Stored filters: probes through slices" \
		"## Joins, builds and estimates" \
		"## Filter index" \
		"## Sizeless aggregates" \
		"## Query shapes: a join to a table of filters, a probe in a function" \
		"## Runtime join filters" \
		"## Runtime join filters: sharded joins" \
		"## Star Schema Benchmark" \
		"## Runtime join filters, PostgreSQL 18" \
		"## Filter index: lookups" \
		"## Filter index: lookups, PostgreSQL 18" \
		"## Filter index: skipping partitions" \
		"## Filter index: skipping partitions, PostgreSQL 18" \
		"## PostgreSQL 15 and 18 side by side"; do
		results_section "$RESULTS_FILE" "$heading"
	done)
	{
		echo "# amqfilter benchmark results"
		echo
		echo "Generated by \`sudo bash bench/run.sh\` (the last section by"
		echo "\`bench/sharded.sh\`); do not edit by hand."
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
		echo "first $SMALL_KEYS values ($SMALL_BLOOM_KB kB), for reference: it has no target."
		echo
		echo "| measurement | query | ms | baseline ms | ratio | within target |"
		echo "|---|---|---:|---:|---:|---|"
		printf '%s\n' "${TIMING_ROWS[@]}"
		echo
		echo "## Cuckoo filter: build and probe cost"
		echo
		echo "Measured as above, in the same run, against baselines measured again just"
		echo "before (p = 0.01). Targets: build <= $CUCKOO_BUILD_TARGET, probe <= $CUCKOO_PROBE_TARGET, for the"
		echo "filter sized for the true count. Reference rows, without a target: the filter"
		echo "built with n = $GROWTH_N, a tenth of the rows, which grows by appending tables"
		echo "(see \"Cuckoo filter growth\" below), and a filter over the first $SMALL_KEYS values"
		echo "($SMALL_CUCKOO_KB kB) that stays in the CPU cache."
		echo
		echo "| measurement | query | ms | baseline ms | ratio | target | within target |"
		echo "|---|---|---:|---:|---:|---|---|"
		printf '%s\n' "${CUCKOO_TIMING_ROWS[@]}"
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
		echo
		echo "### Bloom and cuckoo side by side"
		echo
		echo "The same keys 1..n and the same absent probes n+1..2n (n = $FPR_KEYS) for"
		echo "every filter. Bits per key here are 8·bytes / n, the whole serialized filter"
		echo "(\`bloom_info(f).bytes\`, \`cuckoo_info(f).bytes\`), headers included. Bounds:"
		echo "1.44·log2(1/p) for any Bloom filter, log2(1/p) for any filter (the"
		echo "information-theoretic bound, the one to compare the cuckoo filter with)."
		echo "\"FPR ok\", fingerprint bits, tables, load factor and false negatives are the"
		echo "cuckoo filter's. Target: cuckoo bits/key <= $CUCKOO_BITS_TARGET at p = 0.01."
		echo
		echo "| p | bloom blocked FPR | bloom classic FPR | cuckoo FPR | cuckoo FPR ok | cuckoo false negatives | bloom blocked bits/key | bloom classic bits/key | cuckoo bits/key | Bloom bound 1.44·log2(1/p) | bound log2(1/p) | fingerprint bits | tables | load factor | cuckoo bits/key target |"
		echo "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
		printf '%s\n' "${SIDE_BY_SIDE_ROWS[@]}"
		echo
		echo "## Cuckoo filter growth"
		echo
		echo "What an underestimated n costs: \`cuckoo_agg(col, n, 0.01)\` over the"
		echo "$ROWS rows of t, with n the true count and with n a tenth of it. The"
		echo "undersized filter grows by appending tables (normally each twice the size of"
		echo "the last), and lookups check every table. Bits per key = 8·bytes / $ROWS (the"
		echo "true count); load factor and estimated FPR from \`cuckoo_info\`; measured FPR"
		echo "over the $FPR_KEYS absent values $((ROWS + 1))..$((ROWS + FPR_KEYS)); false"
		echo "negatives over all $ROWS values. The ratios are those of the cuckoo table above."
		echo
		echo "| n | tables | bytes | bits/key | load factor | estimated FPR | measured FPR | false negatives | build ratio | probe ratio |"
		echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		printf '%s\n' "${GROWTH_ROWS[@]}"
		if [ -n "$kept" ]; then
			echo
			printf '%s\n' "$kept"
		fi
	} >"$RESULTS_FILE"
}

main() {
	local start=$SECONDS
	bench_build_and_install
	# a query that regresses by an order of magnitude fails instead of hanging
	start_cluster "max_parallel_workers_per_gather = 0" "jit = off" \
		"shared_buffers = '2GB'" "statement_timeout = '120s'"

	load_data
	bench_build
	bench_probe
	bench_cuckoo
	bench_fpr
	bench_growth
	write_results
	stop_cluster

	echo
	sed -n '/^## False-positive/,$p' "$RESULTS_FILE"
	echo
	echo "bench: done in $((SECONDS - start))s; results written to ${RESULTS_FILE#"$AMQ_ROOT"/}"
}

main "$@"
