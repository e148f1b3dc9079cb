#!/usr/bin/env bash
# test/run.sh: amqfilter's whole test run.
#
#   bash test/run.sh              the host's PostgreSQL: 15 on Debian 12
#   bash test/run.sh --pg 18      PostgreSQL 18 (15, 17, 18 or 19; --pg repeats)
#   bash test/run.sh --all        15, 17, 18 and 19, then the tests across them
#
# As root (or with sudo).  A major the host has (15 on Debian 12, installed when
# missing, or PG_BIN's) runs here; 17, 18 and 19 run in Debian roots that
# test/pgroots.sh makes the first time and every run after reuses (about a
# minute a root and a minute a major; /var/cache/amqfilter-roots).
#
# What needs no PostgreSQL runs once, on the host: META.json names the version
# the tree builds (test/meta.sh), the core unit tests plain and under
# ASan/UBSan, and the fuzz harnesses briefly (test/fuzz/run.sh).  Then for each
# major: a build that fails on any compiler warning, and its install; the source
# tree's dependencies run one way (test/layers.py); the pg_regress suite
# against a throwaway cluster; every SQL example of README.md and docs/
# (test/docs.sh); the dump/restore and COPY round trips (test/roundtrip.sh);
# the in-place upgrade from every older version (test/upgrade.sh); the filter
# index on a logical replication subscriber (test/replication.sh), through a
# streaming standby, a crash and concurrent writers (test/index_wal.sh), and
# with corrupted pages (test/index_corrupt.sh); filters across restores and
# schema moves (test/identity.sh); filters across a coordinator and two shards
# through postgres_fdw (test/sharded.sh); and the pg_regress suite again
# against an ASan/UBSan build of the extension (test/sanitize.sh).  With more
# than one major, last, across them (test/xmajor.sh): a coordinator on 18 with
# shards on 15 and 17, and dumps restored on each newer major.
#
# A failed step does not stop the ones that do not depend on it.  The last
# line is
#
#   amqfilter: N passed, M failed
#
# counting steps (a major's are named pgN/step); the exit status is non-zero
# when any step failed.  Where pg_regress failed in a root, its diffs and
# results are copied out to regression.pgN.diffs and results.pgN/.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# the majors CI tests; the first is Debian 12's
AMQ_ALL_MAJORS=(15 17 18 19)

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
	SUMMARY+=("$(printf '%-5s %-20s %s' "$verdict" "$name" "$note")")
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
		SUMMARY+=("$(printf '%-5s %-20s %s' skip "$name" "needs $missing")")
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

# The steps that need no PostgreSQL.
core_steps() {
	run_step meta bash "$AMQ_ROOT/test/meta.sh" || true
	run_step unittest pgxs_make unittest || true
	run_step unittest-asan pgxs_make unittest-asan || true
	# the fuzz harnesses, 6 s each (seven of them, under a minute with the
	# build); a longer campaign is `bash test/fuzz/run.sh 600`.
	tool_step fuzz "$(bash "$AMQ_ROOT/test/fuzz/run.sh" --missing 2>/dev/null || echo clang)" \
		bash "$AMQ_ROOT/test/fuzz/run.sh" 6 || true
}

# pg_steps PREFIX: the steps against AMQ_PG_MAJOR's PostgreSQL, here; PREFIX
# (pgN/) begins their names.
PG_STEPS=(installcheck docs roundtrip upgrade replication index_wal index_corrupt index_options
	identity sharded sanitize)
pg_steps() {
	local p=$1 built=yes step
	run_step "${p}build" build_and_install || built=no
	if [ "$built" = no ]; then
		for step in layers "${PG_STEPS[@]}"; do
			skip_step "$p$step" "the extension did not build or install"
		done
		return 0
	fi
	# the source tree's dependencies run one way (src/README.md); reads the
	# objects the build left
	run_step "${p}layers" python3 "$AMQ_ROOT/test/layers.py" || true
	run_step "${p}installcheck" regression_tests || true
	run_step "${p}docs" bash "$AMQ_ROOT/test/docs.sh" || true
	run_step "${p}roundtrip" bash "$AMQ_ROOT/test/roundtrip.sh" || true
	run_step "${p}upgrade" bash "$AMQ_ROOT/test/upgrade.sh" || true
	run_step "${p}replication" bash "$AMQ_ROOT/test/replication.sh" || true
	run_step "${p}index_wal" bash "$AMQ_ROOT/test/index_wal.sh" || true
	run_step "${p}index_corrupt" bash "$AMQ_ROOT/test/index_corrupt.sh" || true
	run_step "${p}index_options" bash "$AMQ_ROOT/test/index_options.sh" || true
	run_step "${p}identity" bash "$AMQ_ROOT/test/identity.sh" || true
	run_step "${p}sharded" bash "$AMQ_ROOT/test/sharded.sh" || true
	# bounded: a sanitizer runtime that hangs must not stall the suite
	run_step "${p}sanitize" timeout 600 bash "$AMQ_ROOT/test/sanitize.sh" || true
}

