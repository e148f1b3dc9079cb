#!/usr/bin/env bash
# bench/index_trust.sh: what the filter index's guarantees cost (docs/safety.md,
# "The filter index"), and an index built on an empty table loaded with
# $GROWTH_KEYS distinct keys.
#
#   sudo bash bench/index_trust.sh
#
# Builds and installs the extension (unless AMQ_BENCH_SKIP_BUILD=1), starts a
# throwaway cluster (JIT off, every statement under statement_timeout) and
# measures, side by side in one run:
#
#   insert      one-row INSERT transactions (pgbench, one client, random keys)
#               into a table with no index, a btree, and an amqfilter index
#               built empty: the count of keys the index keeps per generation
#               costs one metapage WAL record per transaction;
#   copy        COPY of $COPY_ROWS rows into a table whose index was built
#               empty, against no index (alternated, medians);
#   lookup      an absent key with a literal, as a client waits for it
#               (pgbench: parse, plan with the estimate's probe, run), on a
#               1M-row table, by its owner;
#   contains    bloom_index_contains over 1M values (each call checks that the
#               index is valid for the caller's snapshot);
#   growth      an index created on an empty table at the default rate, loaded
#               with $GROWTH_KEYS distinct keys in ten INSERTs: every INSERT
#               succeeds; per step its generations, size and time; then its
#               rate of "maybe" over 1M absent keys against the one
#               amqfilter_index_info reports, and 1M of its keys, all found.
#
# Replaces (or appends) the "Filter index: what trust costs" section of
# bench/RESULTS.md.
#
# Environment:
#   AMQ_GROWTH_KEYS=100000000, AMQ_COPY_ROWS=500000   sizes
#   AMQ_SECONDS_EACH=10    seconds of each pgbench measurement
#   AMQ_BENCH_SKIP_BUILD=1 use the installed extension
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

GROWTH_KEYS=${AMQ_GROWTH_KEYS:-100000000}
COPY_ROWS=${AMQ_COPY_ROWS:-500000}
SECONDS_EACH=${AMQ_SECONDS_EACH:-10}
TIMEOUT_S=1800
RESULTS_FILE=$AMQ_ROOT/bench/RESULTS.md
SECTION='## Filter index: what trust costs'

bench_build_and_install
start_cluster "jit = off" "statement_timeout = '${TIMEOUT_S}s'" \
	"shared_buffers = '1GB'" "max_wal_size = '8GB'"
q() { run_psql -q -At "$@"; }
q -c "CREATE EXTENSION amqfilter"

declare -A R

# insert: one-row transactions, each set-up in turn, twice, alternating
log "insert"
q -c "CREATE TABLE w_none (k int8);
	CREATE TABLE w_btree (k int8); CREATE INDEX ON w_btree (k);
	CREATE TABLE w_amq (k int8); CREATE INDEX w_amq_k ON w_amq USING amqfilter (k);"
for setup in none btree amq none btree amq; do
	tps=$(pgbench_stat tps simple "$SECONDS_EACH" \
		"INSERT INTO w_$setup VALUES ((random() * 9e18)::int8);")
	R[$setup,insert]="${R[$setup,insert]:-} $tps"
done
for setup in none btree amq; do
	R[$setup,insert]=$(tr ' ' '\n' <<<"${R[$setup,insert]}" | grep . | median 0)
	log "insert, $setup: ${R[$setup,insert]} tps"
done

# copy: COPY into a table whose index was built empty, against none
log "copy"
q -c "CREATE TABLE c_src AS SELECT (g::int8 * 2654435761) % 9000000000000000000 AS k
	FROM generate_series(1, $COPY_ROWS) g;
	COPY c_src TO '/tmp/amqfilter-trust-copy.dat';"
copy_ms() {
	q -c "DROP TABLE IF EXISTS c_dst; CREATE TABLE c_dst (k int8);"
	[ "$1" = none ] || q -c "CREATE INDEX c_dst_k ON c_dst USING amqfilter (k)"
	client_ms "COPY c_dst FROM '/tmp/amqfilter-trust-copy.dat'"
}
for round in 1 2 3 4 5; do
	R[copy,none]="${R[copy,none]:-} $(copy_ms none)"
	R[copy,amq]="${R[copy,amq]:-} $(copy_ms amq)"
