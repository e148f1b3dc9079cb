#!/usr/bin/env bash
# bench/joinfilter.sh: runtime join filters, amqfilter.join_filter on against
# off, for plain SQL that names no filter.
#
#   sudo bash bench/joinfilter.sh
#
# Builds and installs the extension (unless AMQ_BENCH_SKIP_BUILD=1), starts a
# throwaway PostgreSQL 15 cluster with the library in session_preload_libraries
# (one core per query, JIT off, work_mem 4 MB, statement_timeout 60 s: a query
# that would run longer stops the run) and loads, for $AMQ_JOINFILTER_ROWS rows
# (default 10M):
#
#   t, small     bench/joins.sh's tables: t the int8 rows 1..ROWS, small every
#                10th of them (10% of t matches)
#   fact, dates, customers, products
#                a star: ROWS fact rows, each with a date (10 years of days), a
#                customer (of 100,000) and a product (of 10,000), drawn with
#                hashint4; the query keeps one year, one region of five and half
#                of the categories, 1% of the fact rows
#   lines, orders
#                ROWS lines, each naming one of ROWS order numbers, and the
#                orders, every 10th number (10% of the lines match) with a
#                40-byte note: a build side of ROWS/10 wide rows that goes
#                multi-batch in 4 MB of work_mem
#
# and measures each query with the filter off and on, side by side
# (interleaved_ms: RUNS rounds after a warm-up round, each running every form
# of the query once; the median of EXPLAIN (ANALYZE, TIMING OFF)'s "Execution
# Time"), against a target:
#
#   semi-join, inner join   t against small: on >= 1.4x faster than off, and
#                           not slower than bench/joins.sh's hand-written
#                           recipe (a bloom_agg of small in the query, the
#                           setting off), measured in the same rounds
#   star join               fact against three filtered dimensions: >= 2x
#   spilling join           lines against orders: >= 1.5x
#   90% matching            fact against the products of nine categories of
#                           ten: on no more than 3% slower (on / off <= 1.03)
#
# In the same rounds, each join's floor, what a filter tested above the probe
# side's scan cannot avoid: that scan with a trivial qual on the key, plus the
# join of a table of only the probe-side rows that match (t_match, fact_match,
# lines_match).  The 90% join is timed again without EXPLAIN (client_ms), whose
# per-row instrumentation of the filter node is part of what it costs there.
#
# Then, once with the filter on, EXPLAIN ANALYZE's counts: rows the filters
# rejected, whether a filter stopped testing, the batches of the hash joins.
# Last, each query's rows (its join without the aggregate) with the filter on
# and off, stored and compared with EXCEPT ALL both ways: "same result" when
# neither side has a row the other lacks.  Writes the "Runtime join filters"
# section of bench/RESULTS.md (bench/run.sh keeps it).  Run it alone: the
# targets are ratios of times on a machine that other work would slow.
#
#   flock /tmp/amq-bench.lock bash bench/joinfilter.sh
#
# Environment: AMQ_JOINFILTER_ROWS (default 10000000; a smaller count for trying
# the script out, the recorded results use the default); RUNS (rounds, default
# 7); AMQ_BENCH_SKIP_BUILD=1 to use the installed extension.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

RUNS=${RUNS:-7}
ROWS=${AMQ_JOINFILTER_ROWS:-10000000}
TIMEOUT_S=60
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md
SECTION='## Runtime join filters'
ON='SET amqfilter.join_filter = on;'
OFF='SET amqfilter.join_filter = off;'
DAYS=3650
CUSTOMERS=100000
PRODUCTS=10000
RESULT_ROWS=()
FILTER_ROWS=()
FLOOR_ROWS=()
MISSED=0