# is_here MAJOR: MAJOR runs on this machine (PG_BIN's major, or Debian's package
# of it installed, or installable: 15 on Debian 12) rather than in a root.
is_here() {
	[ "$1" = "$AMQ_PG_MAJOR" ] && return 0
	[ -x "/usr/lib/postgresql/$1/bin/postgres" ] && return 0
	! pgroot_majors | grep -x "$1" >/dev/null
}

# use_major MAJOR: the scripts run from here on build for and test MAJOR.
use_major() {
	if [ "$1" != "$AMQ_PG_MAJOR" ]; then
		AMQ_PG_MAJOR=$1
		PG_BIN=/usr/lib/postgresql/$1/bin
		PG_CONFIG=$PG_BIN/pg_config
		AMQ_PACKAGES=("postgresql-$1" "postgresql-server-dev-$1" "${AMQ_TOOLCHAIN_PACKAGES[@]}")
		export AMQ_PG_MAJOR PG_BIN PG_CONFIG
	fi
}

# copy_tree DEST: the working tree without its build products and git data
copy_tree() {
	tar -C "$AMQ_ROOT" --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
		--exclude=./results --exclude='./results.pg*' --exclude=./log --exclude=./tmp_check \
		--exclude='./regression.*' -cf - . | tar -C "$1" -xf -
}

# in_root MAJOR: MAJOR's steps in its Debian root, on a copy of the tree there;
# their outcomes recorded here, as pgN/step.
in_root() {
	local major=$1 root copy verdict name note summary
	root=$(pgroot_of "$major")
	pgroot_mount "$root"
	copy=$(mktemp -d "$root/var/tmp/amqfilter-src.XXXXXX")
	copy_tree "$copy"
	summary=$copy/.summary
	# no cluster of the host's (nor of another root's) shares a port with this one
	pgroot_exec "$root" "AMQ_PG_MAJOR=$major" "AMQ_FIRST_PORT=$AMQ_FIRST_PORT" \
		"AMQ_SUMMARY_FILE=${summary#"$root"}" "CI=${CI:-}" \
		bash "${copy#"$root"}/test/run.sh" --here || true
	if [ -s "$summary" ]; then
		while read -r verdict name note; do
			[ -n "$verdict" ] || continue
			record "$verdict" "pg$major/$name" "$note"
		done <"$summary"
	else
		record FAIL "pg$major/run" "the run in $root recorded nothing"
	fi
	if [ -f "$copy/regression.diffs" ]; then
		cp "$copy/regression.diffs" "$AMQ_ROOT/regression.pg$major.diffs"
		rm -rf "$AMQ_ROOT/results.pg$major"
		cp -r "$copy/results" "$AMQ_ROOT/results.pg$major"
		echo "pg$major: pg_regress's diffs are in regression.pg$major.diffs," \
			"its results in results.pg$major/"
	fi
	rm -rf "$copy"
}

usage() {
	echo "usage: bash test/run.sh [--pg MAJOR]... | --all" >&2
	exit 2
}

main() {
	local -a majors=()
	local here=no major summary verdict name note

	while [ $# -gt 0 ]; do
		case $1 in
			--pg) [ $# -ge 2 ] || usage; majors+=("$2"); shift 2 ;;
			--all) majors=("${AMQ_ALL_MAJORS[@]}"); shift ;;
			# inside a root: AMQ_PG_MAJOR's steps alone, outcomes to AMQ_SUMMARY_FILE
			--here) here=yes; shift ;;
			*) usage ;;
		esac
	done

	if [ "$here" = yes ]; then
		pg_steps ""
		printf '%s\n' "${SUMMARY[@]}" >"${AMQ_SUMMARY_FILE:-/dev/null}"
		return 0
	fi

	[ ${#majors[@]} -gt 0 ] || majors=("$AMQ_PG_MAJOR")
	for major in "${majors[@]}"; do
		[[ $major =~ ^[0-9]+$ ]] || usage
		is_here "$major" || pgroot_of "$major" >/dev/null \
			|| die "PostgreSQL $major: neither here nor in a root test/pgroots.sh makes"
	done
	trap pgroot_umount_all EXIT

	run_step packages ensure_toolchain || true
	for major in "${majors[@]}"; do
		if is_here "$major"; then
			summary=$(mktemp)
			(
				use_major "$major"
				run_step "pg$major/packages" ensure_packages || true
				pg_steps "pg$major/"
				printf '%s\n' "${SUMMARY[@]}" >"$summary"
			)
			# the subshell's outcomes, after those recorded before it
			while read -r verdict name note; do
				case $name in pg"$major"/*) record "$verdict" "$name" "$note" ;; esac
			done <"$summary"
			rm -f "$summary"
		else
			if run_step "pg$major/root" pgroot_ensure "$major"; then
				in_root "$major"
			else
				skip_step "pg$major/steps" "its Debian root could not be made"
			fi
		fi
	done
	# after the majors: test/meta.sh builds the release with PGXS when it can
	core_steps
	if [ ${#majors[@]} -gt 1 ]; then
		run_step "xmajor" bash "$AMQ_ROOT/test/xmajor.sh" "${majors[@]}" || true
	fi
	pgroot_umount_all

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
