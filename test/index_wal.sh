#!/usr/bin/env bash
# test/index_wal.sh: the amqfilter index through WAL, crashes and concurrency.
#
#   sudo bash test/index_wal.sh
#
# Against the installed extension (test/run.sh builds it first), in throwaway
# clusters (test/lib.sh's start_cluster):
#
#   1. a primary with wal_consistency_checking = 'generic' (every generic WAL
#      record carries the page as the primary had it, and replay compares the
#      page it rebuilt with it, byte for byte: a change the WAL misses is a
#      FATAL on the standby) and a streaming standby made by pg_basebackup; rows
#      inserted on the primary after the build, by INSERT and COPY, enough to
#      add generations, are found through the index on the standby, which has
#      the primary's generations; ALTER INDEX ... SET on the filter index of
#      a partitioned table is refused there as DDL is (25006), as a session's
#      first statement and with the library loaded;
#   2. a crash of the primary (pg_ctl stop -m immediate) right after committed
#      inserts: after recovery, every row is found through the index;
#   3. concurrent writers and readers (pgbench, four clients): each transaction
#      inserts a new key and finds it through the index, and finds a key that
#      another client committed earlier; no lookup ever misses;
#   4. REINDEX INDEX CONCURRENTLY under readers: four pgbench clients (two
#      sending plain queries, two prepared statements) ask bloom_index_contains
#      of a table's index, amqfilter_index_candidates of a partitioned
#      table's, and amqfilter_index_info of both, while both indexes are
#      reindexed concurrently 20 times; a statement that named an index just
#      before a swap calls with the retired index's OID (not valid, dead, or
#      dropped), and gets "maybe", never an error and never a "no" for a key
#      the table holds.
#
# It prints PASS or FAIL per check and exits non-zero when any check failed.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start=$SECONDS
start_cluster "wal_level = replica" "max_wal_senders = 4" \
	"wal_consistency_checking = 'generic'"
PRIMARY_DIR=$AMQ_CLUSTER_DIR PRIMARY_HOST=$PGHOST PRIMARY_PORT=$PGPORT

q() { run_psql -q -At "$@"; }

q -c "CREATE EXTENSION amqfilter;
	CREATE TABLE t (id bigserial PRIMARY KEY, k int8 NOT NULL);
	INSERT INTO t (k) SELECT g * 7 FROM generate_series(1, 2000) g;
	CREATE INDEX t_k ON t USING amqfilter (k) WITH (false_positive_rate = 0.01);
	-- the keys of t the index says are not there (lossy: a scan through
	-- it reads the whole table for any key it holds, so keys are asked of
	-- the index itself; found() checks a few through the planner)
	CREATE FUNCTION missed() RETURNS bigint LANGUAGE sql AS
		\$\$ SELECT count(*) FROM t WHERE NOT bloom_index_contains('t_k', k) \$\$;
	CREATE FUNCTION found(v int8) RETURNS bigint LANGUAGE plpgsql AS \$\$
	DECLARE
		n bigint;
	BEGIN
		SET LOCAL enable_seqscan = off;
		SET LOCAL enable_indexscan = off;
		SELECT count(*) INTO n FROM t WHERE k = v;
		RETURN n;
	END \$\$;
	CREATE TABLE pt (id int, k int8) PARTITION BY RANGE (id);
	CREATE TABLE pt_1 PARTITION OF pt FOR VALUES FROM (0) TO (1000);
	CREATE INDEX pt_k ON pt USING amqfilter (k);"

# the standby, from a base backup, streaming
STANDBY_DIR=$(mktemp -d /tmp/amqfilter-standby.XXXXXX)
AMQ_CLUSTER_DIRS+=("$STANDBY_DIR")
chmod 755 "$STANDBY_DIR"
mkdir "$STANDBY_DIR/socket"
is_root && chown -R "$(cluster_owner):" "$STANDBY_DIR"
as_cluster_owner "$PG_BIN/pg_basebackup" -h "$PRIMARY_HOST" -p "$PRIMARY_PORT" \
	-U "$PGUSER" -D "$STANDBY_DIR/data" -R -X stream --no-sync >/dev/null
