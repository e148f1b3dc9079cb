#!/usr/bin/env bash
# bench/index.sh: the amqfilter index against no index, btree and BRIN bloom on
# the same data, side by side in one run.
#
#   sudo bash bench/index.sh
#
# Builds and installs the extension (unless AMQ_BENCH_SKIP_BUILD=1), starts a
# throwaway cluster (JIT off, statement_timeout 300 s: a query that would run
# longer is reported as a timeout, never waited for) and loads
# orders(id int8, customer_id int8, note text), UNLOGGED, range-partitioned on id
# into $PARTS partitions of $PART_ROWS rows, every customer_id once, scattered
# over the partitions.  Then, for each set-up in
# turn -- no index; a btree on customer_id; BRIN bloom
# (int8_bloom_ops(false_positive_rate = 0.001)); amqfilter
# (false_positive_rate = 0.001) -- all created on the partitioned table, so on
# every partition:
#
#   size, build    the indexes' bytes and CREATE INDEX's time;
#   lookup         SELECT * FROM orders WHERE customer_id = $1, a present and an
#                  absent customer, as a client waits for it (pgbench, one
#                  client: parse, plan and run), with a literal (custom plans:
#                  the amqfilter estimate probes the filters) and prepared with
#                  plan_cache_mode = force_generic_plan (the value known only
#                  at run time);
#   nested loop    100 present customers joined to orders, as a nested loop
#                  (the planner's other joins turned off for the indexed
#                  set-ups), against the plain join without an index;
#   copy           COPY of $COPY_ROWS rows into 10 logged partitions with the
#                  index against without it (alternated, medians);
# and, for amqfilter only: over $ABSENT_KEYS random absent customers, the
# partitions a lookup reads (those whose filter says "maybe", checked against
# what EXPLAIN ANALYZE shows for some of them), and bloom_index_contains against
# the primary-key lookup it guards (a 1M-row table, prepared, present and
# absent keys).
#
# Replaces (or appends) the "Filter index" section of bench/RESULTS.md.
#
# Environment:
#   AMQ_PART_COUNT=50, AMQ_PART_ROWS=1000000, AMQ_COPY_ROWS=1000000,
#   AMQ_ABSENT_KEYS=1000   sizes (smaller ones for trying the script out; the
#                          recorded results use the defaults)
#   AMQ_SECONDS_EACH=5     seconds of each pgbench measurement (a lookup that
#                          takes longer runs once)
#   AMQ_BENCH_SKIP_BUILD=1 use the installed extension
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

PARTS=${AMQ_PART_COUNT:-50}
PART_ROWS=${AMQ_PART_ROWS:-1000000}
COPY_ROWS=${AMQ_COPY_ROWS:-1000000}
ABSENT_KEYS=${AMQ_ABSENT_KEYS:-1000}
SECONDS_EACH=${AMQ_SECONDS_EACH:-5}
COPY_RUNS=${COPY_RUNS:-5}
TIMEOUT_S=300
FPR=0.001
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md
SECTION='## Filter index'

for v in PARTS PART_ROWS COPY_ROWS ABSENT_KEYS SECONDS_EACH COPY_RUNS; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -ge 1 ] || die "$v must be a whole number >= 1"
done
TOTAL=$((PARTS * PART_ROWS))
MULT=7
while [ $((TOTAL % MULT)) -eq 0 ]; do MULT=$((MULT + 2)); done

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'
}

# latency_ms MODE SECONDS SQL: the average latency, in ms, of SQL run by one
# pgbench client for SECONDS (at least once) in query MODE (simple: a custom
# plan each time; prepared, with plan_cache_mode = force_generic_plan: one
# generic plan).
latency_ms() {
	local mode=$1 seconds=$2 sql=$3 file opts=
	file=$(mktemp /tmp/amqfilter-bench.XXXXXX.sql)
	printf '%s\n' "$sql" >"$file"
	[ "$mode" = prepared ] && opts="-c plan_cache_mode=force_generic_plan"
	PGOPTIONS="$opts" "$PG_BIN/pgbench" -n -M "$mode" -T "$seconds" -f "$file" 2>&1 \
		| sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p'
	rm -f "$file"
}

# wall_ms SQL: psql's \timing of one statement, in ms.
wall_ms() {
	run_psql -At -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*$/\1/p' | tail -n 1
}

start=$SECONDS
bench_build_and_install
start_cluster "jit = off" "statement_timeout = '${TIMEOUT_S}s'" \
	"shared_buffers = '1GB'" "checkpoint_timeout = '1h'" "max_wal_size = '8GB'"

