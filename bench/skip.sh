#!/usr/bin/env bash
# bench/skip.sh: lookups in a table of many partitions, the amqfilter index
# (which skips the partitions it rules out) against a btree on the same data,
# in one run.
#
#   sudo bash bench/skip.sh
#
# Builds and installs the extension (unless AMQ_BENCH_SKIP_BUILD=1), starts a
# throwaway cluster (JIT off, statement_timeout 60 s: a query that would run
# longer is a timeout, never waited for) and loads two tables of the same
# rows, ev_amq and ev_bt (day date, trace_id int8, payload text),
# range-partitioned by day into $PARTS daily partitions of $PART_ROWS rows,
# every trace_id once; ev_amq has an amqfilter index on trace_id, ev_bt a
# btree.  It measures, alternating the two tables for $ROUNDS rounds
# (medians):
#
#   absent, present  SELECT * FROM ev WHERE trace_id = ... as a client waits
#                    for it (pgbench, one client, a random key each time:
#                    parse, plan, run), with a literal (planned each time)
#                    and prepared under plan_cache_mode = auto (the plan
#                    cache's own choice, reported);
#   nested loop      $JOIN_KEYS keys (half present) joined to ev as a nested
#                    loop (other joins off), each outer key a rescan;
# and the planning and execution times of one absent lookup (EXPLAIN
# ANALYZE), and the partitions EXPLAIN lists.
#
# Replaces (or appends) the "Filter index: skipping partitions" section of
# bench/RESULTS.md.
#
# Environment:
#   AMQ_PARTS=365, AMQ_PART_ROWS=10000, AMQ_JOIN_KEYS=100  sizes
#   AMQ_SECONDS_EACH=3     seconds of each pgbench measurement
#   AMQ_ROUNDS=5           rounds, alternated
#   AMQ_BENCH_SKIP_BUILD=1 use the installed extension
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

PARTS=${AMQ_PARTS:-365}
PART_ROWS=${AMQ_PART_ROWS:-10000}
JOIN_KEYS=${AMQ_JOIN_KEYS:-100}
SECONDS_EACH=${AMQ_SECONDS_EACH:-3}
ROUNDS=${AMQ_ROUNDS:-5}
TIMEOUT_S=60
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md
SECTION='## Filter index: skipping partitions'
TOTAL=$((PARTS * PART_ROWS))
# trace_id of row g: (g * MULT) mod PRIME, distinct, in 1 .. PRIME - 1
PRIME=1000000007
MULT=2654435761

for v in PARTS PART_ROWS JOIN_KEYS SECONDS_EACH ROUNDS; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -ge 1 ] || die "$v must be a whole number >= 1"
done

bench_build_and_install
start_cluster "jit = off" "statement_timeout = '${TIMEOUT_S}s'" \
	"shared_buffers = '1GB'" "max_wal_size = '8GB'" "checkpoint_timeout = '1h'" \
	"max_locks_per_transaction = 1024" \
	"session_preload_libraries = 'amqfilter'"
q() { run_psql -q -At "$@"; }

