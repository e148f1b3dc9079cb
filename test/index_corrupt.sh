#!/usr/bin/env bash
# test/index_corrupt.sh: a corrupted page of an amqfilter index is an error
# in the statement that meets it, never a crash of the server.
#
#   sudo bash test/index_corrupt.sh
#
# Against the installed extension (test/run.sh builds it first), in a
# throwaway cluster: with the server stopped, one index gets a data page
# zeroed, another (built empty: its data page is new, its blocks the page's
# hole) that page's pd_upper lowered, which the buffer manager's own check
# lets pass (generic WAL trusts pd_lower and pd_upper to find a page's hole:
# the first write to such a page used to memset a negative length, signal
# 11, every session lost), a third its metapage zeroed, and a fourth's metapage
# says it is of format version 2 (the bloom filter of a whole table that a
# pre-release wrote).  A fifth, built without a key in more than 4 ranges,
# says it is of format version 3 (0.2's, without spans, which this build
# reads still): it answers, and takes writes as 0.2 did.  After a restart,
# each path that reads or writes those
# pages (INSERT, COPY, a scan, bloom_index_contains, amqfilter_index_info)
# fails with SQLSTATE XX002 (index_corrupted), the server keeps running (no
# backend ended by a signal, no restart), and a REINDEX repairs the index.
#
# It prints PASS or FAIL per check and exits non-zero when any check failed.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start=$SECONDS
start_cluster
DATA=$AMQ_CLUSTER_DIR/data
LOGFILE=$AMQ_CLUSTER_DIR/server.log

q() { run_psql -q -At "$@"; }

