#!/usr/bin/env bash
# test/sanitize.sh: the pg_regress suite against amqfilter built with ASan and UBSan.
#
#   sudo bash test/sanitize.sh        (or without sudo, as a user who can run initdb)
#
# What it does, and what it leaves alone:
#
#  1. Copies the working tree (without build products) to a scratch directory and
#     builds the extension there with -fsanitize=address,undefined (COPT, so the flags
#     reach both compiling and linking; the .so then needs libasan and libubsan).
#  2. Installs that build into a scratch *copy* of PG_BIN's PostgreSQL's layout, never
#     into /usr/lib/postgresql/N: the postgres binary is copied to
#     $SCRATCH/root/usr/lib/postgresql/N/bin, everything else in lib/ and share/ is
#     symlinked, and `make install DESTDIR=$SCRATCH/root` puts the sanitized
#     amqfilter.so, control and SQL files next to them.  PostgreSQL finds $libdir and
#     its share directory relative to its own executable, so the copied server loads
#     the sanitized module while the system's installed amqfilter.so -- and every
#     other server using it -- is untouched.  Nothing needs re-installing afterwards.
#  3. Starts a throwaway cluster (test/lib.sh's start_cluster: as the postgres user
#     when run as root, its files under $SCRATCH) from that copied binary with
#     LD_PRELOAD=libasan (the unsanitized postgres executable must have the ASan
#     runtime loaded first; a small second preload works around an init-order
#     deadlock, see build_init_shim) and ASAN_OPTIONS/UBSAN_OPTIONS that log every
#     report to files, then checks via /proc/self/{environ,maps} of a backend that the
#     preload, the options and the sanitized module really are in place.
#  4. Canary: loads a tiny deliberately broken C function built with the same flags
#     and checks that ASan reports its heap overflow to the log -- proof that a report
#     from extension code would not go unseen.  (SANITIZE_CANARY=0 skips it.)
#  5. Runs `make installcheck` (the Makefile's REGRESS list) against the cluster, then
#     looks for reports in the sanitizer logs and in the server log.
#
# Exit status: 0 when the suite passed and no sanitizer reported anything; 1 otherwise.
# On failure the scratch directory (logs, regression.diffs) is kept and its path printed;
# SANITIZE_KEEP=1 keeps it always.
#
# Limit worth knowing: ASan only sees malloc-level allocations.  palloc carves small
# chunks out of blocks it mallocs, so an overrun of a small palloc'd chunk that stays
# inside its block is invisible; chunks above 8kB get a block of their own and are
# checked at its end.  Stack and global overruns in the module, reads of freed malloc
# memory, and everything UBSan checks (shifts, overflow, misalignment, bad enum/bool
# loads, null arguments to memcpy & co.) are caught in full.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SAN_FLAGS='-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all -g -O1'
SCRATCH=
SERVER_LOG_SKIP=0
DATA=
SERVER_LOG=
START=$SECONDS

# The EXIT trap: stops the cluster (keeping its files inside $SCRATCH) and removes
# $SCRATCH, unless the run failed or SANITIZE_KEEP=1.
cleanup() {
	local status=$?
	stop_cluster --keep
	if [ -n "$SCRATCH" ] && [ -d "$SCRATCH" ]; then
		if [ "$status" -ne 0 ] || [ "${SANITIZE_KEEP:-0}" = 1 ]; then
			log "kept $SCRATCH (server.log in amqfilter-pg.*/, sanitizer logs in san/," \
				"regression.diffs in tree/)"
		else
			rm -rf "$SCRATCH"
		fi
	fi
	return "$status"
}

# ---------------------------------------------------------------------------

copy_tree() {
	log "copy: $AMQ_ROOT -> $SCRATCH/tree"
	mkdir "$SCRATCH/tree"
	tar -C "$AMQ_ROOT" --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
		--exclude=./results --exclude=./log --exclude=./tmp_check \
		--exclude=./regression.diffs --exclude=./regression.out -cf - . \
		| tar -C "$SCRATCH/tree" -xf -
}

build_sanitized() {
	log "build: COPT='$SAN_FLAGS'"
	# with_llvm=no: no JIT bitcode (the cluster runs with jit = off anyway).
	make --no-print-directory -C "$SCRATCH/tree" PG_CONFIG="$PG_CONFIG" with_llvm=no \
		COPT="$SAN_FLAGS" >"$SCRATCH/build.log" 2>&1 \
		|| { cat "$SCRATCH/build.log" >&2; die "sanitized build failed"; }
	if grep -q 'warning:' "$SCRATCH/build.log"; then
		echo "note: the sanitized build printed warnings:" >&2
		grep 'warning:' "$SCRATCH/build.log" >&2
	fi
	# the output read whole first: grep -q stops at its first match, and
	# under pipefail the ldd it cut off would fail the pipeline
	local libs
	libs=$(ldd "$SCRATCH/tree/amqfilter.so")
	grep -q libasan <<<"$libs" \
		|| die "the sanitized amqfilter.so does not link libasan"
}