log "load: $PARTS partitions of $PART_ROWS rows"
run_psql -q -c "CREATE EXTENSION amqfilter;
	-- the partitions are unlogged; the parent holds no rows (18 refuses
	-- UNLOGGED on it, which 15 and 17 ignored)
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
present=$(run_psql -At -c "SELECT customer_id FROM orders_$((PARTS / 2)) LIMIT 1")
absent=$((TOTAL + 12345))
# 100 customers who have orders, spread over the partitions; and 100 of whom
# only 10 have any
run_psql -q -c "CREATE TABLE customers AS
	SELECT (g::int8 * 499979) % $TOTAL AS id FROM generate_series(1, 100) g;
	CREATE TABLE customers_rare AS
	SELECT CASE WHEN g <= 10 THEN (g::int8 * 499979) % $TOTAL ELSE $TOTAL + g END AS id
	  FROM generate_series(1, 100) g;
	ANALYZE customers; ANALYZE customers_rare;"

# the COPY target: 10 logged partitions, emptied before each run
copy_file=$AMQ_CLUSTER_DIR/copy.data
run_psql -q -c "CREATE TABLE copy_t (id int8 NOT NULL, customer_id int8 NOT NULL, note text)
	PARTITION BY RANGE (id);"
for ((i = 0; i < 10; i++)); do
	run_psql -q -c "CREATE TABLE copy_t_$i PARTITION OF copy_t
		FOR VALUES FROM ($((i * COPY_ROWS / 10))) TO ($(((i + 1) * COPY_ROWS / 10)))"
done
run_psql -q -c "COPY (SELECT g, (g * 7) % $COPY_ROWS, 'order ' || g
	FROM generate_series(0, $((COPY_ROWS - 1))) g) TO '$copy_file'"