log "load: $PARTS partitions of $PART_ROWS rows, twice"
q -c "CREATE EXTENSION amqfilter"
for t in ev_amq ev_bt; do
	# the partitions are unlogged; the parent holds no rows (18 refuses
	# UNLOGGED on it, which 15 and 17 ignored)
	q -c "CREATE TABLE $t (day date NOT NULL, trace_id int8 NOT NULL, payload text)
		PARTITION BY RANGE (day)"
	q -c "DO \$\$
		BEGIN
			FOR i IN 0..$((PARTS - 1)) LOOP
				EXECUTE format('CREATE UNLOGGED TABLE ${t}_%s PARTITION OF $t
					FOR VALUES FROM (%L) TO (%L)', i, date '2025-01-01' + i, date '2025-01-01' + i + 1);
			END LOOP;
		END \$\$"
done
q -c "INSERT INTO ev_amq SELECT date '2025-01-01' + (g / $PART_ROWS), (g::numeric * $MULT % $PRIME)::int8,
	'payload ' || g FROM generate_series(0, $((TOTAL - 1))) g"
q -c "INSERT INTO ev_bt SELECT * FROM ev_amq"
q -c "CREATE INDEX ON ev_amq USING amqfilter (trace_id)"
q -c "CREATE INDEX ON ev_bt (trace_id)"
q -c "VACUUM ANALYZE ev_amq"
q -c "VACUUM ANALYZE ev_bt"
q -c "CREATE TABLE keys AS SELECT CASE WHEN g % 2 = 0
		THEN ((g * 7919 % $TOTAL)::numeric * $MULT % $PRIME)::int8 ELSE $PRIME + g END AS id
	FROM generate_series(1, $JOIN_KEYS) g; ANALYZE keys"

# a random present key, as pgbench computes it; an absent one is >= PRIME
PRESENT_KEY="\\set g random(0, $((TOTAL - 1)))
\\set k (:g * $MULT) % $PRIME"
ABSENT_KEY="\\set k random($PRIME, $((PRIME * 2)))"

declare -A S
measure() {		# measure TABLE: one round of every lookup
	local t=$1
	S[$t,absent,custom]+="$(pgbench_stat latency simple "$SECONDS_EACH" "$ABSENT_KEY
SELECT * FROM $t WHERE trace_id = :k;") "
	S[$t,present,custom]+="$(pgbench_stat latency simple "$SECONDS_EACH" "$PRESENT_KEY
SELECT * FROM $t WHERE trace_id = :k;") "
	S[$t,absent,auto]+="$(pgbench_stat latency prepared "$SECONDS_EACH" "$ABSENT_KEY
SELECT * FROM $t WHERE trace_id = :k;") "
	S[$t,present,auto]+="$(pgbench_stat latency prepared "$SECONDS_EACH" "$PRESENT_KEY
SELECT * FROM $t WHERE trace_id = :k;") "
	S[$t,join]+="$(pgbench_stat latency simple "$SECONDS_EACH" "SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT count(*) FROM keys k JOIN $t e ON e.trace_id = k.id;") "
}
for ((r = 1; r <= ROUNDS; r++)); do
	log "round $r of $ROUNDS"
	measure ev_amq
	measure ev_bt
done
declare -A R
for key in "${!S[@]}"; do
	R[$key]=$(printf '%s\n' ${S[$key]} | median 3)
	[ -n "${R[$key]}" ] || die "no measurement for $key"
done

# what the plan cache chose after the measured runs: its generic and custom
# plans of the prepared lookup, in a session that ran it 20 times
plans() {
	local t=$1 i sql="PREPARE l(int8) AS SELECT * FROM $t WHERE trace_id = \$1;"
	for ((i = 1; i <= 20; i++)); do sql+="EXECUTE l($((PRIME + i)));"; done
	q -c "$sql" -c "SELECT generic_plans || ' generic, ' || custom_plans || ' custom'
		FROM pg_prepared_statements WHERE name = 'l'" | tail -n 1
}
times() {
	q -c "EXPLAIN (ANALYZE, SUMMARY) SELECT * FROM $1 WHERE trace_id = $((PRIME + 5))" \
		-c "EXPLAIN (ANALYZE, SUMMARY) SELECT * FROM $1 WHERE trace_id = $((PRIME + 7))" \
		| sed -n 's/^\(Planning\|Execution\) Time: \([0-9.]*\) ms$/\2/p' | tail -n 2 | paste -sd/
}
listed() {
	q -c "EXPLAIN (COSTS OFF) SELECT * FROM $1 WHERE trace_id = $2" | grep -c -- '->' || true
}
for t in ev_amq ev_bt; do
	R[$t,plans]=$(plans $t)
	R[$t,times]=$(times $t)
	R[$t,listed_absent]=$(listed $t $((PRIME + 3)))
done
R[removed]=$(q -c "EXPLAIN SELECT * FROM ev_amq WHERE trace_id = $((PRIME + 3))" \
	| sed -n 's/^ *Partitions Removed: \([0-9]*\)$/\1/p')
R[skipped]=$(q -c "SET enable_hashjoin = off" -c "SET enable_mergejoin = off" \
	-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT count(*) FROM keys k JOIN ev_amq e ON e.trace_id = k.id" \
	| sed -n 's/^ *Partition Scans \(Probed\|Skipped\): \([0-9]*\)$/\2/p' | paste -sd/)

{
	results_provenance bench/skip.sh
	echo
	echo "ev_amq and ev_bt: the same $TOTAL rows (day, trace_id int8, payload), range-partitioned by"
	echo "day into $PARTS partitions of $PART_ROWS rows, every trace_id once; an amqfilter index on"
	echo "trace_id (defaults) against a btree. Lookups: average latency of one pgbench client,"
	echo "a random key each time, ms, medians of $ROUNDS alternated rounds of ${SECONDS_EACH} s"
	echo "(custom: a literal, planned each time; auto: prepared, plan_cache_mode = auto)."
	echo
	echo "| lookup | amqfilter | btree | ratio |"
	echo "|---|---:|---:|---:|"
	for k in "absent,custom" "present,custom" "absent,auto" "present,auto" join; do
		label=${k/,/, }
		[ "$k" = join ] && label="$JOIN_KEYS keys, nested loop"
		echo "| $label | ${R[ev_amq,$k]} | ${R[ev_bt,$k]} | $(ratio "${R[ev_amq,$k]}" "${R[ev_bt,$k]}" 2) |"
	done
	echo
	echo "- One absent lookup with a literal, planning/execution ms (EXPLAIN ANALYZE):"
	echo "  amqfilter ${R[ev_amq,times]}, btree ${R[ev_bt,times]}. EXPLAIN lists"
	echo "  ${R[ev_amq,listed_absent]} partitions for amqfilter (\"Partitions Removed: ${R[removed]}\") and"
	echo "  ${R[ev_bt,listed_absent]} for btree."
	echo "- The plan cache after 20 runs of the prepared lookup: amqfilter ${R[ev_amq,plans]},"
	echo "  btree ${R[ev_bt,plans]}."
	echo "- Nested loop: partition scans probed/skipped over the $JOIN_KEYS rescans: ${R[skipped]}."
} | results_replace_section "$RESULTS_FILE" "$SECTION"
log "results in $RESULTS_FILE"
