#!/usr/bin/env bash
# bench/joins.sh: the join recipes of the README against the plain queries, the
# cost of building a filter against count() and hll, merges of the same inputs,
# and the planner's estimates against the actual rows, measured in one run.
#
#   sudo bash bench/joins.sh
#
# Builds and installs the extension (unless AMQ_BENCH_SKIP_BUILD=1), installs
# Debian's postgresql-15-hll when its extension is missing (as root), starts a
# throwaway PostgreSQL 15 cluster (one core per query, JIT off, work_mem at its
# default of 4 MB, statement_timeout 60 s: a query that would run longer is
# reported as a timeout, never waited for) and loads t, $AMQ_JOINS_ROWS int8 rows
# (default 10M), and small, every 10th of them (10% of t matches; small_indexed
# is the same with a unique index).  Filters of small are at p = 1%.  Measures:
#
#   joins      semi-join, inner join and anti-join (with and without an index on
#              the build side): the README's recipe vs the plain query; for the
#              semi-join also the limits it cannot beat (the scan alone with a
#              trivial qual, and the plain join of only the rows the filter passes)
#   build      bloom_agg and cuckoo_agg vs count(col) and vs
#              hll_add_agg(hll_hash_bigint(col))
#   merge      a merge of two aggregates pulled up into a scan of 100k rows, vs the
#              same merge computed once (OFFSET 0)
#   estimates  rows the planner expects through filter @> col, for a filter known at
#              plan time (a literal) and one known only at run time (a subquery),
#              next to the actual rows
#
# Each time is the median of RUNS (default 3) runs of EXPLAIN (ANALYZE, TIMING
# OFF)'s "Execution Time" after a warm-up run.  A recipe and its plain query, and
# the builds, are measured side by side (interleaved_ms: in rounds, each query
# once a round), so that drift in the machine's speed reaches both sides of a
# ratio; a statement timeout there stops the run.  Writes the "Joins, builds and
# estimates" section of bench/RESULTS.md (bench/run.sh keeps it).
#
# Environment: RUNS; AMQ_JOINS_ROWS (rows of t, default 10000000); AMQ_JOINS_PARTS,
# the parts to run (default "joins build merge estimates"); AMQ_BENCH_SKIP_BUILD=1
# to use the installed extension.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

RUNS=${RUNS:-3}
ROWS=${AMQ_JOINS_ROWS:-10000000}
SMALL=$((ROWS / 10))
MERGE_ROWS=100000
TIMEOUT_S=60
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md
SECTION='## Joins, builds and estimates'
PARTS=${AMQ_JOINS_PARTS:-joins build merge estimates}
JOIN_ROWS=()
BUILD_ROWS=()
MERGE_ROWS_OUT=()
ESTIMATE_ROWS=()

[[ $ROWS =~ ^[0-9]+$ ]] && [ "$ROWS" -ge 1000 ] || die "AMQ_JOINS_ROWS must be a whole number >= 1000"

load() {
	log "joins: loading t ($ROWS rows), small ($SMALL)"
	run_psql -q >/dev/null <<-SQL
		CREATE EXTENSION amqfilter;
		CREATE EXTENSION hll;
		CREATE EXTENSION pg_prewarm;
		CREATE TABLE t AS SELECT g::int8 AS id FROM generate_series(1, $ROWS) g;
		CREATE TABLE small AS SELECT id FROM t WHERE id % 10 = 0;
		CREATE TABLE small_indexed AS SELECT id FROM small;
		CREATE UNIQUE INDEX ON small_indexed (id);
		-- the rows of t the filter of small lets through, for the semi-join's limit
		CREATE TABLE passed AS
		  SELECT id FROM t WHERE (SELECT bloom_agg(id, $SMALL, 0.01) FROM small) @> id;
		CREATE TABLE nums AS SELECT g::int8 AS b FROM generate_series(1, $MERGE_ROWS) g;
		CREATE TABLE filters AS
		  SELECT bloom_agg(id, $SMALL, 0.01) AS b, cuckoo_agg(id, $SMALL, 0.01) AS c FROM small;
		VACUUM ANALYZE;
		SELECT pg_prewarm(c) FROM unnest(ARRAY['t', 'small', 'small_indexed', 'passed', 'nums']) c;
	SQL
}

time_ms() {
	timed_ms "$RUNS" "$1"
}