# A PostgreSQL layout under $SCRATCH/root that differs from the system's only in
# the postgres executable (a copy, so it locates lib/ and share/ under root/) and in
# the amqfilter files.
make_scratch_install() {
	local root=$SCRATCH/root bindir libdir sharedir f
	bindir=$root$("$PG_CONFIG" --bindir)
	libdir=$root$("$PG_CONFIG" --pkglibdir)
	sharedir=$root$("$PG_CONFIG" --sharedir)
	log "install: sanitized build into $root"
	make --no-print-directory -C "$SCRATCH/tree" PG_CONFIG="$PG_CONFIG" with_llvm=no \
		COPT="$SAN_FLAGS" DESTDIR="$root" install >>"$SCRATCH/build.log" 2>&1 \
		|| { cat "$SCRATCH/build.log" >&2; die "make install DESTDIR=$root failed"; }
	mkdir -p "$bindir"
	cp "$PG_BIN/postgres" "$bindir/postgres"
	for f in "$("$PG_CONFIG" --pkglibdir)"/*; do
		[ -e "$libdir/$(basename "$f")" ] || ln -s "$f" "$libdir/"
	done
	for f in "$("$PG_CONFIG" --sharedir)"/*; do
		[ -e "$sharedir/$(basename "$f")" ] || ln -s "$f" "$sharedir/"
	done
	for f in "$("$PG_CONFIG" --sharedir)"/extension/*; do
		[ -e "$sharedir/extension/$(basename "$f")" ] || ln -s "$f" "$sharedir/extension/"
	done
	SAN_POSTGRES=$bindir/postgres
	SAN_LIBDIR=$libdir
}

# Canary: a C function that overruns a malloc'd buffer, built with the same flags.
build_canary() {
	cat >"$SCRATCH/canary.c" <<-'EOF'
		#include "postgres.h"
		#include "fmgr.h"
		#include <stdlib.h>
		PG_MODULE_MAGIC;
		PG_FUNCTION_INFO_V1(asan_canary);
		PG_FUNCTION_INFO_V1(ubsan_canary);
		/*
		 * asan_canary(16, 16): reads one byte past a 16-byte malloc, for ASan
		 * to report (UBSan's object-size check of gcc 14 and later would
		 * report it first, to server.log, and stop the process before ASan)
		 */
		Datum		asan_canary(PG_FUNCTION_ARGS) __attribute__((no_sanitize_undefined));
		Datum
		asan_canary(PG_FUNCTION_ARGS)
		{
			volatile char *p = malloc(PG_GETARG_INT32(0));
			char		c = p[PG_GETARG_INT32(1)];

			free((void *) p);
			PG_RETURN_INT32(c);
		}
		/* ubsan_canary(40): shifts an int by 40 bits */
		Datum
		ubsan_canary(PG_FUNCTION_ARGS)
		{
			PG_RETURN_INT32(1 << PG_GETARG_INT32(0));
		}
	EOF
	gcc $SAN_FLAGS -fPIC -shared -I"$("$PG_CONFIG" --includedir-server)" \
		-o "$SAN_LIBDIR/amqfilter_asan_canary.so" "$SCRATCH/canary.c" \
		|| die "could not build the canary"
}

# ASan preloaded into an unsanitized executable initializes lazily, at the first
# malloc.  On Debian 12 (glibc 2.36, gcc 12 and clang 14 runtimes alike) the first
# malloc comes from bindtextdomain() in libgpg-error's constructor (postgres links
# libgcrypt), with glibc's gettext lock held; ASan's init then calls dlerror(), which
# takes the same lock: the lock state is corrupted and the next bindtextdomain() --
# postgres's own, in main() -- hangs forever.  This second preload wraps
# bindtextdomain() so that ASan initializes before the lock is taken.
build_init_shim() {
	cat >"$SCRATCH/asan_init_first.c" <<-'EOF'
		#define _GNU_SOURCE
		#include <dlfcn.h>
		#include <stdlib.h>
		char *bindtextdomain(const char *domain, const char *dir);
		char *
		bindtextdomain(const char *domain, const char *dir)
		{
			static char *(*real) (const char *, const char *);

			if (real == NULL)
			{
				void *volatile p = malloc(1);	/* initializes ASan, no lock held */

				free(p);
				real = (char *(*) (const char *, const char *))
					dlsym(RTLD_NEXT, "bindtextdomain");
			}
			return real(domain, dir);
		}
	EOF
	gcc -O2 -fno-builtin -Wall -fPIC -shared -o "$SCRATCH/asan_init_first.so" \
		"$SCRATCH/asan_init_first.c" -ldl || die "could not build the ASan init shim"
	SHIM=$SCRATCH/asan_init_first.so
}

