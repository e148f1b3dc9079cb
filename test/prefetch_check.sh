#!/usr/bin/env bash
# test/prefetch_check.sh OBJECT...: the hot loops still request memory ahead.
#
# The cores hide cache misses by prefetching (amq_prefetch_read/write in
# src/core/amq_bytes.h).  GCC deletes calls to a function whose only effect is
# a prefetch when it does not inline it, silently: the cuckoo add loop once
# shipped without a single prefetch that way.  This checks, in the objects the
# extension is built from, that each function below still contains a prefetch
# instruction.  x86-64 only (elsewhere the instructions have other names); a
# no-op without objdump.
set -euo pipefail
FUNCTIONS=(amq_bloom_add_many amq_counting_min amq_dleft_add_many amq_dleft_contains
	amq_dleft_counter amq_cuckoo_add_many amq_agg_transfn)

if [ "$(uname -m)" != x86_64 ] || ! command -v objdump >/dev/null; then
	echo "prefetch check: skipped (not x86-64, or no objdump)"
	exit 0
fi
[ $# -gt 0 ] || { echo "usage: $0 OBJECT..." >&2; exit 2; }

# "function count" for every function of the objects that holds a prefetch
counts=$(objdump -d --no-show-raw-insn "$@" | awk '
	/^[0-9a-f]+ <[^>]+>:$/ { fn = substr($2, 2, length($2) - 3) }
	/\tprefetch/ { n[fn]++ }
	END { for (f in n) print f, n[f] }')

status=0
for f in "${FUNCTIONS[@]}"; do
	n=$(awk -v f="$f" '$1 == f { print $2 }' <<<"$counts")
	if [ -z "$n" ]; then
		echo "prefetch check: $f has no prefetch instruction"
		status=1
	else
		echo "prefetch check: $f: $n"
	fi
done
exit "$status"
