#!/usr/bin/env bash
# bench/positions.sh: the amqfilter index as a lookup index, against btree and
# BRIN bloom on the same data, side by side in one run.
#
#   sudo bash bench/positions.sh
#
# Builds and installs the extension (unless AMQ_BENCH_SKIP_BUILD=1), starts a
# throwaway cluster (JIT off, statement_timeout 300 s: a query that would run
# longer is a timeout, never waited for) and loads t(id int8, k text, payload
# text), $ROWS rows in random id order, not partitioned, and p, the same shape,
# range-partitioned into $PARTS partitions of $PART_ROWS rows.  For each
# set-up -- a btree on id; BRIN bloom on id at its best configuration here
# (pages_per_range = 16, one bloom per 16 blocks sized for their rows, rate
# 0.01); amqfilter on id (the defaults) -- it measures:
#
#   size, build      the index's bytes and CREATE INDEX's time;
#   present, absent  SELECT payload FROM t WHERE id = $1 as a client waits for
#                    it (pgbench, one client, a random key each time: parse,
#                    plan, run), with a literal (a custom plan) and prepared
#                    (plan_cache_mode = auto, the planner's own choice), and
#                    the heap blocks a present key's scan reads;
#   join             1,000 present keys joined into t, fetching a column of t
#                    (the planner's choice), and counting only (where a btree
#                    answers from the index alone);
#   copy             COPY of $COPY_ROWS rows into a table whose index was built
#                    empty, against no index (alternated, medians);
#   partitions       a present key of p, with a literal.
# and the same join without any index (a hash join); then, with the amqfilter
# index, half of t's rows deleted: its size and lookups after VACUUM, and
# after REINDEX.
#
# Replaces (or appends) the "Filter index: lookups" section of bench/RESULTS.md.
#
# Environment:
#   AMQ_ROWS=10000000, AMQ_PARTS=20, AMQ_PART_ROWS=250000,
#   AMQ_COPY_ROWS=500000   sizes (smaller ones for trying the script out)
#   AMQ_SECONDS_EACH=5     seconds of each pgbench measurement
#   AMQ_BENCH_SKIP_BUILD=1 use the installed extension
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

ROWS=${AMQ_ROWS:-10000000}
PARTS=${AMQ_PARTS:-20}
PART_ROWS=${AMQ_PART_ROWS:-250000}
COPY_ROWS=${AMQ_COPY_ROWS:-500000}
SECONDS_EACH=${AMQ_SECONDS_EACH:-5}
TIMEOUT_S=300
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md
SECTION='## Filter index: lookups'
# ids: row g has id (g * MULT) mod PRIME, a permutation of 1 .. PRIME - 1
PRIME=1000000007
MULT=2654435761

bench_build_and_install
start_cluster "jit = off" "statement_timeout = '${TIMEOUT_S}s'" \
	"shared_buffers = '2GB'" "max_wal_size = '8GB'" "checkpoint_timeout = '1h'"
q() { run_psql -q -At "$@"; }

# pgbench_ms MODE SQL: the average latency of one client over SECONDS_EACH s;
# SQL may use :r, a random row number.
pgbench_ms() {
	pgbench_stat latency "$1" "$SECONDS_EACH" "$(printf '\\set r random(1, %d)\n%s' "$ROWS" "$2")"
}

# heap_blocks SQL: the heap blocks it reads (shared buffers hit or read by
# its scan of t, the index's own excluded: a bitmap heap scan's "Heap
# Blocks", or an index scan's heap fetches, which EXPLAIN counts as buffers)
heap_blocks() {
	q -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) $1" \
		| awk '/Heap Blocks:/ { for (i = 1; i <= NF; i++) if ($i ~ /^(exact|lossy)=/) { split($i, a, "="); s += a[2] } found = 1 }
			END { print (found ? s : "n/a") }'
}

log "load: $ROWS rows, and $PARTS partitions of $PART_ROWS"
q -c "CREATE EXTENSION amqfilter;
	CREATE TABLE t (id int8, k text, payload text);
	INSERT INTO t SELECT (g::int8 * $MULT) % $PRIME, 'key' || g, repeat('x', 40)
	  FROM generate_series(1, $ROWS) g;
	CREATE TABLE p (id int8, k text, payload text) PARTITION BY RANGE (id);"
for ((i = 0; i < PARTS; i++)); do
	lo=$((i * PRIME / PARTS)) hi=$(((i + 1) * PRIME / PARTS))
	q -c "CREATE TABLE p_$i PARTITION OF p FOR VALUES FROM ($lo) TO ($hi)"