# ---------------------------------------------------------------------------

start_sanitized_server() {
	local libasan libubsan
	SANDIR=$SCRATCH/san
	mkdir "$SANDIR"
	# start_cluster's directory goes in here: the server's user must enter it.
	chmod 755 "$SCRATCH"
	is_root && chown "$(cluster_owner):" "$SANDIR"

	libasan=$(readlink -f "$(gcc -print-file-name=libasan.so)")
	[ -f "$libasan" ] || die "no libasan.so from gcc -print-file-name"
	# libubsan too, although amqfilter.so pulls it in: loaded only then, in a backend,
	# it would read UBSAN_OPTIONS from that backend's /proc/self/environ, which the
	# process title has overwritten, and run with its defaults (stderr, no stacks).
	libubsan=$(readlink -f "$(gcc -print-file-name=libubsan.so)")
	[ -f "$libubsan" ] || die "no libubsan.so from gcc -print-file-name"
	# detect_leaks=0: memory contexts are never freed one chunk at a time, LSan would
	# drown in them.  abort_on_error: a report kills the backend (the client sees it).
	ASAN_OPTS="detect_leaks=0:abort_on_error=1:disable_coredump=1:halt_on_error=1"
	ASAN_OPTS+=":print_summary=1:log_path=$SANDIR/asan:verify_asan_link_order=0"
	UBSAN_OPTS="print_stacktrace=1:halt_on_error=1:abort_on_error=1:log_path=$SANDIR/ubsan"

	log "cluster: $SAN_POSTGRES with LD_PRELOAD=$libasan"
	# pg_ctl, and the shell it starts the server through, run with the preload as
	# well: unsanitized, they only get ASan's allocator.  jit = off: no JIT code
	# was built.  A backend killed by a sanitizer must not end the run silently.
	start_cluster --in "$SCRATCH" --postgres "$SAN_POSTGRES" \
		--env "LD_PRELOAD=$libasan $libubsan $SHIM" \
		--env "ASAN_OPTIONS=$ASAN_OPTS" --env "UBSAN_OPTIONS=$UBSAN_OPTS" \
		"jit = off" "restart_after_crash = on"
	DATA=$AMQ_CLUSTER_DIR/data
	SERVER_LOG=$AMQ_CLUSTER_DIR/server.log
}

