#!/usr/bin/env bash
# bench/partitions.sh: what partition filters save on lookups, and what they cost
# writers, measured side by side in one run.
#
#   sudo bash bench/partitions.sh
#
# Builds and installs the extension (unless AMQ_BENCH_SKIP_BUILD=1), starts a
# throwaway cluster (JIT off, statement_timeout 300 s: a query that would run longer
# is reported as a timeout, never waited for) and measures:
#
#   lookup   orders(id int8, customer_id int8, note text), UNLOGGED, range-partitioned
#            on id into $PARTS partitions of $PART_ROWS rows; every customer_id
#            occurs once, scattered over the partitions; no index on customer_id.
#            After bloom_partition_build('orders', 'customer_id') (p = 0.001):
#            bloom_partition_lookup(NULL::orders, 'customer_id', c) against
#            SELECT * FROM orders WHERE customer_id = c, for a present and an absent
#            customer (medians of RUNS runs of EXPLAIN (ANALYZE, TIMING OFF)'s
#            "Execution Time" after a warm-up run), and bloom_partition_candidates
#            alone.
#   copy     COPY of $COPY_ROWS rows (from a file the server reads) into a table of
#            10 partitions whose filters were just built (so the COPY records a
#            write to each partition: the writers' worst case), against the same
#            COPY into an identical untracked table; both emptied before each run,
#            the order alternated, the median of COPY_RUNS runs each (psql's
#            \timing).
#   wide     two INSERTs of $WIDE_ROWS rows in one transaction, each spread over
#            $WIDE_PARTS partitions in turn (each row to another partition than the
#            row before), tracked against untracked, alternated, medians of
#            COPY_RUNS runs: the first pays for recording each partition's write,
#            the second only what the trigger's condition costs a row when one
#            transaction writes many partitions.
#   oltp     one-row INSERT transactions (pgbench, prepared, one client, $OLTP_S s
#            each, alternated twice) into the 10-partition tables: what a
#            transaction pays for its first write to a partition.
#
# Replaces (or appends) the "Partition filters" section of bench/RESULTS.md.
#
# Environment:
#   RUNS=5, COPY_RUNS=7    runs per median
#   AMQ_PART_COUNT=50, AMQ_PART_ROWS=1000000, AMQ_COPY_ROWS=1000000,
#   AMQ_WIDE_PARTS=8000, AMQ_WIDE_ROWS=800000, AMQ_OLTP_S=10
#                          sizes (smaller ones for trying the script out; the
#                          recorded results use the defaults)
#   AMQ_BENCH_SKIP_BUILD=1 use the installed extension
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

RUNS=${RUNS:-5}
COPY_RUNS=${COPY_RUNS:-7}
PARTS=${AMQ_PART_COUNT:-50}
PART_ROWS=${AMQ_PART_ROWS:-1000000}
COPY_ROWS=${AMQ_COPY_ROWS:-1000000}
WIDE_PARTS=${AMQ_WIDE_PARTS:-8000}
WIDE_ROWS=${AMQ_WIDE_ROWS:-800000}
OLTP_S=${AMQ_OLTP_S:-10}
TIMEOUT_S=300
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md
SECTION='## Partition filters'

for v in RUNS COPY_RUNS PARTS PART_ROWS COPY_ROWS WIDE_PARTS WIDE_ROWS OLTP_S; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -ge 1 ] || die "$v must be a whole number >= 1"
done
TOTAL=$((PARTS * PART_ROWS))
# a multiplier coprime with TOTAL scatters the customers over the partitions
MULT=7
while [ $((TOTAL % MULT)) -eq 0 ]; do MULT=$((MULT + 2)); done

ratio() {
	if [ "$1" = timeout ] || [ "$2" = timeout ]; then
		echo "n/a"
	else
		awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'
	fi
}

# copy_ms TABLE FILE: wall time of one server-side COPY, in ms, as psql's \timing
# reports it.
copy_ms() {
	run_psql -At -c '\timing on' -c "COPY $1 FROM '$2'" \
		| sed -n 's/^Time: \([0-9.]*\) ms.*$/\1/p'
}

start=$SECONDS
bench_build_and_install
# one transaction locks every partition of the wide tables
start_cluster "jit = off" "statement_timeout = '${TIMEOUT_S}s'" \
	"shared_buffers = '512MB'" "checkpoint_timeout = '1h'" \
	"max_locks_per_transaction = $((WIDE_PARTS * 3 / 100 + 64))"

log "load: $PARTS partitions of $PART_ROWS rows"
run_psql -q -c "CREATE EXTENSION amqfilter;
	CREATE TABLE orders (id int8 NOT NULL, customer_id int8 NOT NULL, note text)
		PARTITION BY RANGE (id);"