# sqlstate SQL: the SQLSTATE the statement failed with, or "ok"
sqlstate() {
	local out
	if out=$("$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -v VERBOSITY=verbose \
		-c "$1" 2>&1 >/dev/null); then
		echo ok
	else
		sed -n 's/^\(psql:[^:]*:[0-9]*: \)\{0,1\}ERROR:  \([0-9A-Z]\{5\}\):.*/\2/p' <<<"$out" | head -n 1
	fi
}

# expect_state STATE DESCRIPTION SQL
expect_state() {
	local got
	got=$(sqlstate "$3")
	if [ "$got" = "$1" ]; then
		pass "$2: SQLSTATE $got"
	else
		fail "$2: expected SQLSTATE $1, got '${got:-none}'"
	fi
}

q -c "CREATE EXTENSION amqfilter;
	CREATE TABLE zeroed (k int8);
	CREATE TABLE lowered (k int8);
	CREATE TABLE nometa (k int8);
	CREATE TABLE oldformat (k int8);
	CREATE TABLE format3 (k int8, pad text);
	CREATE TABLE rowbits (k int8, pad text);
	INSERT INTO rowbits SELECT hashint8(g) % 5000, repeat('x', 60) FROM generate_series(1, 50000) g;
	CREATE INDEX rowbits_k ON rowbits USING amqfilter (k);
	CREATE TABLE classrows (k int8, pad text);
	INSERT INTO classrows SELECT * FROM rowbits;
	CREATE INDEX classrows_k ON classrows USING amqfilter (k);
	INSERT INTO format3 SELECT g, repeat('x', 100) FROM generate_series(1, 20000) g;
	CREATE INDEX format3_k ON format3 USING amqfilter (k) WITH (pages_per_range = 1);
	INSERT INTO oldformat SELECT g FROM generate_series(1, 2000) g;
	CREATE INDEX oldformat_k ON oldformat USING amqfilter (k);
	INSERT INTO zeroed SELECT g FROM generate_series(1, 20000) g;
	INSERT INTO nometa SELECT g FROM generate_series(1, 20000) g;
	CREATE INDEX zeroed_k ON zeroed USING amqfilter (k);
	CREATE INDEX lowered_k ON lowered USING amqfilter (k);
	CREATE INDEX nometa_k ON nometa USING amqfilter (k);
	CHECKPOINT;"
pages=$(q -c "SELECT pg_relation_size('zeroed_k') / 8192")
[ "$pages" -ge 3 ] || die "zeroed_k has $pages pages, a test needs 3"
zeroed_file=$DATA/$(q -c "SELECT pg_relation_filepath('zeroed_k')")
lowered_file=$DATA/$(q -c "SELECT pg_relation_filepath('lowered_k')")
nometa_file=$DATA/$(q -c "SELECT pg_relation_filepath('nometa_k')")
oldformat_file=$DATA/$(q -c "SELECT pg_relation_filepath('oldformat_k')")
format3_file=$DATA/$(q -c "SELECT pg_relation_filepath('format3_k')")
rowbits_file=$DATA/$(q -c "SELECT pg_relation_filepath('rowbits_k')")
classrows_file=$DATA/$(q -c "SELECT pg_relation_filepath('classrows_k')")
# classrows_k has row classes: a plain index scan is what the planner takes
q -c "SET enable_bitmapscan = off; EXPLAIN (COSTS OFF) SELECT * FROM classrows WHERE k = 1" \
	| grep -q "Index Scan using classrows_k" || die "classrows_k is not read by a plain index scan"
[ "$(q -c "SELECT everywhere FROM amqfilter_index_info('format3_k')")" = 0 ] \
	|| die "format3_k has a key in more than 4 ranges: it cannot pass for format 3"

as_cluster_owner "$PG_BIN/pg_ctl" --pgdata="$DATA" --mode=fast --wait stop >/dev/null
# block 1 (a data page) all zeros
dd if=/dev/zero of="$zeroed_file" bs=8192 seek=1 count=1 conv=notrunc status=none
# block 1's pd_upper (bytes 14-15 of the page header) lowered to 4096
printf '\x00\x10' | dd of="$lowered_file" bs=1 seek=$((8192 + 14)) conv=notrunc status=none
# block 0, the metapage, all zeros
dd if=/dev/zero of="$nometa_file" bs=8192 seek=0 count=1 conv=notrunc status=none
# the metapage's version (bytes 28-31: after the page header and the magic) 2
printf '\x02\x00\x00\x00' | dd of="$oldformat_file" bs=1 seek=28 conv=notrunc status=none
printf '\x03\x00\x00\x00' | dd of="$format3_file" bs=1 seek=28 conv=notrunc status=none
# generation 0's row classes (bytes 92-95: its fourth field) 9, past the most
printf '\x09\x00\x00\x00' | dd of="$rowbits_file" bs=1 seek=92 conv=notrunc status=none
# the offsets of its row classes (bytes 76-79) 0: a class would divide by it
printf '\x00\x00\x00\x00' | dd of="$classrows_file" bs=1 seek=76 conv=notrunc status=none
as_cluster_owner "$PG_BIN/pg_ctl" --pgdata="$DATA" --log="$LOGFILE" --wait \
	--timeout=60 start >/dev/null
wait_until_ready
postmaster_pid=$(head -n 1 "$DATA/postmaster.pid")

# keys on every page of the first generation: a batch of 2,000 touches them all
for index in zeroed lowered; do
	expect_state XX002 "$index: INSERT" \
		"INSERT INTO $index SELECT g FROM generate_series(30001, 32000) g"
	expect_state XX002 "$index: COPY" \
		"COPY $index FROM PROGRAM 'seq 40001 42000'"
	# lowered_k was built over no row: its metapage's bounds hold no value,
	# so a probe rules every value out without reading a page, the broken
	# one included (a "no" the index proves): the probes answer
	probe_state=XX002
	[ "$index" = lowered ] && probe_state=ok
	expect_state $probe_state "$index: bloom_index_contains" \
		"SELECT count(*) FROM generate_series(1, 2000) g WHERE bloom_index_contains('${index}_k', g::int8)"
	expect_state XX002 "$index: amqfilter_index_info" \
		"SELECT * FROM amqfilter_index_info('${index}_k')"
	# one scan per key the table holds (a key outside the index's bounds
	# reads no page): some key's probe reads the corrupted page
	expect_state $probe_state "$index: bitmap scans" \
		"SET enable_seqscan = off;
		 DO \$\$ BEGIN FOR v IN 1 .. 200 LOOP
			PERFORM count(*) FROM $index WHERE k = v;
		 END LOOP; END \$\$"
done
expect_state XX002 "nometa: INSERT" "INSERT INTO nometa VALUES (1)"
expect_state XX002 "nometa: bloom_index_contains" "SELECT bloom_index_contains('nometa_k', 1::int8)"
expect_state XX002 "nometa: amqfilter_index_info" "SELECT * FROM amqfilter_index_info('nometa_k')"
expect_state XX002 "nometa: the planner's estimate" "EXPLAIN SELECT * FROM nometa WHERE k = 1"
expect_state XX002 "rowbits: bloom_index_contains" "SELECT bloom_index_contains('rowbits_k', 1::int8)"
expect_state XX002 "rowbits: INSERT" "INSERT INTO rowbits VALUES (1, 'x')"
expect_state XX002 "classrows: bloom_index_contains" "SELECT bloom_index_contains('classrows_k', 1::int8)"
expect_state XX002 "classrows: INSERT" "INSERT INTO classrows VALUES (1, 'x')"
expect_state XX002 "classrows: plain index scan" \
	"SET enable_bitmapscan = off; SET enable_seqscan = off; SELECT count(*) FROM classrows WHERE k = 1"
expect_state 0A000 "oldformat: INSERT" "INSERT INTO oldformat VALUES (1)"
expect_state 0A000 "oldformat: bloom_index_contains" "SELECT bloom_index_contains('oldformat_k', 1::int8)"
old_error=$("$PG_BIN/psql" -X -q -c "SELECT bloom_index_contains('oldformat_k', 1::int8)" 2>&1 || true)
if grep -q 'HINT:  REINDEX it' <<<"$old_error"; then
	pass "oldformat: the error says REINDEX"
else
	fail "oldformat: the error says REINDEX"
fi

# format 3: read; a key in 3,000 rows appended (some 40 blocks) becomes one
# "everywhere" entry, as 0.2 made it (format 4 would keep a span, whose
# ends format 3's range numbers cannot tell from ranges)
q -c "INSERT INTO format3 SELECT 7, repeat('y', 100) FROM generate_series(1, 3000)" >/dev/null
if [ "$(q -c "SELECT everywhere FROM amqfilter_index_info('format3_k')")" = 1 ] \
	&& [ "$(q -c "SELECT count(*) FROM format3 WHERE NOT bloom_index_contains('format3_k', k)")" = 0 ] \
	&& [ "$(q -c "SET enable_seqscan = off; SELECT count(*) FROM format3 WHERE k = 7")" = 3001 ] \
	&& [ "$(q -c "SELECT bloom_index_contains('format3_k', (-5)::int8)")" = f ]; then
	pass "format3: read as format 3, every key found, writes as 0.2 made them"
else
	fail "format3: read as format 3, every key found, writes as 0.2 made them"
fi

if [ "$(head -n 1 "$DATA/postmaster.pid")" = "$postmaster_pid" ] \
	&& ! grep -q 'terminated by signal\|was terminated\|all server processes terminated' "$LOGFILE"; then
	pass "the server ran on: no backend ended by a signal, no restart"
else
	fail "the server crashed"
	grep -B2 -A5 'terminated' "$LOGFILE" | head -n 30
fi

q -c "REINDEX TABLE zeroed; REINDEX TABLE lowered; REINDEX TABLE nometa; REINDEX TABLE oldformat;"
for index in zeroed lowered nometa oldformat; do
	if q -c "INSERT INTO $index SELECT g FROM generate_series(50001, 52000) g" >/dev/null \
		&& [ "$(q -c "SELECT count(*) FROM $index WHERE NOT bloom_index_contains('${index}_k', k)")" = 0 ]; then
		pass "$index: after REINDEX, writes succeed and every key is found"
	else
		fail "$index: after REINDEX"
	fi
done

log "index_corrupt: $((SECONDS - start))s"
checks_summary index_corrupt