[[ $ROWS =~ ^[0-9]+$ ]] && [ "$ROWS" -ge 100000 ] || die "AMQ_JOINFILTER_ROWS must be a whole number >= 100000"
[[ $RUNS =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 1 ] || die "RUNS must be a whole number >= 1"

load() {
	log "joinfilter: loading t ($ROWS rows), small, the star ($ROWS fact rows), lines and orders"
	run_psql -q >/dev/null <<-SQL
		CREATE EXTENSION amqfilter;
		CREATE EXTENSION pg_prewarm;
		CREATE TABLE t AS SELECT g::int8 AS id FROM generate_series(1, $ROWS) g;
		CREATE TABLE small AS SELECT id FROM t WHERE id % 10 = 0;

		CREATE TABLE fact AS
		  SELECT g::int8 AS id,
		         (abs(hashint4(g)) % $DAYS)::int4 AS date_id,
		         (abs(hashint4(g + 1000000000)) % $CUSTOMERS)::int4 AS cust_id,
		         (abs(hashint4(-g)) % $PRODUCTS)::int4 AS prod_id,
		         (g % 1000)::int8 AS amount
		  FROM generate_series(1, $ROWS) g;
		CREATE TABLE dates AS
		  SELECT g::int4 AS id, 2015 + g / 365 AS year, 1 + (g % 365) / 31 AS month
		  FROM generate_series(0, $DAYS - 1) g;
		CREATE TABLE customers AS
		  SELECT g::int4 AS id, (ARRAY['EU', 'NA', 'SA', 'AS', 'AF'])[1 + g % 5] AS region,
		         'customer ' || g AS name
		  FROM generate_series(0, $CUSTOMERS - 1) g;
		CREATE TABLE products AS
		  SELECT g::int4 AS id, g % 10 AS category, 'product ' || g AS name
		  FROM generate_series(0, $PRODUCTS - 1) g;

		CREATE TABLE lines AS
		  SELECT g::int8 AS id, (abs(hashint8(g)) % $ROWS)::int8 AS order_id, (g % 50)::int4 AS qty
		  FROM generate_series(1, $ROWS) g;
		CREATE TABLE orders AS
		  SELECT g::int8 AS id, g % 7 AS status, rpad('order ' || g, 40, '.') AS note
		  FROM generate_series(0, $ROWS - 1, 10) g;

		-- the probe-side rows that match, for the floors: the join of only them
		CREATE TABLE t_match AS SELECT id FROM t WHERE id IN (SELECT id FROM small);
		CREATE TABLE fact_match AS
		  SELECT f.* FROM fact f
		  WHERE f.date_id IN (SELECT id FROM dates WHERE year = 2020)
		    AND f.cust_id IN (SELECT id FROM customers WHERE region = 'EU')
		    AND f.prod_id IN (SELECT id FROM products WHERE category < 5);
		CREATE TABLE lines_match AS
		  SELECT l.* FROM lines l WHERE l.order_id IN (SELECT id FROM orders);

		VACUUM ANALYZE;
		SELECT pg_prewarm(c)
		  FROM unnest(ARRAY['t', 'small', 'fact', 'dates', 'customers', 'products',
		                    'lines', 'orders', 't_match', 'fact_match', 'lines_match']) c;
	SQL
}

# The filter stats of one run with the filter on, from EXPLAIN ANALYZE's text on
# standard input: "probe nodes|rows rejected|stopped|off|largest batches".
filter_stats() {
	awk '
		/Custom Scan \(AmqRuntimeFilter\)/ { probes++ }
		/Rows Rejected by Runtime Filter:/ { rejected += $NF }
		/Runtime Filter Stopped:/ { sub(/.*Stopped: /, ""); stopped = stopped (stopped ? "; " : "") $0 }
		/Runtime Filter Off:/ { sub(/.*Off: /, ""); off = off (off ? "; " : "") $0 }
		/Batches: [0-9]+/ { for (i = 1; i <= NF; i++) if ($i == "Batches:" && $(i + 1) + 0 > batches) batches = $(i + 1) + 0 }
		END { printf "%d|%d|%s|%s|%d\n", probes, rejected, stopped ? stopped : "no", off ? off : "no", batches }'
}

# same_result ROWS_SQL: the query's rows with the filter on and off, stored and
# compared with EXCEPT ALL both ways: "yes (N rows)", "NO (D rows differ)", or
# "n/a" when the plan with the setting on has no filter to test.
same_result() {
	local sql=$1 rows diff
	if ! run_psql -At -c "$ON" -c "EXPLAIN (COSTS OFF) $sql" | grep 'AmqRuntimeFilter)' >/dev/null; then
		echo "n/a (no filter in the plan)"
		return
	fi
	run_psql -q -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS jf_on, jf_off" \
		-c "$ON" -c "CREATE UNLOGGED TABLE jf_on AS $sql" \
		-c "$OFF" -c "CREATE UNLOGGED TABLE jf_off AS $sql"
	read -r rows diff < <(run_psql -q -At -F ' ' -c "SET work_mem = '256MB'" -c "
		SELECT (SELECT count(*) FROM jf_on),
		       (SELECT count(*) FROM (TABLE jf_on EXCEPT ALL TABLE jf_off) a)
		       + (SELECT count(*) FROM (TABLE jf_off EXCEPT ALL TABLE jf_on) b)")
	run_psql -q -c "DROP TABLE jf_on, jf_off"
	if [ "$diff" = 0 ]; then echo "yes ($rows rows)"; else echo "NO ($diff rows differ)"; fi
}

# bench_query NAME TARGET SQL ROWS_SQL [RECIPE [SCAN MATCHED]]: SQL off and on
# side by side, with RECIPE (the setting off) if not empty and the two parts of
# the floor if given, then its filter stats and whether its rows are the same.
# TARGET: "speedup X" (off / on >= X) or "slowdown X" (on / off <= X; measured
# again without EXPLAIN, for reference).  The floor: SCAN, the probe side's scan
# with a trivial qual on the key, plus MATCHED, the same join over a table of
# only the probe-side rows that match.
bench_query() {
	local name=$1 target=$2 sql=$3 rows_sql=$4 recipe=${5:-} scan=${6:-} matched=${7:-}
	local kind=${target% *} bound=${target#* } off on rec= flo= plain= floor_cells='| | |'
	local -a sqls=("$OFF $sql" "$ON $sql") ms=()
	local speedup met shown same stats probes rejected stopped filter_off batches
	[ -n "$recipe" ] && sqls+=("$OFF $recipe")
	[ -n "$scan" ] && sqls+=("$OFF $scan" "$OFF $matched")
	log "joinfilter: $name ($RUNS rounds)"
	mapfile -t ms < <(interleaved_ms "$RUNS" "${sqls[@]}")
	[ ${#ms[@]} -eq ${#sqls[@]} ] || die "$name: timings missing"
	off=${ms[0]}
	on=${ms[1]}
	[ -n "$recipe" ] && rec=${ms[2]}
	if [ -n "$scan" ]; then
		flo=$(awk -v a="${ms[${#ms[@]} - 2]}" -v b="${ms[${#ms[@]} - 1]}" 'BEGIN { printf "%.1f", a + b }')
		floor_cells="| ${ms[${#ms[@]} - 2]} + ${ms[${#ms[@]} - 1]} | $(ratio "$off" "$flo" 2) |"
	fi
	speedup=$(ratio "$off" "$on" 2)
	if [ "$kind" = speedup ]; then
		shown=">= ${bound}x faster"
		met=$(awk -v r="$speedup" -v b="$bound" 'BEGIN { print (r >= b) ? "yes" : "no" }')
		if [ -n "$rec" ]; then
			shown="$shown, on <= recipe"
			[ "$(awk -v a="$on" -v b="$rec" 'BEGIN { print (a <= b) ? 1 : 0 }')" = 1 ] || met=no
		fi
	else
		log "joinfilter: $name without EXPLAIN ($RUNS rounds)"
		mapfile -t ms < <(interleaved_ms --client "$RUNS" "$OFF $sql" "$ON $sql")
		[ ${#ms[@]} -eq 2 ] || die "$name: timings without EXPLAIN missing"
		plain="; without EXPLAIN ${ms[0]} / ${ms[1]} ms, $(ratio "${ms[1]}" "${ms[0]}" 3)"
		shown="on / off <= $bound ($(ratio "$on" "$off" 3)$plain)"
		met=$(awk -v a="$on" -v b="$off" -v t="$bound" 'BEGIN { print (a / b <= t) ? "yes" : "no" }')
	fi
	[ "$met" = yes ] || MISSED=$((MISSED + 1))
	stats=$(run_psql -At -c "$ON" -c "EXPLAIN (ANALYZE, TIMING OFF) $sql" | filter_stats)
	IFS='|' read -r probes rejected stopped filter_off batches <<<"$stats"
	same=$(same_result "$rows_sql")
	printf '%-24s off %10s ms  on %10s ms  off/on %s%s%s  target %s: %s  same: %s\n' \
		"$name" "$off" "$on" "$speedup" "${rec:+  recipe $rec ms}" "${flo:+  floor $flo ms}" \
		"$shown" "$met" "$same" >&2
	printf '%-24s probe nodes %s  rejected %s  stopped: %s  off: %s  batches: %s\n' \
		"" "$probes" "$rejected" "$stopped" "$filter_off" "$batches" >&2
	RESULT_ROWS+=("| $name | $off | $on | $speedup | $rec $floor_cells $shown | $met | $same |")
	FILTER_ROWS+=("| $name | \`$sql\` | $probes | $rejected | $stopped | $filter_off | $batches |")
	[ -z "$scan" ] || FLOOR_ROWS+=("| $name | \`$scan\` | \`$matched\` |")
}

bench_all() {
	local bloom="(SELECT bloom_agg(id, $((ROWS / 10)), 0.01) FROM small)"
	local star="JOIN dates d ON d.id = f.date_id"
	local order="JOIN orders o ON o.id = l.order_id"
	local ninety="fact f JOIN products p ON p.id = f.prod_id WHERE p.category <> 0"
	star+=" JOIN customers c ON c.id = f.cust_id JOIN products p ON p.id = f.prod_id"
	star+=" WHERE d.year = 2020 AND c.region = 'EU' AND p.category < 5"

	bench_query "semi-join" "speedup 1.4" \
		"SELECT count(*) FROM t WHERE t.id IN (SELECT id FROM small)" \
		"SELECT t.id FROM t WHERE t.id IN (SELECT id FROM small)" \
		"SELECT count(*) FROM t WHERE $bloom @> t.id AND t.id IN (SELECT id FROM small)" \
		"SELECT count(*) FROM t WHERE t.id <> -1" \
		"SELECT count(*) FROM t_match t WHERE t.id IN (SELECT id FROM small)"
	bench_query "inner join" "speedup 1.4" \
		"SELECT count(*) FROM t JOIN small s USING (id)" \
		"SELECT t.id, s.id AS small_id FROM t JOIN small s USING (id)" \
		"SELECT count(*) FROM t JOIN small s USING (id) WHERE $bloom @> t.id" \
		"SELECT count(*) FROM t WHERE t.id <> -1" \
		"SELECT count(*) FROM t_match t JOIN small s USING (id)"
	bench_query "star join" "speedup 2" \
		"SELECT count(*), sum(f.amount) FROM fact f $star" \
		"SELECT f.id, d.id AS d, c.id AS c, p.id AS p FROM fact f $star" "" \
		"SELECT count(*) FROM fact f WHERE f.date_id <> -1" \
		"SELECT count(*), sum(f.amount) FROM fact_match f $star"
	bench_query "spilling join" "speedup 1.5" \
		"SELECT count(*), sum(l.qty), max(o.note) FROM lines l $order" \
		"SELECT l.id, o.id AS order_id, o.note FROM lines l $order" "" \
		"SELECT count(*) FROM lines l WHERE l.order_id <> -1" \
		"SELECT count(*), sum(l.qty), max(o.note) FROM lines_match l $order"
	bench_query "90% matching" "slowdown 1.03" \
		"SELECT count(*) FROM $ninety" \
		"SELECT f.id, p.id AS p FROM $ninety"
}

write_results() {
	{
		results_provenance bench/joinfilter.sh
		echo "- PostgreSQL: $(run_psql -At -c 'SHOW server_version')"
		echo
		echo "\`amqfilter.join_filter\` off against on, the library in"
		echo "session_preload_libraries, the other settings at their defaults. One core"
		echo "per query, JIT off, work_mem 4 MB, statement_timeout $TIMEOUT_S s. Times are"
		echo "the median of $RUNS rounds of EXPLAIN (ANALYZE, TIMING OFF)'s \"Execution"
		echo "Time\" in ms, each round running every form of a query once (after a"
		echo "warm-up round). t has $ROWS int8 rows, small every 10th (10% of t"
		echo "matches); fact $ROWS rows against dates ($DAYS, one year kept), customers"
		echo "($CUSTOMERS, one region of five) and products ($PRODUCTS, half the"
		echo "categories): 1% of fact survives; lines $ROWS rows against orders"
		echo "($((ROWS / 10)) rows with a 40-byte note, 10% of lines match); the 90%"
		echo "query joins fact to the products of nine categories of ten. Ratio: off /"
		echo "on (above 1, the filter pays). Recipe: bench/joins.sh's hand-written filter"
		echo "(\`bloom_agg(id, $((ROWS / 10)), 0.01)\` of small in the query), the setting"
		echo "off. Same result: the query's rows (its join without the aggregate), stored"
		echo "with the setting on and off, compared with EXCEPT ALL both ways. The 90%"
		echo "query is timed again without EXPLAIN (psql's \\timing, $RUNS rounds the same"
		echo "way): EXPLAIN ANALYZE's instrumentation costs every plan node, the filter's"
		echo "too, two function calls a row; the target is judged on the EXPLAIN times."
		echo
		echo "| query | off ms | on ms | ratio | recipe ms | floor ms: scan + matching rows' join | off / floor | target | met | same result |"
		echo "|---|---:|---:|---:|---:|---:|---:|---|---|---|"
		printf '%s\n' "${RESULT_ROWS[@]}"
		echo
		echo "Floor: what any filter tested above the probe side's scan must still do,"
		echo "measured in the same rounds, in two parts: the scan with a trivial qual on"
		echo "the join key (reading that column of every probe-side row), and the same"
		echo "join over a table of only the probe-side rows that match (the join the"
		echo "filter leaves, without its false positives). Off / floor is the most such"
		echo "a filter could gain, were its own test free."
		echo
		echo "| query | scan | matching rows' join |"
		echo "|---|---|---|"
		printf '%s\n' "${FLOOR_ROWS[@]}"
		echo
		echo "### What the filters did"
		echo
		echo "From one EXPLAIN (ANALYZE, TIMING OFF) with the setting on: the probe"
		echo "nodes (AmqRuntimeFilter) in the plan, the rows they rejected together,"
		echo "whether one stopped testing (it rejected less than"
		echo "amqfilter.join_filter_min_rejected of its first 65,536 rows) or was off"
		echo "(more keys than amqfilter.join_filter_max_keys), and the most batches of"
		echo "a hash join in the plan (above 1: it spilled)."
		echo
		echo "| query | SQL | probe nodes | rows rejected | stopped | off | batches |"
		echo "|---|---|---:|---:|---|---|---:|"
		printf '%s\n' "${FILTER_ROWS[@]}"
	} | results_replace_section "$RESULTS_FILE" "$SECTION"
}

main() {
	local start=$SECONDS
	bench_build_and_install
	start_cluster "max_parallel_workers_per_gather = 0" "jit = off" \
		"shared_buffers = '2GB'" "work_mem = '4MB'" "statement_timeout = '${TIMEOUT_S}s'" \
		"session_preload_libraries = 'amqfilter'"
	load
	bench_all
	write_results
	stop_cluster
	echo
	results_section "$RESULTS_FILE" "$SECTION"
	echo "joinfilter bench: done in $((SECONDS - start))s, $MISSED target(s) missed;" \
		"results written to ${RESULTS_FILE#"$AMQ_ROOT"/}"
}

main "$@"
