#!/usr/bin/env bash
# test/fuzz/run.sh [SECONDS_PER_HARNESS]
# test/fuzz/run.sh --missing     print the packages it needs that are missing
#
# Builds the libFuzzer harnesses of the core (`make fuzz`: clang,
# -fsanitize=fuzzer,address,undefined, src/core only, no PostgreSQL) and runs
# each for SECONDS_PER_HARNESS seconds (default 10) on a copy of its seed corpus
# (test/fuzz/corpus/<harness>/) in a temporary directory: nothing is written
# into the repository.  Prints per harness the executions, exec/s, the final
# coverage (libFuzzer's "cov:") and the crashes, then a summary line
#
#   fuzz: N harnesses, M crashes
#
# and exits non-zero if any harness crashed (the reproducers are kept and
# their paths printed).  About a minute in all at 12 s per harness.
#
# Environment: FUZZ_MAX_LEN (default 4096) caps the input size; FUZZ_KEEP=1
# keeps the temporary directory (grown corpora, logs) even without a crash.
#
# As root on a fresh Debian 12 it installs clang, its fuzzer runtime and make
# when they are missing (test/lib.sh's install_packages).
set -euo pipefail

SECONDS_PER=${1:-10}
MAX_LEN=${FUZZ_MAX_LEN:-4096}

[ "$SECONDS_PER" = --missing ] || [[ "$SECONDS_PER" =~ ^[0-9]+$ ]] && [ "$SECONDS_PER" != 0 ] \
	|| { echo "usage: $0 [SECONDS_PER_HARNESS | --missing]" >&2; exit 2; }

# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# Every test/fuzz/fuzz_*.c is a harness, as in the Makefile's FUZZ_HARNESSES.
HARNESSES=()
for src in "$AMQ_ROOT"/test/fuzz/fuzz_*.c; do
	HARNESSES+=("$(basename "$src" .c)")
done

# Only what the fuzzers need, not PostgreSQL.  libclang-rt-dev holds
# libFuzzer and the sanitizer runtimes; clang merely recommends it.
FUZZ_PACKAGES=(clang libclang-rt-dev make libc6-dev)
fuzz_missing_packages() {
	command -v clang >/dev/null || { echo clang; echo libclang-rt-dev; return 0; }
	local rt
	rt=$(clang -print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-x86_64.a
	[ -f "$rt" ] || ls "$(clang -print-resource-dir)"/lib/*/libclang_rt.fuzzer* >/dev/null 2>&1 \
		|| echo libclang-rt-dev
	command -v make >/dev/null || echo make
	[ -f /usr/include/stdio.h ] || echo libc6-dev
}
missing=$(fuzz_missing_packages | tr '\n' ' ')
if [ "$SECONDS_PER" = --missing ]; then
	echo "${missing% }"
	exit 0
fi
if [ -n "$missing" ]; then
	install_packages "$missing" "${FUZZ_PACKAGES[@]}"
	missing=$(fuzz_missing_packages | tr '\n' ' ')
if [ "$SECONDS_PER" = --missing ]; then
	echo "${missing% }"
	exit 0
fi
	[ -z "$missing" ] || die "still missing after apt-get install: $missing"
fi
log "clang: $(clang --version | head -n 1)"

# The fuzz targets need no PostgreSQL; keep PGXS quiet where it is absent.
pg_config=$PG_CONFIG
[ -x "$pg_config" ] || pg_config=$(command -v pg_config || echo true)
log "build: make fuzz"
make --no-print-directory -C "$AMQ_ROOT" PG_CONFIG="$pg_config" fuzz >/dev/null

WORK=$(mktemp -d /tmp/amqfilter-fuzz.XXXXXX)
keep=${FUZZ_KEEP:-0}
cleanup() { if [ "$keep" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK"; fi; }
trap cleanup EXIT

total_crashes=0
printf '%-18s %12s %10s %8s %8s\n' harness executions exec/s cov crashes
for h in "${HARNESSES[@]}"; do
	corpus=$WORK/corpus/$h
	artifacts=$WORK/artifacts/$h
	mkdir -p "$corpus" "$artifacts"
	cp "$AMQ_ROOT/test/fuzz/corpus/$h/"* "$corpus/" 2>/dev/null || true
	status=0
	(cd "$WORK" && "$AMQ_ROOT/test/fuzz/$h" -max_total_time="$SECONDS_PER" \
		-max_len="$MAX_LEN" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$artifacts/" "$corpus") >"$WORK/$h.log" 2>&1 || status=$?

	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$WORK/$h.log" | tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$WORK/$h.log" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]*' "$WORK/$h.log" | tail -n 1 | sed 's/cov: //')
	crashes=$(find "$artifacts" -type f | wc -l)
	if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then
		crashes=1	# died without writing a reproducer: still a failure
	fi
	printf '%-18s %12s %10s %8s %8s\n' "$h" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$crashes"
	if [ "$crashes" -gt 0 ]; then
		keep=1
		total_crashes=$((total_crashes + crashes))
		grep -E 'ERROR|property violated|runtime error|SUMMARY' "$WORK/$h.log" | head -n 5 | sed 's/^/    /'
		find "$artifacts" -type f | sed 's/^/    reproducer: /'
		echo "    log: $WORK/$h.log"
	fi
done

echo "fuzz: ${#HARNESSES[@]} harnesses, $total_crashes crashes"
[ "$total_crashes" -eq 0 ]
