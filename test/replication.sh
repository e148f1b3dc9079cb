#!/usr/bin/env bash
# test/replication.sh: the filter index on a logical replication subscriber.
#
#   sudo bash test/replication.sh
#
# Against the installed extension (test/run.sh builds it first), two throwaway
# clusters: a publisher of the plain table orders(id, c), and a subscriber whose
# orders is range-partitioned on id (two partitions) with an amqfilter index on
# c.  The apply worker writes with session_replication_role = replica, through
# its own executor paths: this checks that rows arriving by replication (an
# INSERT into one partition, an UPDATE of a row in the other, an INSERT after
# the index was rebuilt) reach the index of exactly their partition, and that
# plain queries, which can only read the partitions through the index, and
# amqfilter_index_candidates on the subscriber find them.
#
# It prints PASS or FAIL per check and exits non-zero when any check failed.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start=$SECONDS
start_cluster "wal_level = logical"
PUB_HOST=$PGHOST PUB_PORT=$PGPORT PUB_DIR=$AMQ_CLUSTER_DIR
PUB="host=$PUB_HOST port=$PUB_PORT user=$PGUSER dbname=postgres"
# pub SQL: run SQL on the publisher
pub() { PGHOST=$PUB_HOST PGPORT=$PUB_PORT run_psql -q -At -c "$1"; }
run_psql -q -c "
	CREATE TABLE orders (id int8 PRIMARY KEY, c int8);
	INSERT INTO orders VALUES (1500, 1500);
	CREATE PUBLICATION orders_pub FOR TABLE orders;"

start_cluster
SUB_DIR=$AMQ_CLUSTER_DIR
run_psql -q -c "
	SET client_min_messages = warning;
	CREATE EXTENSION amqfilter;
	CREATE TABLE orders (id int8 PRIMARY KEY, c int8) PARTITION BY RANGE (id);
	CREATE TABLE orders_1 PARTITION OF orders FOR VALUES FROM (0) TO (1000);
	CREATE TABLE orders_2 PARTITION OF orders FOR VALUES FROM (1000) TO (2000);
	INSERT INTO orders SELECT g, g FROM generate_series(0, 1998, 2) g;
	CREATE INDEX orders_c ON orders USING amqfilter (c);" >/dev/null
run_psql -q -c "CREATE SUBSCRIPTION orders_sub CONNECTION '$PUB' PUBLICATION orders_pub
	WITH (copy_data = false)"

# the publisher's changes (odd ids are new to the subscriber): a new row for
# orders_1, an update of a row of orders_2
pub "INSERT INTO orders VALUES (5, 777777); UPDATE orders SET c = 888888 WHERE id = 1500;"

arrived=
for ((i = 0; i < 40; i++)); do
	arrived=$(run_psql -At -c "SELECT count(*) FROM orders WHERE c IN (777777, 888888)")
	[ "$arrived" = 2 ] && break
	sleep 0.5
done
if [ "$arrived" = 2 ]; then
	pass "replication: both changes applied on the subscriber"
else
	fail "replication: both changes applied on the subscriber ($arrived of 2 after 60 s)"
fi

# candidates FOR VALUE: the partitions whose index may hold the value
candidates() {
	run_psql -At -c "SELECT string_agg(c::text, ' ' ORDER BY c::text)
		FROM amqfilter_index_candidates('orders_c', $1::int8) c"
}
for v in 777777:orders_1 888888:orders_2; do
	got=$(candidates "${v%%:*}") || true
	if [[ " $got " == *" ${v#*:} "* ]]; then
		pass "replication: amqfilter_index_candidates names ${v#*:} for the replicated ${v%%:*}"
	else
		fail "replication: amqfilter_index_candidates names ${v#*:} for the replicated ${v%%:*} ($got)"
	fi
done
for v in 777777 888888; do
	# the filter index of the partition the row went to, and a plain query
	# that can only read the tables through it
	found=$(run_psql -q -At -c "SET enable_seqscan = off" -c "SET enable_indexscan = off" \
		-c "SELECT count(*) FROM orders WHERE c = $v" \
		-c "SELECT bool_or(bloom_index_contains(i.indexrelid::regclass, $v::int8))
			FROM pg_inherits h JOIN pg_index i ON i.indrelid = h.inhrelid
			JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_am a ON a.oid = x.relam
			WHERE h.inhparent = 'orders'::regclass AND a.amname = 'amqfilter'" | paste -sd' ') || true
	if [ "$found" = "1 t" ]; then
		pass "replication: the filter index holds the replicated value $v"
	else
		fail "replication: the filter index holds the replicated value $v ($found)"
	fi
done

# a rebuild, then a replicated insert: found through the rebuilt index
run_psql -q -c "REINDEX INDEX orders_c" >/dev/null
pub "INSERT INTO orders VALUES (1601, 999999);"
for ((i = 0; i < 40; i++)); do
	arrived=$(run_psql -At -c "SELECT count(*) FROM orders WHERE c + 0 = 999999")
	[ "$arrived" = 1 ] && break
	sleep 0.5
done
found=$(run_psql -q -At -c "SET enable_seqscan = off" -c "SELECT count(*) FROM orders WHERE c = 999999") || true
got=$(candidates 999999) || true
if [ "$arrived" = 1 ] && [ "$found" = 1 ] && [[ " $got " == *" orders_2 "* ]]; then
	pass "replication: a row replicated after a REINDEX is found through the index ($got)"
else
	fail "replication: a row replicated after a REINDEX is found through the index ($arrived, $found, $got)"
fi

[ "$FAILURES" -eq 0 ] || grep -h -A3 'ERROR\|PANIC\|terminated' "$PUB_DIR/server.log" "$SUB_DIR/server.log" \
	| head -n 30 || true
run_psql -q -c "DROP SUBSCRIPTION orders_sub"
log "replication: $((SECONDS - start))s"
checks_summary replication