for ((i = 0; i < PARTS; i++)); do
	run_psql -q -c "
		CREATE UNLOGGED TABLE orders_$i PARTITION OF orders
			FOR VALUES FROM ($((i * PART_ROWS))) TO ($(((i + 1) * PART_ROWS)));
		INSERT INTO orders_$i
			SELECT g, (g * $MULT) % $TOTAL, 'order ' || g
			FROM generate_series($((i * PART_ROWS)), $(((i + 1) * PART_ROWS - 1))) g;"
done
run_psql -q -c "VACUUM ANALYZE orders"

log "build: bloom_partition_build('orders', 'customer_id')"
build_ms=$(run_psql -At -c '\timing on' \
	-c "SET client_min_messages = warning" \
	-c "SELECT count(*) FROM bloom_partition_build('orders', 'customer_id')" \
	| sed -n 's/^Time: \([0-9.]*\) ms.*$/\1/p' | tail -n 1)
filter_bytes=$(run_psql -At -c "SELECT sum((bloom_info(filter)).bytes)
	FROM amqfilter_partition_filter WHERE parent = 'orders'::regclass")

# a present customer (in the middle partition) and an absent one
present=$(run_psql -At -c "SELECT customer_id FROM orders_$((PARTS / 2)) LIMIT 1")
absent=$((TOTAL + 12345))
candidates_present=$(run_psql -At -c "SELECT count(*)
	FROM bloom_partition_candidates('orders', 'customer_id', $present::int8)")
candidates_absent=$(run_psql -At -c "SELECT count(*)
	FROM bloom_partition_candidates('orders', 'customer_id', $absent::int8)")
same=$(run_psql -At -c "SELECT
	(SELECT array_agg(id ORDER BY id) FROM bloom_partition_lookup(NULL::orders, 'customer_id', $present::int8))
	IS NOT DISTINCT FROM
	(SELECT array_agg(id ORDER BY id) FROM orders WHERE customer_id = $present)")
[ "$same" = t ] || die "bloom_partition_lookup and the plain query disagree"

declare -A MS
for which in present absent; do
	value=${!which}
	log "lookup: customer $value ($which)"
	MS[plain_$which]=$(timed_ms "$RUNS" "SELECT * FROM orders WHERE customer_id = $value")
	MS[lookup_$which]=$(timed_ms "$RUNS" \
		"SELECT * FROM bloom_partition_lookup(NULL::orders, 'customer_id', $value::int8)")
	MS[cand_$which]=$(timed_ms "$RUNS" \
		"SELECT * FROM bloom_partition_candidates('orders', 'customer_id', $value::int8)" 2)
done

log "copy: $COPY_ROWS rows, tracked vs untracked"
copy_file=$AMQ_CLUSTER_DIR/copy.data
run_psql -q -c "
	CREATE TABLE copy_tracked (id int8 NOT NULL, customer_id int8 NOT NULL, note text)
		PARTITION BY RANGE (id);
	CREATE TABLE copy_untracked (LIKE copy_tracked) PARTITION BY RANGE (id);"
for ((i = 0; i < 10; i++)); do
	lo=$((i * COPY_ROWS / 10)) hi=$(((i + 1) * COPY_ROWS / 10))
	run_psql -q -c "
		CREATE TABLE copy_tracked_$i PARTITION OF copy_tracked FOR VALUES FROM ($lo) TO ($hi);
		CREATE TABLE copy_untracked_$i PARTITION OF copy_untracked FOR VALUES FROM ($lo) TO ($hi);"
done
run_psql -q -c "COPY (SELECT g, (g * 7) % $COPY_ROWS, 'order ' || g
	FROM generate_series(0, $((COPY_ROWS - 1))) g) TO '$copy_file'"
tracked=()
untracked=()
for ((r = 0; r < COPY_RUNS; r++)); do
	run_psql -q -c "TRUNCATE copy_tracked, copy_untracked" \
		-c "SET client_min_messages = warning" \
		-c "SELECT count(*) FROM bloom_partition_build('copy_tracked', 'customer_id')" >/dev/null
	run_psql -q -c "CHECKPOINT"
	if ((r % 2 == 0)); then
		untracked+=("$(copy_ms copy_untracked "$copy_file")")
		tracked+=("$(copy_ms copy_tracked "$copy_file")")
	else
		tracked+=("$(copy_ms copy_tracked "$copy_file")")
		untracked+=("$(copy_ms copy_untracked "$copy_file")")
	fi
done
stale=$(run_psql -At -c "SELECT count(*) FROM bloom_partition_status('copy_tracked', 'customer_id')
	WHERE state = 'written'")
[ "$stale" = 10 ] || die "the tracked COPY recorded $stale of 10 partitions as written"
copy_tracked_ms=$(printf '%s\n' "${tracked[@]}" | median)
copy_untracked_ms=$(printf '%s\n' "${untracked[@]}" | median)

# insert_ms TABLE: wall times of two INSERTs of WIDE_ROWS rows in one
# transaction, each row to the next of the WIDE_PARTS partitions in turn, in ms,
# on one line: the first records each partition's write once, the second finds
# every partition recorded already.
insert_ms() {
	local sql="INSERT INTO $1
		SELECT (g % $WIDE_PARTS) * 1000 + g / $WIDE_PARTS, g
		  FROM generate_series(0, $((WIDE_ROWS - 1))) g"
	run_psql -At -c 'BEGIN' -c '\timing on' -c "$sql" -c "$sql" -c 'COMMIT' \
		| sed -n 's/^Time: \([0-9.]*\) ms.*$/\1/p' | head -n 2 | paste -sd' '
}

log "wide: $WIDE_PARTS partitions, tracked and untracked"
# wide_floor: untracked, but each partition has a row trigger whose condition is
# the constant false: what PostgreSQL's trigger machinery costs a row by itself
run_psql -q -c "
	CREATE UNLOGGED TABLE wide_tracked (id int8 NOT NULL, v int8) PARTITION BY RANGE (id);
	CREATE UNLOGGED TABLE wide_untracked (LIKE wide_tracked) PARTITION BY RANGE (id);
	CREATE UNLOGGED TABLE wide_floor (LIKE wide_tracked) PARTITION BY RANGE (id);"
run_psql -q -c "DO \$\$
	DECLARE
		i int;
		t text;
	BEGIN
		FOR i IN 0 .. $((WIDE_PARTS - 1)) LOOP
			FOREACH t IN ARRAY ARRAY['wide_tracked', 'wide_untracked', 'wide_floor'] LOOP
				EXECUTE format('CREATE UNLOGGED TABLE %I PARTITION OF %I FOR VALUES FROM (%s) TO (%s)',
							   t || '_' || i, t, i * 1000, (i + 1) * 1000);
			END LOOP;
			EXECUTE format('CREATE TRIGGER floor AFTER INSERT OR UPDATE ON %I FOR EACH ROW
							WHEN (false) EXECUTE FUNCTION amqfilter_partition_mark()',
						   'wide_floor_' || i);
		END LOOP;
	END \$\$"
run_psql -q -c "SET client_min_messages = warning" \
	-c "SELECT count(*) FROM bloom_partition_build('wide_tracked', 'v')" >/dev/null
wide_tracked=()
wide_untracked=()
wide_floor=()
for ((r = 0; r < COPY_RUNS; r++)); do
	run_psql -q -c "TRUNCATE wide_tracked, wide_untracked, wide_floor"
	if ((r % 2 == 0)); then
		wide_untracked+=("$(insert_ms wide_untracked)")
		wide_floor+=("$(insert_ms wide_floor)")
		wide_tracked+=("$(insert_ms wide_tracked)")
	else
		wide_tracked+=("$(insert_ms wide_tracked)")
		wide_floor+=("$(insert_ms wide_floor)")
		wide_untracked+=("$(insert_ms wide_untracked)")
	fi
done
# per_row_ns FIRST_MS SECOND_MS...: for the first and for the second INSERT
wide_first_tracked=$(printf '%s\n' "${wide_tracked[@]}" | cut -d' ' -f1 | median)
wide_second_tracked=$(printf '%s\n' "${wide_tracked[@]}" | cut -d' ' -f2 | median)
wide_first_untracked=$(printf '%s\n' "${wide_untracked[@]}" | cut -d' ' -f1 | median)
wide_second_untracked=$(printf '%s\n' "${wide_untracked[@]}" | cut -d' ' -f2 | median)
wide_first_floor=$(printf '%s\n' "${wide_floor[@]}" | cut -d' ' -f1 | median)
wide_second_floor=$(printf '%s\n' "${wide_floor[@]}" | cut -d' ' -f2 | median)
ns_per_row() {
	awk -v t="$1" -v u="$2" -v n="$WIDE_ROWS" 'BEGIN { printf "%.0f", (t - u) * 1e6 / n }'
}

# tps TABLE: one-row INSERT transactions a second over OLTP_S seconds.
tps() {
	local script=$AMQ_CLUSTER_DIR/oltp_$1.sql
	echo "INSERT INTO $1 VALUES (random() * $((COPY_ROWS - 1)), 1, 'oltp');" >"$script"
	chmod a+r "$script"
	"$PG_BIN/pgbench" -n -M prepared -c 1 -T "$OLTP_S" -f "$script" 2>/dev/null \
		| sed -n 's/^tps = \([0-9.]*\) .*$/\1/p'
}

log "oltp: one-row INSERT transactions, $OLTP_S s each"
run_psql -q -c "TRUNCATE copy_tracked, copy_untracked" \
	-c "SET client_min_messages = warning" \
	-c "SELECT count(*) FROM bloom_partition_build('copy_tracked', 'customer_id')" >/dev/null
oltp_tracked=()
oltp_untracked=()
for ((r = 0; r < 2; r++)); do
	oltp_untracked+=("$(tps copy_untracked)")
	oltp_tracked+=("$(tps copy_tracked)")
done
oltp_tracked_tps=$(printf '%s\n' "${oltp_tracked[@]}" | median 0)
oltp_untracked_tps=$(printf '%s\n' "${oltp_untracked[@]}" | median 0)

load=$(cut -d' ' -f1-3 /proc/loadavg)
{
	kept=
	[ -f "$RESULTS_FILE" ] && kept=$(awk -v s="$SECTION" '
		$0 == s { skip = 1; next }
		skip && /^## / { skip = 0 }
		!skip' "$RESULTS_FILE")
	printf '%s\n\n' "$kept"
	echo "$SECTION"
	echo
	echo "bench/partitions.sh, $(date -u '+%Y-%m-%d'), PostgreSQL $(run_psql -At -c 'SHOW server_version'),"
	echo "$(nproc) cores, load average $load at the end of the run (a load above the core"
	echo "count means other work ran alongside): compare the ratios, which were measured"
	echo "side by side, rather than the absolute times."
	echo
	echo "Lookup: $PARTS partitions of $PART_ROWS rows, no index on customer_id, one"
	echo "filter per partition at p = 0.001 ($filter_bytes bytes in all, built in"
	echo "$build_ms ms). Medians of $RUNS runs, ms. Target: the lookup at least 10x faster."
	echo
	echo "| customer | partitions scanned | plain query | bloom_partition_lookup | faster | bloom_partition_candidates alone |"
	echo "|---|---:|---:|---:|---:|---:|"
	echo "| present | $candidates_present of $PARTS | ${MS[plain_present]} | ${MS[lookup_present]} | $(ratio "${MS[plain_present]}" "${MS[lookup_present]}")x | ${MS[cand_present]} |"
	echo "| absent | $candidates_absent of $PARTS | ${MS[plain_absent]} | ${MS[lookup_absent]} | $(ratio "${MS[plain_absent]}" "${MS[lookup_absent]}")x | ${MS[cand_absent]} |"
	echo
	echo "COPY of $COPY_ROWS rows into 10 partitions, each run right after a build (so"
	echo "it records a write to all 10), medians of $COPY_RUNS runs, ms. Target: within 10%."
	echo
	echo "| untracked | tracked | tracked / untracked |"
	echo "|---:|---:|---:|"
	echo "| $copy_untracked_ms | $copy_tracked_ms | $(ratio "$copy_tracked_ms" "$copy_untracked_ms") |"
	echo
	echo "Two INSERTs of $WIDE_ROWS rows each in one transaction, each row to the next of"
	echo "$WIDE_PARTS partitions in turn, medians of $COPY_RUNS runs, ms: the first records"
	echo "the write to each partition once; the second finds them all recorded, so"
	echo "its difference per row is what the trigger's condition costs a row. The"
	echo "floor: the same partitions untracked, each with a row trigger whose"
	echo "condition is the constant false (PostgreSQL's trigger machinery alone)."
	echo
	echo "| INSERT | untracked | floor | tracked | tracked / untracked | ns per row over untracked | ns per row over the floor |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	echo "| first | $wide_first_untracked | $wide_first_floor | $wide_first_tracked | $(ratio "$wide_first_tracked" "$wide_first_untracked") | $(ns_per_row "$wide_first_tracked" "$wide_first_untracked") | $(ns_per_row "$wide_first_tracked" "$wide_first_floor") |"
	echo "| second | $wide_second_untracked | $wide_second_floor | $wide_second_tracked | $(ratio "$wide_second_tracked" "$wide_second_untracked") | $(ns_per_row "$wide_second_tracked" "$wide_second_untracked") | $(ns_per_row "$wide_second_tracked" "$wide_second_floor") |"
	echo
	echo "One-row INSERT transactions into the 10 partitions (pgbench, prepared, one"
	echo "client, $OLTP_S s each, twice, median), transactions a second: each records"
	echo "its first write to a partition, or finds the record there."
	echo
	echo "| untracked | tracked | tracked / untracked |"
	echo "|---:|---:|---:|"
	echo "| $oltp_untracked_tps | $oltp_tracked_tps | $(ratio "$oltp_tracked_tps" "$oltp_untracked_tps") |"
} >"$RESULTS_FILE.new"
mv "$RESULTS_FILE.new" "$RESULTS_FILE"
sed -n "/^$SECTION\$/,/^## [^P]/p" "$RESULTS_FILE"
echo "partitions bench: done in $((SECONDS - start))s; results written to ${RESULTS_FILE#"$AMQ_ROOT"/}"