# join_row NAME RECIPE PLAIN [nocompare]: both timed side by side, their counts compared
# (unless nocompare: a limit is another query), a row recorded
join_row() {
	local name=$1 recipe=$2 plain=$3 compare=${4:-compare} r p same
	local -a ms=()
	mapfile -t ms < <(interleaved_ms "$RUNS" "$recipe" "$plain")
	[ ${#ms[@]} -eq 2 ] || die "$name: timings missing (a statement timeout?)"
	r=${ms[0]}
	p=${ms[1]}
	if [ "$compare" = nocompare ]; then
		same="(another query)"
	elif [ "$r" != timeout ] && [ "$p" != timeout ]; then
		same=$([ "$(run_psql -At -c "$recipe")" = "$(run_psql -At -c "$plain")" ] && echo yes || echo NO)
	else
		same="n/a"
	fi
	printf '%-32s recipe %12s ms  plain %12s ms  plain/recipe %s  same count %s\n' \
		"$name" "$r" "$p" "$(ratio "$p" "$r" 2)" "$same" >&2
	JOIN_ROWS+=("| $name | \`$recipe\` | $(shown_ms "$r") | \`$plain\` | $(shown_ms "$p") | $(ratio "$p" "$r" 2) | $same |")
}

bench_joins() {
	local f="(SELECT bloom_agg(id, $SMALL, 0.01) FROM small)"
	local fi="(SELECT bloom_agg(id, $SMALL, 0.01) FROM small_indexed)"
	log "joins: semi, inner and anti-joins"
	join_row "semi-join" \
		"SELECT count(*) FROM t WHERE $f @> t.id AND t.id IN (SELECT id FROM small)" \
		"SELECT count(*) FROM t WHERE t.id IN (SELECT id FROM small)"
	join_row "inner join" \
		"SELECT count(*) FROM t JOIN small s USING (id) WHERE $f @> t.id" \
		"SELECT count(*) FROM t JOIN small s USING (id)"
	join_row "anti-join, no index" \
		"SELECT count(*) FROM t WHERE NOT EXISTS (SELECT 1 FROM small s WHERE s.id = CASE WHEN $f @> t.id THEN t.id END)" \
		"SELECT count(*) FROM t WHERE NOT EXISTS (SELECT 1 FROM small s WHERE s.id = t.id)"
	join_row "anti-join, small(id) indexed" \
		"SELECT count(*) FROM t WHERE NOT EXISTS (SELECT 1 FROM small_indexed s WHERE s.id = CASE WHEN $fi @> t.id THEN t.id END)" \
		"SELECT count(*) FROM t WHERE NOT EXISTS (SELECT 1 FROM small_indexed s WHERE s.id = t.id)"
	join_row "anti-join, OR NOT EXISTS (0.1 recipe), indexed" \
		"SELECT count(*) FROM t WHERE NOT ($fi @> t.id) OR NOT EXISTS (SELECT 1 FROM small_indexed s WHERE s.id = t.id)" \
		"SELECT count(*) FROM t WHERE NOT EXISTS (SELECT 1 FROM small_indexed s WHERE s.id = t.id)"
	# what the semi-join recipe cannot beat: its scan alone, and the join of the
	# rows that pass the filter
	join_row "semi-join limit: scan, trivial qual" \
		"SELECT count(*) FROM t WHERE id <> -1" \
		"SELECT count(*) FROM t WHERE t.id IN (SELECT id FROM small)" nocompare
	join_row "semi-join limit: join of passed rows" \
		"SELECT count(*) FROM passed WHERE id IN (SELECT id FROM small)" \
		"SELECT count(*) FROM t WHERE t.id IN (SELECT id FROM small)" nocompare
}

# The builds side by side (interleaved_ms): a round runs count, hll and every
# filter's aggregate once, so that drift in the machine's speed reaches all.
bench_builds() {
	local -a sqls=("SELECT count(id) FROM t" "SELECT hll_add_agg(hll_hash_bigint(id)) FROM t")
	local -a ms=()
	local count hll i q
	local filters=("bloom_agg(id, $ROWS, 0.01)" "bloom_agg(id, $ROWS, 0.01, 'classic')" "cuckoo_agg(id, $ROWS, 0.01)")
	log "joins: builds vs count and hll ($RUNS rounds)"
	for q in "${filters[@]}"; do
		sqls+=("SELECT $q FROM t")
	done
	mapfile -t ms < <(interleaved_ms "$RUNS" "${sqls[@]}")
	[ ${#ms[@]} -eq ${#sqls[@]} ] || die "build timings missing"
	count=${ms[0]}
	hll=${ms[1]}
	BUILD_ROWS+=("| \`SELECT count(id) FROM t\` | $(shown_ms "$count") | 1.00 | |")
	BUILD_ROWS+=("| \`SELECT hll_add_agg(hll_hash_bigint(id)) FROM t\` | $(shown_ms "$hll") | $(ratio "$hll" "$count" 2) | 1.00 |")
	i=2
	for q in "${filters[@]}"; do
		printf '%-40s %12s ms  vs count %s  vs hll %s\n' "$q" "${ms[i]}" "$(ratio "${ms[i]}" "$count" 2)" "$(ratio "${ms[i]}" "$hll" 2)" >&2
		BUILD_ROWS+=("| \`SELECT $q FROM t\` | $(shown_ms "${ms[i]}") | $(ratio "${ms[i]}" "$count" 2) | $(ratio "${ms[i]}" "$hll" 2) |")
		i=$((i + 1))
	done
}

bench_merge() {
	local a="(SELECT cuckoo_agg(id, $SMALL, 0.01) FROM small WHERE id <= $((ROWS / 2)))"
	local b="(SELECT cuckoo_agg(id, $SMALL, 0.01) FROM small WHERE id > $((ROWS / 2)))"
	local ba="(SELECT bloom_agg(id, $SMALL, 0.01) FROM small WHERE id <= $((ROWS / 2)))"
	local bb="(SELECT bloom_agg(id, $SMALL, 0.01) FROM small WHERE id > $((ROWS / 2)))"
	local pulled once aggs
	log "joins: merges of the same inputs"
	aggs=$(time_ms "SELECT cuckoo_union($a, $b) IS NULL")
	pulled=$(time_ms "SELECT count(*) FROM nums, (SELECT cuckoo_union($a, $b) f) u WHERE cuckoo_contains(f, b)")
	once=$(time_ms "SELECT count(*) FROM nums, (SELECT cuckoo_union($a, $b) f OFFSET 0) u WHERE cuckoo_contains(f, b)")
	printf '%-40s aggregates %s ms  pulled up %s ms  once %s ms\n' cuckoo_union "$aggs" "$pulled" "$once" >&2
	MERGE_ROWS_OUT+=("| cuckoo_union | $(shown_ms "$aggs") | $(shown_ms "$pulled") | $(shown_ms "$once") | $(ratio "$pulled" "$once" 2) |")
	aggs=$(time_ms "SELECT ($ba | $bb) IS NULL")
	pulled=$(time_ms "SELECT count(*) FROM nums, (SELECT $ba | $bb f) u WHERE f @> b")
	once=$(time_ms "SELECT count(*) FROM nums, (SELECT $ba | $bb f OFFSET 0) u WHERE f @> b")
	printf '%-40s aggregates %s ms  pulled up %s ms  once %s ms\n' 'bloom |' "$aggs" "$pulled" "$once" >&2
	MERGE_ROWS_OUT+=("| bloom \`\\|\` | $(shown_ms "$aggs") | $(shown_ms "$pulled") | $(shown_ms "$once") | $(ratio "$pulled" "$once" 2) |")
}

# estimate_row NAME SQL: planned rows of SQL's top plan node next to its count
estimate_row() {
	local name=$1 sql=$2 est actual
	# on standard input: a filter literal is longer than one argument may be
	# (awk reads to the end: psql must not die of a closed pipe)
	est=$(run_psql -At <<<"EXPLAIN (FORMAT JSON) $sql" | awk '/"Plan Rows"/ && !done { gsub(/[^0-9]/, ""); print; done = 1 }')
	actual=$(run_psql -At <<<"SELECT count(*) FROM ($sql) q")
	printf '%-40s estimated %10s  actual %10s\n' "$name" "$est" "$actual" >&2
	ESTIMATE_ROWS+=("| $name | $est | $actual | $(ratio "$est" "$actual" 2) |")
}

bench_estimates() {
	local bloom cuckoo
	log "joins: planner estimates"
	bloom=$(run_psql -At -c "SELECT b::text FROM filters")
	cuckoo=$(run_psql -At -c "SELECT c::text FROM filters")
	estimate_row "bloom, known at plan time (literal)" "SELECT id FROM t WHERE '$bloom'::bloom @> id"
	estimate_row "cuckoo, known at plan time (literal)" "SELECT id FROM t WHERE '$cuckoo'::cuckoo @> id"
	estimate_row "bloom, known at run time (subquery)" "SELECT id FROM t WHERE (SELECT b FROM filters) @> id"
}

write_results() {
	{
		results_provenance bench/joins.sh
		echo "- Parts measured (AMQ_JOINS_PARTS): $PARTS"
		echo
		echo "t has $ROWS int8 rows, small every 10th of them (10% of t matches),"
		echo "small_indexed the same with a unique index; filters of small at p = 1%. One"
		echo "core per query, JIT off, work_mem 4 MB (the default), statement_timeout"
		echo "$TIMEOUT_S s. Times are the median of $RUNS runs of EXPLAIN (ANALYZE, TIMING OFF)'s"
		echo "\"Execution Time\" in ms, after a warm-up run."
		if [ ${#JOIN_ROWS[@]} -gt 0 ]; then
			echo
			echo "### Joins: the README's recipes vs the plain queries"
			echo
			echo "Speedup is plain / recipe (above 1: the recipe pays). Same count: both"
			echo "queries return the same count. The two \"limit\" rows are what the semi-join"
			echo "recipe cannot beat: the scan of t with a trivial qual, and the plain semi-join"
			echo "of only the rows the filter lets through ($(run_psql -At -c 'SELECT count(*) FROM passed') rows)."
			echo
			echo "| query | recipe | ms | plain | ms | speedup | same count |"
			echo "|---|---|---:|---|---:|---:|---|"
			printf '%s\n' "${JOIN_ROWS[@]}"
		fi
		if [ ${#BUILD_ROWS[@]} -gt 0 ]; then
			echo
			echo "### Building a filter vs count() and hll"
			echo
			echo "Measured side by side: the median of $RUNS rounds, each running every query"
			echo "of the table once (after one warm-up round)."
			echo
			echo "| query | ms | / count | / hll |"
			echo "|---|---:|---:|---:|"
			printf '%s\n' "${BUILD_ROWS[@]}"
		fi
		if [ ${#MERGE_ROWS_OUT[@]} -gt 0 ]; then
			echo
			echo "### A merge of the same inputs on every row"
			echo
			echo "\`SELECT count(*) FROM nums, (SELECT cuckoo_union(A, B) f) u WHERE"
			echo "cuckoo_contains(f, b)\` over $MERGE_ROWS rows, A and B filters of the two"
			echo "halves of small (aggregates in scalar subqueries); the planner pulls the"
			echo "subquery up, so the merge sits in the scan. \"Computed once\" adds OFFSET 0,"
			echo "which keeps the subquery and computes the merge once. Aggregates: the two"
			echo "aggregates and the merge alone."
			echo
			echo "| merge | ms, aggregates and merge | ms, pulled up | ms, computed once | pulled / once |"
			echo "|---|---:|---:|---:|---:|"
			printf '%s\n' "${MERGE_ROWS_OUT[@]}"
		fi
		if [ ${#ESTIMATE_ROWS[@]} -gt 0 ]; then
			echo
			echo "### Planner estimates of filter @> col"
			echo
			echo "Rows estimated for \`SELECT id FROM t WHERE f @> id\`, f the filter of small."
			echo
			echo "| filter | estimated rows | actual rows | estimated / actual |"
			echo "|---|---:|---:|---:|"
			printf '%s\n' "${ESTIMATE_ROWS[@]}"
		fi
	} | results_replace_section "$RESULTS_FILE" "$SECTION"
}

main() {
	local start=$SECONDS part
	bench_build_and_install
	ensure_hll
	start_cluster "max_parallel_workers_per_gather = 0" "jit = off" \
		"shared_buffers = '2GB'" "work_mem = '4MB'" "statement_timeout = '${TIMEOUT_S}s'"
	load
	for part in $PARTS; do
		case $part in
			joins) bench_joins ;;
			build) bench_builds ;;
			merge) bench_merge ;;
			estimates) bench_estimates ;;
			*) die "unknown part '$part' in AMQ_JOINS_PARTS" ;;
		esac
	done
	write_results
	stop_cluster
	echo
	results_section "$RESULTS_FILE" "$SECTION"
	echo "joins bench: done in $((SECONDS - start))s; results written to ${RESULTS_FILE#"$AMQ_ROOT"/}"
}

main "$@"
