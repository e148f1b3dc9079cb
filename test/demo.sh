#!/usr/bin/env bash
# test/demo.sh: see amqfilter work.
#
#   bash test/demo.sh [--dir DIR] [--no-build]       as root (or with sudo)
#
#   --dir DIR     make the cluster in DIR (new or empty) and leave it there,
#                 stopped, when done: start it again with
#                 pg_ctl -D DIR/data start (its socket is in DIR/socket)
#   --no-build    use the extension already installed: no build, no install
#
# The port is the first free one from AMQ_FIRST_PORT (55432) on, as for
# test/run.sh.
#
# Builds and installs the extension, starts a throwaway PostgreSQL 15 cluster
# (one core per query, JIT off, the library preloaded) and loads an events table
# of $EVENTS rows in $DAYS daily partitions, with an amqfilter index on user_id,
# and a table of 1,000 VIP users, all active in the last three days.  Then it
# shows the three things amqfilter is for, each checked against the plain
# answer:
#
#   1. the filter index skipping partitions: EXPLAIN (ANALYZE, BUFFERS) of a
#      lookup of a user who has events and of one who has none, against the
#      blocks a scan of every partition reads;
#   2. a runtime join filter: the join of events with the VIP users, EXPLAIN
#      ANALYZE with amqfilter.join_filter on and off (same count);
#   3. a stored filter probed in WHERE: a bloom filter of the VIP users kept in
#      a table, asked for a few ids, and put in front of the same join.
#
# Takes about a minute; removes the cluster when done, unless --dir.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

EVENTS=${AMQ_DEMO_EVENTS:-3000000}
DAYS=90
USER_RANGE=50000000
RUNS=3

load_data() {
	log "demo: loading $EVENTS events in $DAYS daily partitions, 1,000 VIP users"
	run_psql -q <<-SQL
		CREATE EXTENSION amqfilter;
		CREATE TABLE events (day date, user_id int8, amount int) PARTITION BY RANGE (day);
		SELECT format('CREATE TABLE events_%s PARTITION OF events FOR VALUES FROM (%L) TO (%L)',
		              to_char(d, 'MMDD'), d, d + 1)
		  FROM generate_series(0, $DAYS - 1) i, LATERAL (SELECT date '2026-01-01' + i AS d) x \gexec
		-- user ids spread by a multiplicative permutation: deterministic, no random()
		INSERT INTO events
		SELECT date '2026-01-01' + (g * $DAYS / $EVENTS)::int,
		       1 + (g * 2654435761) % $USER_RANGE, (g % 1000)::int
		  FROM generate_series(0::int8, $EVENTS - 1) g;
		-- the key filter of every partition, kept current by PostgreSQL; at
		-- 1,000 keys a join asks for, 0.0001 keeps false matches to a few
		-- partitions (docs/recipes.md)
		CREATE INDEX events_user_filter ON events USING amqfilter (user_id)
		  WITH (false_positive_rate = 0.0001);
		-- 1,000 users seen in the last three days
		CREATE TABLE vip_users AS
		SELECT DISTINCT user_id FROM events
		 WHERE day >= date '2026-01-01' + $DAYS - 3 ORDER BY user_id LIMIT 1000;
		ALTER TABLE vip_users ADD PRIMARY KEY (user_id);
		VACUUM ANALYZE;
	SQL
}

# indent: the output of a step, set off from the narration
indent() { sed 's/^/    /'; }

show_index_skip() {
	local present absent all_blocks
	present=$(run_psql -At -c "SELECT user_id FROM events_0101 ORDER BY user_id OFFSET 7 LIMIT 1")
	absent=$((USER_RANGE + 17))
	all_blocks=$(run_psql -At -c "SELECT sum(pg_relation_size(c.oid) / 8192)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'events'::regclass")
	printf '\n=== 1. The filter index skips partitions (plain SQL) ===\n'
	echo "CREATE INDEX events_user_filter ON events USING amqfilter (user_id);"
	echo "A scan of every partition reads $all_blocks blocks. A user with events:"
	run_psql -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
		SELECT * FROM events WHERE user_id = $present" | indent
	echo "A user with none: no partition is read."
	run_psql -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
		SELECT * FROM events WHERE user_id = $absent" | indent
	echo "Which partitions may hold the first user (a set you can join):"
	run_psql -At -c "SELECT string_agg(c::text, ', ')
		FROM amqfilter_index_candidates('events_user_filter', $present::int8) c" | indent
}

# join_summary: what an EXPLAIN ANALYZE of the join says the filters did,
# summed over the partitions' scans, and its execution time
join_summary() {
	awk '
		/Seq Scan on events_/ { scans++; if (match($0, /rows=[0-9]+/)) rows += substr($0, RSTART + 5, RLENGTH - 5) }
		/Skipped by Filter Index:/ { skipped++ }
		/Blocks Read by Filter Index Ranges:/ { ranged++; split($0, w, /: /); split(w[2], n, / /); read += n[1]; of += n[3] }
		/Rows Rejected by Runtime Filter:/ { split($0, w, /: /); rejected += w[2] }
		/Execution Time:/ { time = $0; sub(/^ */, "", time) }
		END {
			printf "    partition scans: %d, rows they returned: %d\n", scans, rows
			if (skipped + ranged > 0) {
				printf "    skipped whole, their index holding none of the keys: %d\n", skipped
				printf "    read only the ranges their index gave: %d (%d of %d blocks)\n", ranged, read, of
				printf "    rows the runtime filter rejected: %d\n", rejected
			}
			printf "    %s\n", time
		}'
}