done
R[copy,none]=$(tr ' ' '\n' <<<"${R[copy,none]}" | grep . | median 1)
R[copy,amq]=$(tr ' ' '\n' <<<"${R[copy,amq]}" | grep . | median 1)
log "copy: ${R[copy,amq]} ms with the index, ${R[copy,none]} ms without"
rm -f /tmp/amqfilter-trust-copy.dat

# lookup and contains on a 1M-row table
log "lookup"
q -c "CREATE TABLE l (k int8, pad text);
	INSERT INTO l SELECT g * 7, 'x' FROM generate_series(1, 1000000) g;
	CREATE INDEX l_k ON l USING amqfilter (k); ANALYZE l;"
R[lookup]=$(pgbench_stat latency simple "$SECONDS_EACH" "SELECT * FROM l WHERE k = 3;")
R[contains]=$(client_ms "SELECT count(*) FROM generate_series(1, 1000000) g WHERE bloom_index_contains('l_k', g::int8 * 7 + 1)")
log "lookup: ${R[lookup]} ms; contains: ${R[contains]} ms"

# growth from empty
log "growth: $GROWTH_KEYS keys"
q -c "CREATE UNLOGGED TABLE g (k int8);
	CREATE INDEX g_k ON g USING amqfilter (k);"
STEP=$((GROWTH_KEYS / 10))
GROWTH_ROWS=()
for ((i = 0; i < 10; i++)); do
	lo=$((i * STEP + 1)) hi=$(((i + 1) * STEP))
	ms=$(client_ms "INSERT INTO g SELECT g FROM generate_series($lo, $hi) g")
	info=$(q -F ' | ' -c "SELECT generations, pg_size_pretty(bytes), saturated FROM amqfilter_index_info('g_k')")
	GROWTH_ROWS+=("| $hi | $ms | $info |")
	log "growth: $hi keys in, $info"
done
read -r measured reported target saturated < <(q -F ' ' -c "
	SELECT round((count(*) FILTER (WHERE bloom_index_contains('g_k', -g::int8)))::numeric / 1000000, 6),
		   round(i.false_positive_rate::numeric, 6), i.target_false_positive_rate, i.saturated
	  FROM generate_series(1, 1000000) g, amqfilter_index_info('g_k') i
	 GROUP BY i.false_positive_rate, i.target_false_positive_rate, i.saturated")
missed=$(q -c "SELECT count(*) FROM generate_series(1, $GROWTH_KEYS, $((GROWTH_KEYS / 1000000 > 0 ? GROWTH_KEYS / 1000000 : 1))) g
	WHERE NOT bloom_index_contains('g_k', g::int8)")

{
	results_provenance bench/index_trust.sh
	echo
	echo "One client, pgbench, ${SECONDS_EACH} s each, medians of two alternating rounds:"
	echo
	echo "| measure | no index | btree | amqfilter (built empty) |"
	echo "|---|---:|---:|---:|"
	echo "| one-row INSERT transactions (tps) | ${R[none,insert]} | ${R[btree,insert]} | ${R[amq,insert]} |"
	echo
	echo "- COPY of $COPY_ROWS rows into a table whose index was built empty: ${R[copy,amq]} ms against"
	echo "  ${R[copy,none]} ms without it ($(ratio "${R[copy,amq]}" "${R[copy,none]}")x; medians of 5, alternated)."
	echo "- An absent key with a literal on a 1M-row table, as a client waits for it"
	echo "  (parse, plan with the estimate's probe, run): ${R[lookup]} ms."
	echo "- bloom_index_contains over 1M values: ${R[contains]} ms."
	echo
	echo "An index created on an empty table at the default false_positive_rate (0.01),"
	echo "loaded with $GROWTH_KEYS distinct keys in ten INSERTs (an UNLOGGED table):"
	echo
	echo "| keys in | INSERT (ms) | generations | size | saturated |"
	echo "|---:|---:|---:|---:|---|"
	printf '%s\n' "${GROWTH_ROWS[@]}"
	echo
	echo "Rate of \"maybe\" over 1M absent keys: $measured measured, $reported reported by"
	echo "amqfilter_index_info (target $target); saturated: $saturated. Keys not found, of"
	echo "1M of the loaded ones: $missed."
} | results_replace_section "$RESULTS_FILE" "$SECTION"
log "results in $RESULTS_FILE"
