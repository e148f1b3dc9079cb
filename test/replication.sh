#!/usr/bin/env bash
# test/replication.sh: partition filters on a logical replication subscriber.
#
#   sudo bash test/replication.sh
#
# Against the installed extension (test/run.sh builds it first), two throwaway
# clusters: a publisher of the plain table orders(id, c), and a subscriber whose
# orders is range-partitioned on id (two partitions) with filters built on c.  The
# apply worker writes with session_replication_role = replica, where only triggers
# enabled ALWAYS fire, so this checks that rows arriving by replication (an INSERT
# into one partition, an UPDATE of a row in the other) are recorded as written to
# exactly their partitions, that lookups on the subscriber find them, and that the
# partition nothing arrived in keeps its current filter.
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
	CREATE INDEX orders_c ON orders USING amqfilter (c);
	SELECT count(*) FROM bloom_partition_build('orders', 'c');" >/dev/null
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

stale=$(run_psql -At -c "SELECT string_agg(partition::text || '=' || state, ' ' ORDER BY partition::text)
	FROM bloom_partition_status('orders', 'c')")
if [ "$stale" = "orders_1=written orders_2=written" ]; then
	pass "replication: the apply worker's INSERT and UPDATE marked their partitions stale"
else
	fail "replication: the apply worker's INSERT and UPDATE marked their partitions stale ($stale)"
fi
for v in 777777 888888; do
	found=$(run_psql -At -c "SELECT count(*) FROM bloom_partition_lookup(NULL::orders, 'c', $v::int8)")
	if [ "$found" = 1 ]; then
		pass "replication: bloom_partition_lookup finds the replicated value $v"
	else
		fail "replication: bloom_partition_lookup finds the replicated value $v ($found rows)"
	fi
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

# a rebuild makes both fresh; then a replicated insert marks only its partition
run_psql -q -c "SET client_min_messages = warning;
	SELECT count(*) FROM bloom_partition_build('orders', 'c');" >/dev/null
pub "INSERT INTO orders VALUES (1601, 999999);"
for ((i = 0; i < 40; i++)); do
	arrived=$(run_psql -At -c "SELECT count(*) FROM orders WHERE c = 999999")
	[ "$arrived" = 1 ] && break
	sleep 0.5
done
stale=$(run_psql -At -c "SELECT string_agg(partition::text || '=' || state, ' ' ORDER BY partition::text)
	FROM bloom_partition_status('orders', 'c')")
if [ "$arrived" = 1 ] && [ "$stale" = "orders_1=current orders_2=written" ]; then
	pass "replication: only the partition a replicated row went to is stale"
else
	fail "replication: only the partition a replicated row went to is stale ($arrived, $stale)"
fi

[ "$FAILURES" -eq 0 ] || grep -h -A3 'ERROR\|PANIC\|terminated' "$PUB_DIR/server.log" "$SUB_DIR/server.log" \
	| head -n 30 || true
run_psql -q -c "DROP SUBSCRIPTION orders_sub"
log "replication: $((SECONDS - start))s"
checks_summary replication