# Prove that the preload, the options and the sanitized module are in place.
check_server_setup() {
	local env maps
	# The postmaster's: a backend's /proc/self/environ is overwritten by its process
	# title.  Backends inherit the postmaster's environment; the maps below and the
	# canary show that it works there.
	env=$(tr '\0' '\n' <"/proc/$(head -n 1 "$DATA/postmaster.pid")/environ")
	maps=$(run_psql -q -At -c "LOAD 'amqfilter'" \
		-c "SELECT string_agg(DISTINCT substring(l FROM '/\S+$'), E'\n')
		    FROM regexp_split_to_table(pg_read_file('/proc/self/maps'), E'\n') l
		    WHERE l ~ '(amqfilter|asan|ubsan)[^/]*$'")
	printf 'postmaster environment:\n%s\n' "$(grep -E '^(LD_PRELOAD|ASAN_OPTIONS|UBSAN_OPTIONS)=' <<<"$env" | sed 's/^/  /')"
	printf 'backend mappings:\n%s\n' "$(sed 's/^/  /' <<<"$maps")"
	grep -q '^LD_PRELOAD=.*libasan' <<<"$env" || die "LD_PRELOAD did not reach the postmaster"
	grep -q '^ASAN_OPTIONS=' <<<"$env" || die "ASAN_OPTIONS did not reach the postmaster"
	grep -q '^UBSAN_OPTIONS=' <<<"$env" || die "UBSAN_OPTIONS did not reach the postmaster"
	grep -qx "$SAN_LIBDIR/amqfilter.so" <<<"$maps" \
		|| die "the backend did not load $SAN_LIBDIR/amqfilter.so"
	grep -q 'libasan' <<<"$maps" || die "libasan is not mapped in the backend"
	grep -q 'libubsan' <<<"$maps" || die "libubsan is not mapped in the backend"
}

run_canary() {
	local i
	log "canary: an overflow and a bad shift in sanitized C functions must be reported"
	run_psql -q -c "CREATE FUNCTION pg_temp.asan_canary(int, int) RETURNS int
		AS '$SAN_LIBDIR/amqfilter_asan_canary', 'asan_canary' LANGUAGE C STRICT" \
		-c "SELECT pg_temp.asan_canary(16, 16)" >/dev/null 2>&1 || true
	wait_until_ready
	run_psql -q -c "CREATE FUNCTION pg_temp.ubsan_canary(int) RETURNS int
		AS '$SAN_LIBDIR/amqfilter_asan_canary', 'ubsan_canary' LANGUAGE C STRICT" \
		-c "SELECT pg_temp.ubsan_canary(40)" >/dev/null 2>&1 || true
	wait_until_ready
	for ((i = 0; i < 20; i++)); do
		grep -qs 'heap-buffer-overflow' "$SANDIR"/asan.* \
			&& grep -qs 'runtime error: shift exponent' "$SERVER_LOG" && break
		sleep 0.5
	done
	grep -qs 'heap-buffer-overflow' "$SANDIR"/asan.* \
		|| die "canary: no ASan report of the heap overflow in $SANDIR; the setup catches nothing"
	# UBSan ignores log_path here (gcc 12, combined with ASan): its reports go to
	# the server's stderr, i.e. server.log.
	grep -qs 'runtime error: shift exponent' "$SERVER_LOG" \
		|| die "canary: no UBSan report of the shift in server.log; the setup catches nothing"
	mkdir -p "$SCRATCH/canary"
	mv "$SANDIR"/* "$SCRATCH/canary/"
	log "canary: both reported as expected:"
	grep -h -E 'ERROR: AddressSanitizer|runtime error' "$SCRATCH"/canary/* "$SERVER_LOG" \
		| sed 's/^/    /' >&2
	# Their crashes are in the server log too; the checks after the suite start past them.
	SERVER_LOG_SKIP=$(wc -l <"$SERVER_LOG")
}

# ---------------------------------------------------------------------------

main() {
	local regress=ok reports=0 f

	ensure_packages
	SCRATCH=$(mktemp -d /tmp/amqfilter-sanitize.XXXXXX)
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM

	copy_tree
	build_sanitized
	make_scratch_install
	[ "${SANITIZE_CANARY:-1}" = 0 ] || build_canary
	build_init_shim
	start_sanitized_server
	check_server_setup
	[ "${SANITIZE_CANARY:-1}" = 0 ] || run_canary

	log "installcheck: pg_regress against the sanitized server"
	# The scratch tree is writable by root only; pg_regress runs as the caller.
	if ! make --no-print-directory -C "$SCRATCH/tree" PG_CONFIG="$PG_CONFIG" with_llvm=no \
		installcheck; then
		regress=FAIL
		if [ -f "$SCRATCH/tree/regression.diffs" ]; then
			echo "----- regression.diffs (first 200 lines) -----"
			head -n 200 "$SCRATCH/tree/regression.diffs"
		fi
	fi

	stop_cluster --keep
	for f in "$SANDIR"/*; do
		[ -e "$f" ] || continue
		reports=$((reports + 1))
		echo "----- sanitizer report: $f -----"
		cat "$f"
	done
	# Reports that missed the log files (e.g. written before log_path took effect), and
	# crashed backends.
	tail -n "+$((SERVER_LOG_SKIP + 1))" "$SERVER_LOG" >"$SCRATCH/server.suite.log"
	if grep -nE 'AddressSanitizer|runtime error:|UndefinedBehaviorSanitizer' \
		"$SCRATCH/server.suite.log"; then
		reports=$((reports + 1))
	fi
	if grep -nE 'terminated by signal|server process .* exited with exit code|was terminated' \
		"$SCRATCH/server.suite.log"; then
		echo "(a backend crashed; see $SERVER_LOG)"
		[ "$regress" = ok ] && regress=FAIL
	fi

	printf '\n===== sanitize summary =====\n'
	printf 'build       -fsanitize=address,undefined (%s)\n' "$SAN_FLAGS"
	printf 'installcheck %s\n' "$regress"
	printf 'sanitizer   %s report file(s)\n' "$reports"
	printf 'runtime     %ss\n' "$((SECONDS - START))"
	[ "$regress" = ok ] && [ "$reports" -eq 0 ]
}

main "$@"