show_join_filter() {
	local join on_count off_count on_ms off_ms
	join="SELECT count(*), sum(e.amount) FROM events e JOIN vip_users v ON v.user_id = e.user_id"
	printf '\n=== 2. A runtime join filter ===\n'
	echo "$join"
	on_count=$(run_psql -At -c "SET amqfilter.join_filter = on" -c "$join" | tail -n 1)
	off_count=$(run_psql -At -c "$join")
	[ "$on_count" = "$off_count" ] \
		|| die "the join counted $on_count with the filter and $off_count without"
	echo "SET amqfilter.join_filter = on: the hash join's keys become a filter that"
	echo "the partitions' scans test, and each partition's index is asked first:"
	run_psql -c "SET amqfilter.join_filter = on" \
		-c "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) $join" | join_summary
	echo "Off (the default):"
	run_psql -c "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) $join" | join_summary
	on_ms=$(median_exec_ms "$RUNS" "SET amqfilter.join_filter = on; $join")
	off_ms=$(median_exec_ms "$RUNS" "$join")
	printf 'Same answer (%s); median of %s runs: %.1f ms on, %.1f ms off (%sx).\n' \
		"$on_count" "$RUNS" "$on_ms" "$off_ms" "$(ratio "$off_ms" "$on_ms")"
}

show_stored_filter() {
	local exact filtered present
	printf '\n=== 3. A stored filter probed in WHERE ===\n'
	run_psql -q -c "CREATE TABLE vip_filter AS SELECT bloom_agg(user_id, 0.01) AS f FROM vip_users"
	echo "CREATE TABLE vip_filter AS SELECT bloom_agg(user_id, 0.01) AS f FROM vip_users;"
	run_psql -c "SELECT i.layout, i.bytes, i.inserted, round(i.est_fpr::numeric, 4) AS est_fpr
		FROM vip_filter, LATERAL bloom_info(f) i" | indent
	present=$(run_psql -At -c "SELECT min(user_id) FROM vip_users")
	echo "Is each id a VIP? A 'false' is certain; a 'true' is a 'maybe' (1% of absent ids):"
	run_psql -c "SELECT id, (SELECT f FROM vip_filter) @> id AS maybe_vip,
		       EXISTS (SELECT FROM vip_users WHERE user_id = id) AS vip
		  FROM unnest(ARRAY[$present, $present + 1, 42, 4242]::int8[]) id" | indent
	exact=$(run_psql -At -c "SELECT count(*) FROM events e WHERE e.user_id IN (SELECT user_id FROM vip_users)")
	filtered=$(run_psql -At -c "SELECT count(*) FROM events e
		WHERE ((SELECT f FROM vip_filter) @> e.user_id) IS NOT FALSE
		  AND e.user_id IN (SELECT user_id FROM vip_users)")
	[ "$exact" = "$filtered" ] || die "the pre-filtered join counted $filtered, the plain one $exact"
	echo "The filter in front of the join, as a WHERE clause (the README's recipe):"
	run_psql -c "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF)
		SELECT count(*) FROM events e
		 WHERE ((SELECT f FROM vip_filter) @> e.user_id) IS NOT FALSE
		   AND e.user_id IN (SELECT user_id FROM vip_users)" \
		| awk '/Rows Removed by Filter:/ { split($0, w, /: /); removed += w[2] }
		       /Execution Time:/ { time = $0; sub(/^ */, "", time) }
		       END { printf "    rows the filter removed before the join: %d\n    %s\n", removed, time }'
	echo "Same count as the plain join: $exact."
}

usage() {
	echo "usage: bash test/demo.sh [--dir DIR] [--no-build]" >&2
	exit 2
}

main() {
	local start=$SECONDS dir= build=yes
	local -a at=()

	while [ $# -gt 0 ]; do
		case $1 in
			--dir) [ $# -ge 2 ] || usage; dir=$2; shift 2 ;;
			--no-build) build=no; shift ;;
			*) usage ;;
		esac
	done
	[ -z "$dir" ] || at=(--at "$dir")
	if [ "$build" = yes ]; then
		ensure_packages
		build_and_install >/dev/null
	else
		log "demo: using the installed extension (--no-build)"
	fi
	start_cluster "${at[@]}" "max_parallel_workers_per_gather = 0" "jit = off" \
		"shared_buffers = '1GB'" "session_preload_libraries = 'amqfilter'"
	load_data
	show_index_skip
	show_join_filter
	show_stored_filter
	if [ -n "$dir" ]; then
		stop_cluster --keep
		echo
		echo "demo: the cluster is in $dir: pg_ctl -D $dir/data start"
	else
		stop_cluster
	fi
	echo
	echo "demo: done in $((SECONDS - start))s"
}

main "$@"