STANDBY_PORT=$(find_free_port)
{
	echo "port = $STANDBY_PORT"
	echo "unix_socket_directories = '$STANDBY_DIR/socket'"
	echo "hot_standby = on"
} >>"$STANDBY_DIR/data/postgresql.conf"
as_cluster_owner "$PG_BIN/pg_ctl" --pgdata="$STANDBY_DIR/data" \
	--log="$STANDBY_DIR/server.log" --wait --timeout=60 start >/dev/null
sb() { PGHOST=$STANDBY_DIR/socket PGPORT=$STANDBY_PORT run_psql -q -At "$@"; }

# writes after the build, enough for new generations
q -c "INSERT INTO t (k) SELECT g * 7 FROM generate_series(2001, 40000) g;
	COPY t (k) FROM PROGRAM 'seq 1 3 30000';
	UPDATE t SET k = k + 1 WHERE id % 97 = 0;"
gens=$(q -c "SELECT generations FROM amqfilter_index_info('t_k')")
if [ "$gens" -gt 1 ]; then
	pass "primary: the inserts added generations ($gens)"
else
	fail "primary: the inserts added generations ($gens)"
fi

# wait for the standby to replay everything the primary wrote
lsn=$(q -c "SELECT pg_current_wal_lsn()")
replayed=f
for ((i = 0; i < 120; i++)); do
	replayed=$(sb -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn") || true
	[ "$replayed" = t ] && break
	sleep 0.5
done
if [ "$replayed" = t ]; then
	pass "standby: replayed the primary's WAL, every generic record checked"
else
	fail "standby: replayed the primary's WAL ($replayed)"
	tail -n 20 "$STANDBY_DIR/server.log" || true
fi
missed=$(sb -c "SELECT missed() + (SELECT count(*) FROM unnest(ARRAY[14007, 279993, 28, 29998]) v WHERE found(v) = 0)") || missed=error
if [ "$missed" = 0 ]; then
	pass "standby: every key inserted on the primary found through the index"
else
	fail "standby: every key inserted on the primary found through the index ($missed missed)"
fi
same=$(sb -c "SELECT generations, entries FROM amqfilter_index_info('t_k')") || same=error
if [ "$same" = "$(q -c "SELECT generations, entries FROM amqfilter_index_info('t_k')")" ]; then
	pass "standby: the index has the primary's generations and fill ($same)"
else
	fail "standby: the index has the primary's generations and fill ($same)"
fi
# ALTER INDEX on the partitioned filter index: refused during recovery like
# PostgreSQL's own DDL, before anything is looked up or locked
for first in "" "SELECT count(*) FROM amqfilter_index_info('pt_k')"; do
	what="a session's first statement"
	pre=()
	[ -z "$first" ] || { what="the library loaded"; pre=(-c "$first"); }
	out=$(sb -v VERBOSITY=verbose "${pre[@]}" \
		-c "ALTER INDEX pt_k SET (false_positive_rate = 0.02)" 2>&1) || true
	if grep -q '25006' <<<"$out"; then
		pass "standby: ALTER INDEX on a partitioned filter index refused (25006), $what"
	else
		fail "standby: ALTER INDEX on a partitioned filter index refused (25006), $what"
		printf '%s\n' "$out" | head -n 5
	fi
done
as_cluster_owner "$PG_BIN/pg_ctl" --pgdata="$STANDBY_DIR/data" --mode=fast stop >/dev/null

# a crash right after committed inserts (flushed: the test clusters commit
# asynchronously otherwise), then recovery
q -c "SET synchronous_commit = on" \
	-c "INSERT INTO t (k) SELECT g * 7 FROM generate_series(40001, 60000) g;"
as_cluster_owner "$PG_BIN/pg_ctl" --pgdata="$PRIMARY_DIR/data" --mode=immediate stop >/dev/null
as_cluster_owner "$PG_BIN/pg_ctl" --pgdata="$PRIMARY_DIR/data" \
	--log="$PRIMARY_DIR/server.log" --wait --timeout=120 start >/dev/null
wait_until_ready
missed=$(q -c "SELECT missed()") || missed=error
rows=$(q -c "SELECT found(60000 * 7)")
if [ "$missed" = 0 ] && [ "$rows" = 1 ]; then
	pass "crash recovery: every committed key found through the index"
else
	fail "crash recovery: every committed key found through the index ($missed missed, $rows)"
fi

# concurrent writers and readers
q -c "CREATE TABLE c (id bigserial PRIMARY KEY, k int8 NOT NULL);
	INSERT INTO c (k) VALUES (0);
	CREATE INDEX c_k ON c USING amqfilter (k) WITH (false_positive_rate = 0.01);
	-- inserts a new key and finds it, and finds a key committed before
	CREATE FUNCTION write_and_find() RETURNS void LANGUAGE plpgsql AS \$\$
	DECLARE
		v int8 := (random() * 9e15)::int8;
		old int8;
	BEGIN
		SET LOCAL enable_seqscan = off;
		SET LOCAL enable_indexscan = off;
		INSERT INTO c (k) VALUES (v);
		IF NOT EXISTS (SELECT FROM c WHERE k = v) THEN
			RAISE EXCEPTION 'own key % missed', v;
		END IF;
		SELECT k INTO old FROM c WHERE id = (SELECT max(id) FROM c) - 5;
		IF old IS NOT NULL AND NOT EXISTS (SELECT FROM c WHERE k = old) THEN
			RAISE EXCEPTION 'committed key % missed', old;
		END IF;
	END \$\$;"
script=$PRIMARY_DIR/write_and_find.sql
echo "SELECT write_and_find();" >"$script"
if "$PG_BIN/pgbench" -n -c 4 -j 2 -T 8 -f "$script" >"$PRIMARY_DIR/pgbench.log" 2>&1 \
	&& ! grep -q 'ERROR\|aborted' "$PRIMARY_DIR/pgbench.log"; then
	txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$PRIMARY_DIR/pgbench.log")
	pass "concurrency: $txns transactions of four clients, each found its key and an earlier one"
else
	fail "concurrency: pgbench with four writers and readers"
	tail -n 20 "$PRIMARY_DIR/pgbench.log"
fi
gens=$(q -c "SELECT generations FROM amqfilter_index_info('c_k')")
missed=$(q -c "SELECT count(*) FROM c x WHERE NOT bloom_index_contains('c_k', x.k)")
if [ "$missed" = 0 ]; then
	pass "concurrency: every key of c in the index afterwards ($gens generations)"
else
	fail "concurrency: every key of c in the index afterwards ($missed missed)"
fi

# REINDEX CONCURRENTLY under readers: each transaction fails (division by
# zero) on a "no" for a key the table holds, and aborts its client on an error
q -c "CREATE TABLE ct (id bigserial PRIMARY KEY, k int8 NOT NULL);
	INSERT INTO ct (k) SELECT g FROM generate_series(1, 20000) g;
	CREATE INDEX ct_k ON ct USING amqfilter (k);
	CREATE TABLE ctp (k int8 NOT NULL) PARTITION BY RANGE (k);
	CREATE TABLE ctp_0 PARTITION OF ctp FOR VALUES FROM (1) TO (5001);
	CREATE TABLE ctp_1 PARTITION OF ctp FOR VALUES FROM (5001) TO (10001);
	CREATE TABLE ctp_2 PARTITION OF ctp FOR VALUES FROM (10001) TO (15001);
	CREATE TABLE ctp_3 PARTITION OF ctp FOR VALUES FROM (15001) TO (20001);
	INSERT INTO ctp SELECT g FROM generate_series(1, 20000) g;
	CREATE INDEX ctp_k ON ctp USING amqfilter (k);"
script=$PRIMARY_DIR/reindex_readers.sql
{
	echo '\set k random(1, 19500)'
	# 500 calls a statement: a swap commits between two of them
	echo "SELECT 1 / bool_and(bloom_index_contains('ct_k', g::int8))::int
		FROM generate_series(:k, :k + 499) g;"
	echo "SELECT 1 / count(*)::int FROM amqfilter_index_candidates('ctp_k', :k::int8) c
		WHERE c = ('ctp_' || (:k::int8 - 1) / 5000)::regclass;"
	echo "SELECT count(*) FROM amqfilter_index_info('ct_k');"
	echo "SELECT count(*) FROM amqfilter_index_info('ctp_k');"
} >"$script"
"$PG_BIN/pgbench" -n -c 2 -j 1 -T 15 -M simple -f "$script" >"$PRIMARY_DIR/reindex_simple.log" 2>&1 &
simple_pid=$!
"$PG_BIN/pgbench" -n -c 2 -j 1 -T 15 -M prepared -f "$script" >"$PRIMARY_DIR/reindex_prepared.log" 2>&1 &
prepared_pid=$!
sleep 1
reindexed=0 overlapped=0
for ((i = 0; i < 20; i++)); do
	if [ $((i % 2)) = 0 ]; then index=ct_k; else index=ctp_k; fi
	timeout 60 "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -c "REINDEX INDEX CONCURRENTLY $index" \
		|| break
	reindexed=$((reindexed + 1))
	if kill -0 "$simple_pid" 2>/dev/null && kill -0 "$prepared_pid" 2>/dev/null; then
		overlapped=$((overlapped + 1))
	fi
done
status=0
wait "$simple_pid" || status=$?
wait "$prepared_pid" || status=$?
txns=$(cat "$PRIMARY_DIR/reindex_simple.log" "$PRIMARY_DIR/reindex_prepared.log" \
	| sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' \
	| awk '{ n += $1 } END { print n + 0 }')
if [ "$status" = 0 ] && [ "$reindexed" = 20 ] && [ "$overlapped" = 20 ] \
	&& ! grep -q 'ERROR\|aborted' "$PRIMARY_DIR/reindex_simple.log" "$PRIMARY_DIR/reindex_prepared.log"; then
	pass "REINDEX CONCURRENTLY: 20 of two indexes under four readers, $txns transactions, none failed"
else
	fail "REINDEX CONCURRENTLY: $reindexed of 20 done, $overlapped while the readers ran, pgbench exit $status"
	grep -h 'ERROR\|aborted' "$PRIMARY_DIR/reindex_simple.log" "$PRIMARY_DIR/reindex_prepared.log" | head -n 10
fi
left=$(q -c "SELECT count(*) FROM pg_index WHERE NOT indisvalid")
missed=$(q -c "SELECT (SELECT count(*) FROM ct WHERE NOT bloom_index_contains('ct_k', k))
	+ (SELECT count(*) FROM ctp WHERE tableoid NOT IN (SELECT amqfilter_index_candidates('ctp_k', k)))")
if [ "$left" = 0 ] && [ "$missed" = 0 ]; then
	pass "REINDEX CONCURRENTLY: no index left invalid, every key found in the rebuilt indexes"
else
	fail "REINDEX CONCURRENTLY: $left indexes left invalid, $missed keys missed"
fi

[ "$FAILURES" -eq 0 ] || grep -h -B2 -A5 'FATAL\|PANIC\|inconsistent' \
	"$PRIMARY_DIR/server.log" "$STANDBY_DIR/server.log" 2>/dev/null | head -n 40 || true
log "index_wal: $((SECONDS - start))s"
checks_summary index_wal
