#!/usr/bin/env bash
# bench/shapes.sh: query shapes a newcomer writes against stored filters, each
# next to the fast form an expert would write instead.
#
#   sudo bash bench/shapes.sh
#
# Builds and installs the extension (unless AMQ_BENCH_SKIP_BUILD=1), starts a
# throwaway PostgreSQL 15 cluster (one core per query, JIT off, work_mem at its
# default of 4 MB, every statement under a 60 s statement_timeout: a query that
# would run longer is reported as a timeout, never waited for) and loads
# events, $AMQ_SHAPES_ROWS rows of a user_id among twice as many users, and
# filters, two bloom and two cuckoo filters of $AMQ_SHAPES_KEYS keys each at
# p = 1% (the even and the odd user ids), stored out of line; vip_filter holds
# a copy of the first.  Measures, each shape and its fast form side by side
# (interleaved_ms: in rounds, each query once a round):
#
#   join       events JOIN filters ON filters.f @> events.user_id, grouped by
#              filter: a nested loop that hands one call site the two filters in
#              turn, row after row; fast form: a LATERAL subquery per filter,
#              which probes one filter after the other.  Target: <= 2x.
#   function   a SQL function that is not inlined (STABLE, with a FROM), and the
#              same in PL/pgSQL, called per row in WHERE: a new executor per call;
#              fast form: the probe written inline.  Target: <= 2x where the
#              function call itself allows it: its floor, the same function with
#              the probe replaced by a plain comparison, is measured too, and the
#              function against its floor is what amqfilter adds.
#
# Times are medians of RUNS rounds (default 5) of EXPLAIN (ANALYZE, TIMING
# OFF)'s "Execution Time" in ms, each round running a shape and its fast form
# once, after a warm-up round.  Writes the
# "Query shapes" section of bench/RESULTS.md (bench/run.sh keeps it).
#
# Environment: RUNS; AMQ_SHAPES_ROWS (rows of events, default 1000000);
# AMQ_SHAPES_KEYS (keys of each filter, default 1000000); AMQ_BENCH_SKIP_BUILD=1
# to measure the installed extension.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

RUNS=${RUNS:-5}
ROWS=${AMQ_SHAPES_ROWS:-1000000}
KEYS=${AMQ_SHAPES_KEYS:-1000000}
TIMEOUT_S=60
TARGET=2
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md
SECTION='## Query shapes: a join to a table of filters, a probe in a function'
SHAPE_ROWS=()

for v in RUNS ROWS KEYS; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -ge 1 ] || die "$v must be a whole number >= 1"
done

load() {
	log "shapes: loading events ($ROWS rows), filters of $KEYS keys"
	run_psql -q >/dev/null <<-SQL
		CREATE EXTENSION amqfilter;
		CREATE EXTENSION pg_prewarm;
		CREATE TABLE events AS
		  SELECT g AS id, (g::bigint * 7919 % ($KEYS * 2))::bigint AS user_id
		    FROM generate_series(1, $ROWS) g;
		CREATE TABLE filters (id int PRIMARY KEY, f bloom, c cuckoo);
		INSERT INTO filters
		  SELECT 1, bloom_agg(2 * g, $KEYS, 0.01), cuckoo_agg(2 * g, $KEYS, 0.01)
		    FROM generate_series(1::bigint, $KEYS) g;
		INSERT INTO filters
		  SELECT 2, bloom_agg(2 * g - 1, $KEYS, 0.01), cuckoo_agg(2 * g - 1, $KEYS, 0.01)
		    FROM generate_series(1::bigint, $KEYS) g;
		CREATE TABLE vip_filter AS SELECT f FROM filters WHERE id = 1;
		CREATE FUNCTION is_vip(bigint) RETURNS boolean LANGUAGE sql STABLE
		  AS \$\$ SELECT f @> \$1 FROM vip_filter \$\$;
		CREATE FUNCTION is_vip_pl(bigint) RETURNS boolean LANGUAGE plpgsql STABLE
		  AS \$\$ BEGIN RETURN (SELECT f @> \$1 FROM vip_filter); END \$\$;
		-- the floors: the same calls, the probe replaced by a plain comparison
		CREATE FUNCTION is_odd(bigint) RETURNS boolean LANGUAGE sql STABLE
		  AS \$\$ SELECT f IS NOT NULL AND \$1 % 2 = 1 FROM vip_filter \$\$;
		CREATE FUNCTION is_odd_pl(bigint) RETURNS boolean LANGUAGE plpgsql STABLE
		  AS \$\$ BEGIN RETURN (SELECT f IS NOT NULL AND \$1 % 2 = 1 FROM vip_filter); END \$\$;
		VACUUM ANALYZE;
		SELECT pg_prewarm(c) FROM unnest(ARRAY['events', 'filters', 'vip_filter']) c;
	SQL
	run_psql -At -c "SELECT 'filter bytes, stored: ' || string_agg(id || ': bloom ' || pg_column_size(f) || ', cuckoo ' || pg_column_size(c), '; ' ORDER BY id) FROM filters" >&2
}