done
q -c "INSERT INTO p SELECT (g::int8 * $MULT) % $PRIME, 'key' || g, repeat('x', 40)
	  FROM generate_series(1, $((PARTS * PART_ROWS))) g"
q -c "VACUUM ANALYZE t"
q -c "VACUUM ANALYZE p"
q -c "CREATE TABLE keys1000 AS SELECT (g::int8 * 9973 * $MULT) % $PRIME AS id
	  FROM generate_series(1, 1000) g;
	ANALYZE keys1000;"
rows_per_range=$(q -c "SELECT ceil(16.0 * $ROWS / (pg_relation_size('t') / 8192))")

declare -A R
JOIN_SQL="SELECT count(t.payload) FROM keys1000 JOIN t USING (id);"
JOIN_ONLY_SQL="SELECT count(*) FROM keys1000 JOIN t USING (id);"
R[hash_join]=$(pgbench_ms simple "$JOIN_SQL")
SETUPS=(btree brin amqfilter)
for setup in "${SETUPS[@]}"; do
	log "set-up: $setup"
	case $setup in
		btree) ddl="USING btree (id)" ;;
		brin) ddl="USING brin (id int8_bloom_ops(false_positive_rate = 0.01, n_distinct_per_range = $rows_per_range)) WITH (pages_per_range = 16)" ;;
		amqfilter) ddl="USING amqfilter (id)" ;;
	esac
	q -c "DROP INDEX IF EXISTS t_id; DROP INDEX IF EXISTS p_id; CHECKPOINT"
	R[$setup,build]=$(client_ms "CREATE INDEX t_id ON t $ddl")
	q -c "CREATE INDEX p_id ON p $ddl; ANALYZE t; ANALYZE p"
	R[$setup,bytes]=$(q -c "SELECT pg_relation_size('t_id')")
	present="SELECT payload FROM t WHERE id = (:r::int8 * $MULT) % $PRIME;"
	absent="SELECT payload FROM t WHERE id = -:r::int8;"
	R[$setup,present,custom]=$(pgbench_ms simple "$present")
	R[$setup,present,auto]=$(pgbench_ms prepared "$present")
	R[$setup,absent,custom]=$(pgbench_ms simple "$absent")
	R[$setup,absent,auto]=$(pgbench_ms prepared "$absent")
	R[$setup,blocks]=$(heap_blocks "SELECT payload FROM t WHERE id = ($((ROWS / 3))::int8 * $MULT) % $PRIME")
	R[$setup,join]=$(pgbench_ms simple "$JOIN_SQL")
	R[$setup,join_only]=$(pgbench_ms simple "$JOIN_ONLY_SQL")
	R[$setup,parts]=$(pgbench_ms simple "SELECT payload FROM p WHERE id = ((:r::int8 % $((PARTS * PART_ROWS)) + 1) * $MULT) % $PRIME;")
	log "$setup: ${R[$setup,bytes]} bytes, build ${R[$setup,build]} ms, present ${R[$setup,present,custom]} / ${R[$setup,present,auto]} ms (${R[$setup,blocks]} blocks), absent ${R[$setup,absent,custom]} / ${R[$setup,absent,auto]} ms, join ${R[$setup,join]} ms, partitions ${R[$setup,parts]} ms"
done

log "copy"
q -c "COPY (SELECT (g::int8 * $MULT) % $PRIME, 'key' || g, repeat('x', 40)
	FROM generate_series(1, $COPY_ROWS) g) TO '/tmp/amqfilter-positions-copy.dat'"
copy_ms() {
	q -c "DROP TABLE IF EXISTS c; CREATE TABLE c (id int8, k text, payload text)"
	case $1 in
		btree) q -c "CREATE INDEX ON c (id)" ;;
		amqfilter) q -c "CREATE INDEX ON c USING amqfilter (id)" ;;
	esac
	client_ms "COPY c FROM '/tmp/amqfilter-positions-copy.dat'"
}
for round in 1 2 3 4 5; do
	for setup in none btree amqfilter; do
		R[copy,$setup]="${R[copy,$setup]:-} $(copy_ms $setup)"
	done
done
for setup in none btree amqfilter; do
	R[copy,$setup]=$(tr ' ' '\n' <<<"${R[copy,$setup]}" | grep . | median 1)
done
rm -f /tmp/amqfilter-positions-copy.dat

