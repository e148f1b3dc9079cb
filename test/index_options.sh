#!/usr/bin/env bash
# test/index_options.sh: ALTER INDEX ... SET / RESET on the amqfilter index of a
# partitioned table, where sessions meet and outside a normal server.
#
#   sudo bash test/index_options.sh
#
# Against the installed extension (test/run.sh builds it first), in a throwaway
# cluster (test/lib.sh's start_cluster); sql/index_options.sql covers what one
# session sees.  Here:
#
#   1. a role that does not own the index is refused at once while another
#      session holds the index locked (the ownership check comes before any
#      lock, as PostgreSQL's own ALTER INDEX does it): as a session's first
#      statement (the extension's event trigger) and once the library is
#      loaded (the hook), under a lock_timeout it would otherwise run into;
#   2. the owner's statement waits for that lock and then sets every index;
#   3. single-user mode, where no event trigger fires: with the library
#      loaded the options are set; as the session's first statement it is
#      PostgreSQL's own, which refuses options on a partitioned index.
#
# It prints PASS or FAIL per check and exits non-zero when any check failed.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start=$SECONDS
start_cluster
DATA=$AMQ_CLUSTER_DIR/data
HOLDER_PID=

cleanup() {
	if [ -n "$HOLDER_PID" ]; then
		kill "$HOLDER_PID" 2>/dev/null || true
		wait "$HOLDER_PID" 2>/dev/null || true
	fi
	stop_cluster
}
trap cleanup EXIT

q() { run_psql -q -At "$@"; }

# expect NAME ACTUAL EXPECTED
expect() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: got '$2', expected '$3'"; fi
}

# the options of every index of the tree, one line each, partitioned ones first
OPTIONS_SQL="SELECT string_agg(c.relname || '=' || coalesce(array_to_string(c.reloptions, ','), '-'), ' '
                ORDER BY t.level, c.relname)
               FROM pg_partition_tree('ot_k') t JOIN pg_class c ON c.oid = t.relid"

q -c "CREATE EXTENSION amqfilter;
	CREATE TABLE ot (id int, k int8) PARTITION BY RANGE (id);
	CREATE TABLE ot_1 PARTITION OF ot FOR VALUES FROM (0) TO (1000);
	CREATE TABLE ot_2 PARTITION OF ot FOR VALUES FROM (1000) TO (2000);
	INSERT INTO ot SELECT g, g FROM generate_series(0, 1999) g;
	CREATE INDEX ot_k ON ot USING amqfilter (k);
	CREATE ROLE ot_other LOGIN;"

# 1. another session holds the index (ACCESS EXCLUSIVE, from its own ALTER
# INDEX) until it is told to go on
run_psql -q -At -c "BEGIN" -c "ALTER INDEX ot_k SET (max_generations = 4)" \
	-c "SELECT pg_sleep(60)" -c "COMMIT" >/dev/null 2>&1 &
HOLDER_PID=$!
held=f
for ((i = 0; i < 120; i++)); do
	held=$(q -c "SELECT EXISTS (SELECT FROM pg_locks WHERE relation = 'ot_k'::regclass
	                            AND mode = 'AccessExclusiveLock' AND granted
	                            AND pid <> pg_backend_pid())")
	[ "$held" = t ] && break
	sleep 0.25
done
expect "another session holds ot_k locked" "$held" t

# $1: SQL run first in the session (nothing: the statement is the session's first)
non_owner() {
	local first=$1 out
	local -a pre=()
	[ -z "$first" ] || pre=(-c "$first")
	out=$(PGOPTIONS='-c lock_timeout=3s' run_psql -q -At -U ot_other -v VERBOSITY=verbose \
		"${pre[@]}" -c "ALTER INDEX ot_k SET (false_positive_rate = 0.05)" 2>&1) || true
	grep -o '42501\|55P03' <<<"$out" | head -n 1
}
t0=$SECONDS
expect "non-owner, a session's first statement: refused (42501), not left waiting" \
	"$(non_owner "")" 42501
expect "non-owner, the library loaded: refused (42501), not left waiting" \
	"$(non_owner "SELECT bloom_empty(10, 0.01) IS NOT NULL")" 42501
if [ $((SECONDS - t0)) -lt 3 ]; then
	pass "the non-owners did not wait for the lock ($((SECONDS - t0))s)"
else
	fail "the non-owners waited for the lock ($((SECONDS - t0))s)"
fi

# 2. the owner's statement, a session's first, waits for the lock
run_psql -q -At -c "ALTER INDEX ot_k SET (false_positive_rate = 0.02)" \
	>"$AMQ_CLUSTER_DIR/owner.log" 2>&1 &
owner_pid=$!
waiting=f
for ((i = 0; i < 120; i++)); do
	waiting=$(q -c "SELECT EXISTS (SELECT FROM pg_locks WHERE relation = 'ot_k'::regclass
	                               AND NOT granted)")
	[ "$waiting" = t ] && break
	sleep 0.25
done
expect "the owner's ALTER INDEX waits for the lock" "$waiting" t
q -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity
       WHERE query = 'SELECT pg_sleep(60)' AND state = 'active'" >/dev/null
wait "$HOLDER_PID" 2>/dev/null || true
HOLDER_PID=
if wait "$owner_pid"; then
	pass "the owner's ALTER INDEX ran once the lock was released"
else
	fail "the owner's ALTER INDEX ran once the lock was released ($(cat "$AMQ_CLUSTER_DIR/owner.log"))"
fi
expect "the owner's options are on every index (the holder's rolled back)" \
	"$(q -c "$OPTIONS_SQL")" \
	"ot_k=false_positive_rate=0.02 ot_1_k_idx=false_positive_rate=0.02 ot_2_k_idx=false_positive_rate=0.02"

# 3. single-user mode: no event triggers
as_cluster_owner "$PG_BIN/pg_ctl" --pgdata="$DATA" --mode=fast --wait stop >/dev/null
single() {
	as_cluster_owner "$PG_BIN/postgres" --single -j -D "$DATA" postgres 2>&1
}
out=$(printf '%s;\n\n' "LOAD 'amqfilter'" "ALTER INDEX ot_k SET (false_positive_rate = 0.03)" | single) || true
if grep -q 'ERROR' <<<"$out"; then
	fail "single-user mode, the library loaded: ALTER INDEX runs"
	printf '%s\n' "$out" | grep -A2 ERROR | head -n 10
else
	pass "single-user mode, the library loaded: ALTER INDEX runs"
fi
out=$(printf '%s;\n\n' "ALTER INDEX ot_k RESET (false_positive_rate)" | single) || true
if grep -q 'not supported for partitioned indexes' <<<"$out"; then
	pass "single-user mode, a session's first statement: PostgreSQL's own, refused"
else
	fail "single-user mode, a session's first statement: PostgreSQL's own, refused"
	printf '%s\n' "$out" | head -n 10
fi
as_cluster_owner "$PG_BIN/pg_ctl" --pgdata="$DATA" --log="$AMQ_CLUSTER_DIR/server.log" \
	--wait --timeout=60 start >/dev/null
wait_until_ready
expect "single-user mode: the options are on every index" \
	"$(q -c "$OPTIONS_SQL")" \
	"ot_k=false_positive_rate=0.03 ot_1_k_idx=false_positive_rate=0.03 ot_2_k_idx=false_positive_rate=0.03"

log "index_options: $((SECONDS - start))s"
checks_summary index_options