JOIN_SQL="SELECT count(*) FROM customers c JOIN orders o ON o.customer_id = c.id"
RARE_SQL="SELECT count(*) FROM customers_rare c JOIN orders o ON o.customer_id = c.id"
declare -A R
SETUPS=(none btree brin amqfilter)
for setup in "${SETUPS[@]}"; do
	log "set-up: $setup"
	case $setup in
		none) ddl= ;;
		btree) ddl="CREATE INDEX orders_c ON orders (customer_id)" ;;
		brin) ddl="CREATE INDEX orders_c ON orders USING brin (customer_id int8_bloom_ops(false_positive_rate = $FPR))" ;;
		amqfilter) ddl="CREATE INDEX orders_c ON orders USING amqfilter (customer_id) WITH (false_positive_rate = $FPR)" ;;
	esac
	if [ -n "$ddl" ]; then
		R[$setup,build]=$(wall_ms "$ddl")
		run_psql -q -c "ANALYZE orders"
		R[$setup,bytes]=$(run_psql -At -c "SELECT sum(pg_relation_size(i.indexrelid))
			FROM pg_inherits h JOIN pg_index i ON i.indrelid = h.inhrelid
			WHERE h.inhparent = 'orders'::regclass")
	else
		R[$setup,build]=0
		R[$setup,bytes]=0
	fi
	for key in present absent; do
		for mode in simple prepared; do
			R[$setup,$key,$mode]=$(latency_ms "$mode" "$SECONDS_EACH" \
				"SELECT * FROM orders WHERE customer_id = ${!key};")
		done
	done
	if [ "$setup" = brin ]; then
		# a BRIN bloom lookup reads every range's summary: 100 of them in a
		# nested loop would take minutes
		R[$setup,join]="not run"
		R[$setup,rare]="not run"
	elif [ "$setup" = none ]; then
		R[$setup,join]=$(latency_ms simple "$SECONDS_EACH" "$JOIN_SQL;")
		R[$setup,rare]=$(latency_ms simple "$SECONDS_EACH" "$RARE_SQL;")
	else
		R[$setup,join]=$(PGOPTIONS="-c enable_hashjoin=off -c enable_mergejoin=off" \
			latency_ms simple "$SECONDS_EACH" "$JOIN_SQL;")
		R[$setup,rare]=$(PGOPTIONS="-c enable_hashjoin=off -c enable_mergejoin=off" \
			latency_ms simple "$SECONDS_EACH" "$RARE_SQL;")
	fi

	# COPY with this set-up's index against without, alternated
	[ -n "$ddl" ] && run_psql -q -c "${ddl/orders_c ON orders/copy_c ON copy_t}"
	with=()
	runs=$COPY_RUNS
	# BRIN bloom's inserts take about 30 s for 1M rows: one run
	[ "$setup" = brin ] && runs=1
	for ((r = 0; r < runs; r++)); do
		run_psql -q -c "TRUNCATE copy_t" -c "CHECKPOINT"
		with+=("$(wall_ms "COPY copy_t FROM '$copy_file'")")
	done
	R[$setup,copy]=$(printf '%s\n' "${with[@]}" | median)
	[ -n "$ddl" ] && run_psql -q -c "DROP INDEX copy_c"

	if [ "$setup" = amqfilter ]; then
		log "amqfilter: partitions read for $ABSENT_KEYS absent customers"
		run_psql -q -c "CREATE TABLE filter_indexes AS
			SELECT i.indexrelid::regclass AS idx
			  FROM pg_inherits h JOIN pg_index i ON i.indrelid = h.inhrelid
			 WHERE h.inhparent = 'orders'::regclass"
		R[scanned]=$(run_psql -At -c "
			SELECT round(avg(n), 4) FROM (
				SELECT k, count(*) FILTER (WHERE bloom_index_contains(f.idx, k)) n
				  FROM generate_series($((TOTAL + 1)), $((TOTAL + ABSENT_KEYS))) k,
				       filter_indexes f
				 GROUP BY k) s")
		# the executor reads exactly those: EXPLAIN ANALYZE of a generic plan
		R[checked]=$(run_psql -At -c "SET plan_cache_mode = force_generic_plan" \
			-c "PREPARE q(int8) AS SELECT * FROM orders WHERE customer_id = \$1" \
			-c "CREATE TEMP TABLE agree (ok boolean)" \
			-c "DO \$\$
				DECLARE
					k int8;
					line text;
					read_tables int;
					maybe int;
				BEGIN
					FOR k IN SELECT generate_series($((TOTAL + 1)), $((TOTAL + 20))) LOOP
						read_tables := 0;
						FOR line IN EXECUTE format('EXPLAIN (ANALYZE, TIMING OFF) EXECUTE q(%s)', k) LOOP
							IF line ~ 'Heap Blocks:.*lossy=[1-9]' THEN
								read_tables := read_tables + 1;
							END IF;
						END LOOP;
						SELECT count(*) INTO maybe FROM filter_indexes f
						 WHERE bloom_index_contains(f.idx, k);
						INSERT INTO agree VALUES (read_tables = maybe);
					END LOOP;
				END \$\$" \
			-c "SELECT count(*) FILTER (WHERE ok) || ' of ' || count(*) FROM agree" | tail -n 1)
		log "amqfilter: bloom_index_contains against the primary key it guards"
		run_psql -q -c "CREATE TABLE users (id int8 PRIMARY KEY);
			INSERT INTO users SELECT g * 3 FROM generate_series(1, 1000000) g;
			CREATE INDEX users_guard ON users USING amqfilter (id);" -c "VACUUM ANALYZE users"
		for key in 300000 300001; do
			R[guard,$key]=$(latency_ms prepared "$SECONDS_EACH" \
				"SELECT bloom_index_contains('users_guard', $key::int8);")
			R[pk,$key]=$(latency_ms prepared "$SECONDS_EACH" "SELECT 1 FROM users WHERE id = $key;")
		done
		# without the round trip: 100,000 of each in one statement (absent
		# keys; the lookups as a LATERAL subquery, one index scan per key),
		# side by side in 7 rounds, medians
		mapfile -t server < <(interleaved_ms 7 \
			"SELECT count(*) FROM generate_series(1, 100000) g
			  WHERE bloom_index_contains('users_guard', g::int8 * 3 + 1)" \
			"SELECT count(*) FROM generate_series(1, 100000) g,
			        LATERAL (SELECT 1 FROM users WHERE id = g::int8 * 3 + 1 LIMIT 1) u")
		R[guard,server]=${server[0]}
		R[pk,server]=${server[1]}
	fi
	[ -n "$ddl" ] && run_psql -q -c "DROP INDEX orders_c"
done

load=$(cut -d' ' -f1-3 /proc/loadavg)
mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
{
	results_without_section "$RESULTS_FILE" "$SECTION"
	echo "$SECTION"
	echo
	echo "bench/index.sh, $(date -u '+%Y-%m-%d'), PostgreSQL $(run_psql -At -c 'SHOW server_version'),"
	echo "$(nproc) cores, load average $load at the end of the run: compare the ratios,"
	echo "measured side by side, rather than the absolute times."
	echo
	echo "orders: $PARTS partitions of $PART_ROWS rows, every customer_id once, scattered;"
	echo "the index on customer_id of every partition; BRIN bloom and amqfilter at"
	echo "false_positive_rate = $FPR. Lookups: SELECT * FROM orders WHERE customer_id = \$1,"
	echo "average latency of one pgbench client over ${SECONDS_EACH} s, ms (custom: a literal, planned each time;"
	echo "generic: prepared, plan_cache_mode = force_generic_plan)."
	echo
	echo "| set-up | size (MB) | build (ms) | absent, custom | absent, generic | present, custom | present, generic | nested loop, 100 customers | nested loop, 10 of 100 with orders | COPY 1M rows (ms) |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for setup in "${SETUPS[@]}"; do
		echo "| $setup | $(mb "${R[$setup,bytes]}") | ${R[$setup,build]} | ${R[$setup,absent,simple]} | ${R[$setup,absent,prepared]} | ${R[$setup,present,simple]} | ${R[$setup,present,prepared]} | ${R[$setup,join]} | ${R[$setup,rare]} | ${R[$setup,copy]} |"
	done
	echo
	echo "The nested loops are forced for the indexed set-ups (hash and merge joins"
	echo "off); without an index the planner's own join. COPY: $COPY_ROWS rows into 10"
	echo "logged partitions with the set-up's index, median of $COPY_RUNS runs (BRIN bloom: one)."
	echo
	echo "amqfilter against the others (custom plans; > 1: amqfilter is faster or smaller):"
	echo
	echo "| measure | target | measured |"
	echo "|---|---|---:|"
	echo "| absent key, no index / amqfilter | >= 100 | $(ratio "${R[none,absent,simple]}" "${R[amqfilter,absent,simple]}") |"
	echo "| absent key, amqfilter / btree | <= 2 | $(ratio "${R[amqfilter,absent,simple]}" "${R[btree,absent,simple]}") |"
	echo "| present key, no index / amqfilter | >= 20 | $(ratio "${R[none,present,simple]}" "${R[amqfilter,present,simple]}") |"
	echo "| absent key, BRIN bloom / amqfilter | > 1 | $(ratio "${R[brin,absent,simple]}" "${R[amqfilter,absent,simple]}") |"
	echo "| present key, BRIN bloom / amqfilter | > 1 | $(ratio "${R[brin,present,simple]}" "${R[amqfilter,present,simple]}") |"
	echo "| absent key, generic plans, no index / amqfilter | >= 100 | $(ratio "${R[none,absent,prepared]}" "${R[amqfilter,absent,prepared]}") |"
	echo "| present key, generic plans, no index / amqfilter | >= 20 | $(ratio "${R[none,present,prepared]}" "${R[amqfilter,present,prepared]}") |"
	echo "| btree size / amqfilter size | >= 4 | $(ratio "${R[btree,bytes]}" "${R[amqfilter,bytes]}") |"
	echo "| COPY with amqfilter / without | <= 1.3 | $(ratio "${R[amqfilter,copy]}" "${R[none,copy]}") |"
	echo "| nested loop with amqfilter / plain join without an index | < 1 | $(ratio "${R[amqfilter,join]}" "${R[none,join]}") |"
	echo "| the same, 10 of the 100 customers with orders | < 1 | $(ratio "${R[amqfilter,rare]}" "${R[none,rare]}") |"
	echo "| partitions read per absent key ($ABSENT_KEYS keys) | <= $(awk -v p=$FPR -v n="$PARTS" 'BEGIN { print 1 + 2 * p * n }') | ${R[scanned]} |"
	echo "| EXPLAIN ANALYZE reads the partitions the filters say \"maybe\" for | all | ${R[checked]} |"
	echo "| bloom_index_contains / primary-key lookup, present key | <= 1 | $(ratio "${R[guard,300000]}" "${R[pk,300000]}") |"
	echo "| bloom_index_contains / primary-key lookup, absent key | <= 1 | $(ratio "${R[guard,300001]}" "${R[pk,300001]}") |"
	echo "| the same in the server, 100,000 absent keys in one statement | <= 1 | $(ratio "${R[guard,server]}" "${R[pk,server]}") |"
	echo
	echo "bloom_index_contains: ${R[guard,300000]} ms (present), ${R[guard,300001]} ms (absent); the"
	echo "primary-key lookup: ${R[pk,300000]} ms and ${R[pk,300001]} ms (pgbench, prepared, ${SECONDS_EACH} s each;"
	echo "mostly the round trip). In the server: ${R[guard,server]} ms for 100,000 calls against"
	echo "${R[pk,server]} ms for 100,000 primary-key lookups (medians of 7 rounds, side by side)."
} >"$RESULTS_FILE.new"
mv "$RESULTS_FILE.new" "$RESULTS_FILE"
results_section "$RESULTS_FILE" "$SECTION"
echo "index bench: done in $((SECONDS - start))s; results written to ${RESULTS_FILE#"$AMQ_ROOT"/}"