log "deletes"
q -c "DELETE FROM t WHERE id % 2 = 0"
q -c "VACUUM t"
R[del,bytes]=$(q -c "SELECT pg_relation_size('t_id')")
R[del,entries]=$(q -c "SELECT entries FROM amqfilter_index_info('t_id')")
R[del,present]=$(pgbench_ms simple "SELECT payload FROM t WHERE id = (:r::int8 * $MULT) % $PRIME;")
q -c "REINDEX INDEX t_id"
R[rei,bytes]=$(q -c "SELECT pg_relation_size('t_id')")
R[rei,entries]=$(q -c "SELECT entries FROM amqfilter_index_info('t_id')")
R[rei,present]=$(pgbench_ms simple "SELECT payload FROM t WHERE id = (:r::int8 * $MULT) % $PRIME;")

mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
{
	results_provenance bench/positions.sh
	echo
	echo "t: $ROWS rows (id int8 in random order, a text key, a 40-byte payload), not"
	echo "partitioned; p: the same shape in $PARTS range partitions of $PART_ROWS rows."
	echo "Lookups: average latency of one pgbench client over ${SECONDS_EACH} s, a random key each"
	echo "time, ms (custom: a literal, planned each time; auto: prepared, the planner's choice"
	echo "under plan_cache_mode = auto); blocks: the heap blocks a present key's scan reads."
	echo
	echo "| set-up | size (MB) | build (ms) | present, custom | present, auto | blocks | absent, custom | absent, auto | 1,000 keys joined | joined, counted only | partitions, present |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for setup in "${SETUPS[@]}"; do
		echo "| $setup | $(mb "${R[$setup,bytes]}") | ${R[$setup,build]} | ${R[$setup,present,custom]} | ${R[$setup,present,auto]} | ${R[$setup,blocks]} | ${R[$setup,absent,custom]} | ${R[$setup,absent,auto]} | ${R[$setup,join]} | ${R[$setup,join_only]} | ${R[$setup,parts]} |"
	done
	echo
	echo "- Ratios, amqfilter against btree: size $(ratio "${R[amqfilter,bytes]}" "${R[btree,bytes]}" 2),"
	echo "  build $(ratio "${R[amqfilter,build]}" "${R[btree,build]}" 2), present"
	echo "  $(ratio "${R[amqfilter,present,custom]}" "${R[btree,present,custom]}" 2) (custom) and"
	echo "  $(ratio "${R[amqfilter,present,auto]}" "${R[btree,present,auto]}" 2) (auto), absent"
	echo "  $(ratio "${R[amqfilter,absent,custom]}" "${R[btree,absent,custom]}" 2) and"
	echo "  $(ratio "${R[amqfilter,absent,auto]}" "${R[btree,absent,auto]}" 2), join"
	echo "  $(ratio "${R[amqfilter,join]}" "${R[btree,join]}" 2) (counted only: $(ratio "${R[amqfilter,join_only]}" "${R[btree,join_only]}" 2),"
	echo "  the btree's index-only scan reads no table block), partitions"
	echo "  $(ratio "${R[amqfilter,parts]}" "${R[btree,parts]}" 2)."
	echo "- BRIN bloom against amqfilter, present key: $(ratio "${R[brin,present,custom]}" "${R[amqfilter,present,custom]}" 2)x slower."
	echo "- 1,000 keys joined with no index (a hash join): ${R[hash_join]} ms, against"
	echo "  ${R[amqfilter,join]} ms with amqfilter."
	echo "- COPY of $COPY_ROWS rows into a table whose index was built empty (medians of 5,"
	echo "  alternated): no index ${R[copy,none]} ms, btree ${R[copy,btree]} ms"
	echo "  ($(ratio "${R[copy,btree]}" "${R[copy,none]}" 2)x), amqfilter ${R[copy,amqfilter]} ms"
	echo "  ($(ratio "${R[copy,amqfilter]}" "${R[copy,none]}" 2)x)."
	echo "- Half of t's rows deleted, then VACUUM: the amqfilter index keeps its"
	echo "  $(mb "${R[del,bytes]}") MB and ${R[del,entries]} entries (a deleted key's lookup still reads"
	echo "  its block); a present key ${R[del,present]} ms. After REINDEX: $(mb "${R[rei,bytes]}") MB,"
	echo "  ${R[rei,entries]} entries, a present key ${R[rei,present]} ms."
} | results_replace_section "$RESULTS_FILE" "$SECTION"
log "results in $RESULTS_FILE"