# exec_or_timeout SQL: exec_ms, or "timeout" when SQL ran past the
# statement_timeout; any other error stops the script.
exec_or_timeout() {
	local out ms
	if ! out=$(run_psql -At -c "EXPLAIN (ANALYZE, TIMING OFF) $1" 2>&1); then
		grep -q 'statement timeout' <<<"$out" || die "failed: $1: $out"
		echo timeout
		return
	fi
	ms=$(sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p' <<<"$out")
	[ -n "$ms" ] || die "no execution time reported for: $1"
	echo "$ms"
}

# shape_row NAME SHAPE FAST [TARGET]: both timed side by side (a warm-up
# round, then RUNS rounds running each once; a query that once ran past the
# statement_timeout is not run again and shows as a timeout), their results
# compared (unless TARGET is "floor": the fast side is another query), a row
# recorded
shape_row() {
	local name=$1 shape=$2 fast=$3 target=${4:-$TARGET} s= f= r same within i t
	local st=() ft=()
	for ((i = 0; i <= RUNS; i++)); do
		if [ "$s" != timeout ]; then
			t=$(exec_or_timeout "$shape")
			if [ "$t" = timeout ]; then s=timeout; elif [ "$i" -gt 0 ]; then st+=("$t"); fi
		fi
		if [ "$f" != timeout ]; then
			t=$(exec_or_timeout "$fast")
			if [ "$t" = timeout ]; then f=timeout; elif [ "$i" -gt 0 ]; then ft+=("$t"); fi
		fi
	done
	[ "$s" = timeout ] || s=$(printf '%s\n' "${st[@]}" | median)
	[ "$f" = timeout ] || f=$(printf '%s\n' "${ft[@]}" | median)
	r=$(ratio "$s" "$f" 2)
	if [ "$target" = floor ]; then
		same="(another query)"
		within=
		target="-"
	else
		if [ "$s" = timeout ] || [ "$f" = timeout ]; then
			same="n/a"
		else
			same=$([ "$(run_psql -At -c "$shape")" = "$(run_psql -At -c "$fast")" ] && echo yes || echo NO)
		fi
		within=$(awk -v r="$r" -v t="$target" 'BEGIN { print (r != "n/a" && r <= t) ? "yes" : "no" }')
		target="<= $target"
	fi
	printf '%-44s %10s ms  fast form %10s ms  ratio %s  same result %s\n' \
		"$name" "$s" "$f" "$r" "$same" >&2
	SHAPE_ROWS+=("| $name | \`$shape\` | $(shown_ms "$s") | \`$fast\` | $(shown_ms "$f") | $r | $target | $within | $same |")
}

bench_shapes() {
	local inline="SELECT count(*) FROM events e WHERE (SELECT f FROM vip_filter) @> e.user_id"
	log "shapes: $RUNS rounds each"
	shape_row "join to 2 stored bloom filters" \
		"SELECT fl.id, count(*) FROM events e JOIN filters fl ON fl.f @> e.user_id GROUP BY fl.id ORDER BY 1" \
		"SELECT fl.id, c.n FROM filters fl, LATERAL (SELECT count(*) n FROM events e WHERE fl.f @> e.user_id) c ORDER BY 1"
	shape_row "join to 2 stored cuckoo filters" \
		"SELECT fl.id, count(*) FROM events e JOIN filters fl ON fl.c @> e.user_id GROUP BY fl.id ORDER BY 1" \
		"SELECT fl.id, c.n FROM filters fl, LATERAL (SELECT count(*) n FROM events e WHERE fl.c @> e.user_id) c ORDER BY 1"
	shape_row "SQL function per row, not inlined" \
		"SELECT count(*) FROM events e WHERE is_vip(e.user_id)" "$inline"
	shape_row "PL/pgSQL function per row" \
		"SELECT count(*) FROM events e WHERE is_vip_pl(e.user_id)" "$inline"
	shape_row "SQL function vs its floor (no probe)" \
		"SELECT count(*) FROM events e WHERE is_vip(e.user_id)" \
		"SELECT count(*) FROM events e WHERE is_odd(e.user_id)" floor
	shape_row "PL/pgSQL function vs its floor (no probe)" \
		"SELECT count(*) FROM events e WHERE is_vip_pl(e.user_id)" \
		"SELECT count(*) FROM events e WHERE is_odd_pl(e.user_id)" floor
}

write_results() {
	{
		results_provenance bench/shapes.sh
		echo
		echo "events has $ROWS rows; filters two bloom and two cuckoo filters of $KEYS keys"
		echo "at p = 1%, stored out of line ($(run_psql -At -c "SELECT pg_size_pretty(max(pg_column_size(f))::bigint) || ' and ' || pg_size_pretty(max(pg_column_size(c))::bigint) FROM filters")"
		echo "each); vip_filter a copy of the first bloom filter. One core per"
		echo "query, JIT off, work_mem 4 MB (the default: the transaction's cache of"
		echo "stored filters holds up to hash_mem, 8 MB), statement_timeout $TIMEOUT_S s. Times"
		echo "are the median of $RUNS rounds of EXPLAIN (ANALYZE, TIMING OFF)'s \"Execution"
		echo "Time\" in ms, each round running the shape and its fast form once. Ratio:"
		echo "shape / fast form. The floor rows compare a function with the same"
		echo "function whose probe is replaced by a plain comparison: what a call"
		echo "costs without amqfilter, which no caching can remove."
		echo
		echo "| shape | query | ms | fast form | ms | ratio | target | within target | same result |"
		echo "|---|---|---:|---|---:|---:|---|---|---|"
		printf '%s\n' "${SHAPE_ROWS[@]}"
	} | results_replace_section "$RESULTS_FILE" "$SECTION"
}

main() {
	local start=$SECONDS
	bench_build_and_install
	start_cluster "max_parallel_workers_per_gather = 0" "jit = off" \
		"shared_buffers = '1GB'" "work_mem = '4MB'" "statement_timeout = '${TIMEOUT_S}s'"
	load
	bench_shapes
	write_results
	stop_cluster
	echo
	results_section "$RESULTS_FILE" "$SECTION"
	echo "shapes bench: done in $((SECONDS - start))s; results written to ${RESULTS_FILE#"$AMQ_ROOT"/}"
}

main "$@"
