#!/usr/bin/env bash
# test/run.sh: amqfilter's whole test run.
#
#   bash test/run.sh        as root (or with sudo)
#
# Installs PostgreSQL 15 and a C toolchain when missing (as root), checks that
# META.json names the version the tree builds (test/meta.sh), builds and
# installs the extension (any compiler warning fails the build), checks that
# the source tree's dependencies run one way (test/layers.py), runs the core
# unit tests plain and under ASan/UBSan, then the pg_regress suite and the
# isolation specs against a throwaway cluster, every SQL example of README.md and docs/ (test/docs.sh),
# the dump/restore and COPY round trips (test/roundtrip.sh), the in-place
# upgrade from every older version (test/upgrade.sh), the filter index on a
# logical replication subscriber (test/replication.sh),
# the filter index through a streaming standby, a crash, concurrent writers
# and REINDEX CONCURRENTLY under readers (test/index_wal.sh), corrupted index
# pages (test/index_corrupt.sh), ALTER INDEX on a partitioned filter index
# across sessions and in single-user mode (test/index_options.sh),
# filters across restores and schema moves
# (test/identity.sh), filters across a coordinator and two shards through
# postgres_fdw (test/sharded.sh), the pg_regress suite again against an
# ASan/UBSan build of the extension (test/sanitize.sh), and the fuzz harnesses
# briefly (test/fuzz/run.sh).  A failed step does not stop the ones that do
# not depend on it.  The last line is
#
#   amqfilter: N passed, M failed
#
# counting steps; the exit status is non-zero when any step failed.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PASSED=0
FAILED=0
SKIPPED=0
SUMMARY=()

record() {
	local verdict=$1 name=$2 note=$3
	if [ "$verdict" = ok ]; then
		PASSED=$((PASSED + 1))
	else
		FAILED=$((FAILED + 1))
	fi
	SUMMARY+=("$(printf '%-5s %-14s %s' "$verdict" "$name" "$note")")
}

# run_step NAME COMMAND...: run COMMAND in a subshell with errexit in force (a
# cluster it starts is stopped when the subshell exits) and record the outcome.
run_step() {
	local name=$1 start=$SECONDS status=0
	shift
	printf '\n===== %s =====\n' "$name"
	set +e
	(
		set -e
		"$@"
	)
	status=$?
	set -e
	if [ "$status" -eq 0 ]; then
		record ok "$name" "$((SECONDS - start))s"
	else
		record FAIL "$name" "exit status $status after $((SECONDS - start))s"
	fi
	return "$status"
}

# tool_step NAME MISSING COMMAND...: in a normal user's run (not as root, not in
# CI), a step whose tools are missing (MISSING, the packages that bring them) is
# skipped and says so; as root the step installs them itself, and in CI it always
# runs.
tool_step() {
	local name=$1 missing=$2
	shift 2
	if [ -n "$missing" ] && ! is_root && [ "${CI:-}" != true ]; then
		printf '\n===== %s =====\nskipped: needs %s\n' "$name" "$missing"
		SKIPPED=$((SKIPPED + 1))
		SUMMARY+=("$(printf '%-5s %-14s %s' skip "$name" "needs $missing")")
		return 0
	fi
	run_step "$name" "$@"
}

skip_step() {
	local name=$1 reason=$2
	printf '\n===== %s =====\nnot run: %s\n' "$name" "$reason"
	record FAIL "$name" "not run: $reason"
}

# pg_regress against a throwaway cluster; on failure show what differed.
regression_tests() {
	start_cluster
	if ! pgxs_make installcheck; then
		local diffs
		# pg_regress's, then pg_isolation_regress's (specs/)
		for diffs in "$AMQ_ROOT/regression.diffs" "$AMQ_ROOT/output_iso/regression.diffs"; do
			if [ -f "$diffs" ]; then
				echo "----- $diffs (first 200 lines) -----"
				head -n 200 "$diffs"
			fi
		done
		return 1
	fi
	stop_cluster
}

main() {
	local built=yes

	run_step packages ensure_packages || true
	run_step meta bash "$AMQ_ROOT/test/meta.sh" || true
	run_step build build_and_install || built=no
	# the source tree's dependencies run one way (src/README.md); reads the
	# objects the build left
	if [ "$built" = yes ]; then
		run_step layers python3 "$AMQ_ROOT/test/layers.py" || true
	fi
	run_step unittest pgxs_make unittest || true
	run_step unittest-asan pgxs_make unittest-asan || true
	# the fuzz harnesses, 6 s each (seven of them, under a minute with the
	# build, which keeps the whole run under ten minutes); a longer campaign
	# is `bash test/fuzz/run.sh 600`.  No PostgreSQL needed.
	tool_step fuzz "$(bash "$AMQ_ROOT/test/fuzz/run.sh" --missing 2>/dev/null || echo clang)" \
		bash "$AMQ_ROOT/test/fuzz/run.sh" 6 || true
	if [ "$built" = yes ]; then
		run_step installcheck regression_tests || true
		run_step docs bash "$AMQ_ROOT/test/docs.sh" || true
		run_step roundtrip bash "$AMQ_ROOT/test/roundtrip.sh" || true
		run_step upgrade bash "$AMQ_ROOT/test/upgrade.sh" || true
		run_step replication bash "$AMQ_ROOT/test/replication.sh" || true
		run_step index_wal bash "$AMQ_ROOT/test/index_wal.sh" || true
		run_step index_corrupt bash "$AMQ_ROOT/test/index_corrupt.sh" || true
		run_step index_options bash "$AMQ_ROOT/test/index_options.sh" || true
		run_step identity bash "$AMQ_ROOT/test/identity.sh" || true
		run_step sharded bash "$AMQ_ROOT/test/sharded.sh" || true
		# bounded: a sanitizer runtime that hangs must not stall the suite
		run_step sanitize timeout 600 bash "$AMQ_ROOT/test/sanitize.sh" || true
	else
		skip_step installcheck "the extension did not build or install"
		skip_step docs "the extension did not build or install"
		skip_step roundtrip "the extension did not build or install"
		skip_step upgrade "the extension did not build or install"
		skip_step replication "the extension did not build or install"
		skip_step index_wal "the extension did not build or install"
		skip_step index_corrupt "the extension did not build or install"
		skip_step index_options "the extension did not build or install"
		skip_step identity "the extension did not build or install"
		skip_step sharded "the extension did not build or install"
		skip_step sanitize "the extension did not build or install"
	fi

	printf '\n===== summary =====\n'
	printf '%s\n' "${SUMMARY[@]}"
	if [ "$SKIPPED" -gt 0 ]; then
		echo "amqfilter: $PASSED passed, $FAILED failed, $SKIPPED skipped"
	else
		echo "amqfilter: $PASSED passed, $FAILED failed"
	fi
	[ "$FAILED" -eq 0 ]
}

main "$@"
