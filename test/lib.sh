# shellcheck shell=bash
# test/lib.sh: helpers shared by amqfilter's test, demo and benchmark scripts.
#
# Source it from a bash script that runs with `set -euo pipefail`:
#
#   ensure_packages      install PostgreSQL (AMQ_PG_MAJOR), its server headers and a C
#                        toolchain
#   ensure_toolchain     the same without PostgreSQL
#   install_packages MISSING PKG...
#                        apt-get install PKG as root, else stop naming MISSING
#   ensure_hll           the hll extension (postgresql-N-hll) in PG_BIN's PostgreSQL
#   build_and_install    -Werror build of the extension, then `make install`
#   bench_build_and_install
#                        the same for a benchmark, unless AMQ_BENCH_SKIP_BUILD=1
#   results_section FILE HEADING, results_without_section FILE HEADING
#                        one "## " section of a results file, or the file without it
#   results_provenance SCRIPT
#                        the lines that open a section: script, date, commit, CPU, load
#   shown_ms MS, ratio A B [DECIMALS]
#                        a time or "> N (timeout)", a ratio or "n/a", for results tables
#   pgxs_make ARGS...    make in the repository against PG_BIN's PostgreSQL
#   start_cluster [--in DIR] [--postgres EXE] [--env NAME=VALUE]... [--pg MAJOR]
#                 [--tcp] [SETTING...]
#                        throwaway cluster on a free port, stopped on exit; called
#                        again, another one next to it, of the same major or another
#   stop_cluster [--keep]
#                        stop them all and remove their files (safe to call twice)
#   run_psql ARGS...     psql that ignores ~/.psqlrc and stops at the first error
#   exec_ms SQL          server-side execution time of one run of SQL, in ms (after
#                        the SET commands SQL may begin with)
#   client_ms SQL        the same as psql's \timing sees it, without EXPLAIN
#   median_exec_ms RUNS SQL
#                        median of RUNS such times
#   timed_ms RUNS SQL [DECIMALS]
#                        the same after a warm-up run, or "timeout"
#   interleaved_ms [--client] RUNS SQL...
#                        the median time of each SQL, measured side by side in rounds
#   median [DECIMALS]    median of the numbers on standard input
#   pgbench_stat tps|latency MODE SECONDS SCRIPT
#                        one pgbench client running SCRIPT for SECONDS in query MODE:
#                        its transactions per second, or average latency in ms
#   foreign_scan_rows    rows the foreign scans returned, in the EXPLAIN ANALYZE
#                        output on standard input
#   pass MSG, fail MSG   print a check's verdict and count it (PASSES, FAILURES)
#   checks_summary NAME  print "NAME: N passed, M failed"; non-zero if any failed
#
# The cluster never runs as root: as root it runs as the `postgres` system user that
# Debian's package creates, otherwise as the calling user.

# The PostgreSQL the scripts build for and test: AMQ_PG_MAJOR, its major version,
# and PG_BIN, its bin directory (another installation, a relocated copy, say).
# Either follows from the other; given neither, Debian 12's: 15.  test/run.sh
# --pg MAJOR runs the scripts for majors the host lacks in Debian roots
# (test/pgroots.sh), where PG_BIN is Debian's directory of that major.
if [ -z "${AMQ_PG_MAJOR:-}" ] && [ -n "${PG_BIN:-}" ] && [ -x "$PG_BIN/pg_config" ]; then
	AMQ_PG_MAJOR=$("$PG_BIN/pg_config" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
fi
AMQ_PG_MAJOR=${AMQ_PG_MAJOR:-15}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/$AMQ_PG_MAJOR/bin}
PG_CONFIG=$PG_BIN/pg_config
export AMQ_PG_MAJOR PG_BIN PG_CONFIG

AMQ_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/pgroots.sh
source "$AMQ_ROOT/test/pgroots.sh"

# Debian packages the build and the tests need (gcc brings libasan and libubsan along
# through libgcc-N-dev; iproute2 provides ss, used to find a free port; python3
# reads META.json in test/meta.sh).
AMQ_TOOLCHAIN_PACKAGES=(make gcc libc6-dev iproute2 python3)
AMQ_PACKAGES=("postgresql-$AMQ_PG_MAJOR" "postgresql-server-dev-$AMQ_PG_MAJOR"
	"${AMQ_TOOLCHAIN_PACKAGES[@]}")

# First port tried for a throwaway cluster (AMQ_FIRST_PORT in the environment
# moves it, say next to another suite's), and how many to try after it: each
# cluster takes the first free one.
AMQ_FIRST_PORT=${AMQ_FIRST_PORT:-55432}
AMQ_PORT_TRIES=200
if ! [[ $AMQ_FIRST_PORT =~ ^[0-9]+$ ]] || [ "$AMQ_FIRST_PORT" -lt 1024 ] ||
	[ "$AMQ_FIRST_PORT" -gt $((65535 - AMQ_PORT_TRIES)) ]; then
	printf 'error: AMQ_FIRST_PORT must be a port from 1024 to %d, not %s\n' \
		$((65535 - AMQ_PORT_TRIES)) "$AMQ_FIRST_PORT" >&2
	exit 2
fi

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

is_root() { [ "$(id -u)" -eq 0 ]; }

# ---------------------------------------------------------------------------
# Packages
# ---------------------------------------------------------------------------

# Print the packages whose telltale file or command is missing, one a line.  File
# checks rather than dpkg keep this cheap and make it work where PostgreSQL was not
# installed from Debian packages.
missing_packages() {
	local includedir=
	[ -x "$PG_BIN/postgres" ] && [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] \
		|| echo "postgresql-$AMQ_PG_MAJOR"
	if [ -x "$PG_CONFIG" ]; then
		includedir=$("$PG_CONFIG" --includedir-server)
	fi
	[ -n "$includedir" ] && [ -f "$includedir/postgres.h" ] \
		&& [ -f "$("$PG_CONFIG" --pgxs)" ] || echo "postgresql-server-dev-$AMQ_PG_MAJOR"
	missing_toolchain
}

missing_toolchain() {
	command -v make >/dev/null || echo make
	command -v gcc >/dev/null || echo gcc
	[ -f /usr/include/stdio.h ] || echo libc6-dev
	command -v ss >/dev/null || echo iproute2
	command -v python3 >/dev/null || echo python3
}

# Install what the build and the tests need, touching apt only when something is missing.
ensure_packages() {
	local missing
	missing=$(missing_packages | tr '\n' ' ')
	if [ -z "$missing" ]; then
		log "packages: PostgreSQL $AMQ_PG_MAJOR, server headers and toolchain present"
		return 0
	fi
	install_packages "$missing" "${AMQ_PACKAGES[@]}"
	missing=$(missing_packages | tr '\n' ' ')
	[ -z "$missing" ] || die "still missing after apt-get install: $missing"
}

# The toolchain alone: for what runs without PostgreSQL (the core's tests).
ensure_toolchain() {
	local missing
	missing=$(missing_toolchain | tr '\n' ' ')
	if [ -z "$missing" ]; then
		log "packages: toolchain present"
		return 0
	fi
	install_packages "$missing" "${AMQ_TOOLCHAIN_PACKAGES[@]}"
	missing=$(missing_toolchain | tr '\n' ' ')
	[ -z "$missing" ] || die "still missing after apt-get install: $missing"
}

# install_packages MISSING PKG...: apt-get install the packages PKG, as root; otherwise
# stop and say how, naming MISSING, what the caller found missing.  Callers check
# before and after, each with its own list of what it needs.
install_packages() {
	local missing=$1
	shift
	if ! is_root; then
		die "missing: ${missing% }; install them first, e.g." \
			"sudo apt-get install $* (or run this script with sudo)"
	fi
	log "packages: installing $*"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y --no-install-recommends "$@"
}

# ensure_hll: the hll extension, from Debian's package, in the PostgreSQL PG_BIN
# belongs to.  A relocated copy of the system's PostgreSQL (PG_BIN elsewhere) gets
# the package's files copied in from the system's directories.
ensure_hll() {
	local sharedir pkglibdir m=$AMQ_PG_MAJOR
	sharedir=$("$PG_CONFIG" --sharedir)
	pkglibdir=$("$PG_CONFIG" --pkglibdir)
	[ -f "$sharedir/extension/hll.control" ] && return 0
	[ -f "/usr/share/postgresql/$m/extension/hll.control" ] \
		|| install_packages "postgresql-$m-hll" "postgresql-$m-hll"
	if [ ! -f "$sharedir/extension/hll.control" ] && [ -f "/usr/lib/postgresql/$m/lib/hll.so" ]; then
		log "packages: copying hll into $sharedir and $pkglibdir"
		cp "/usr/lib/postgresql/$m/lib/hll.so" "$pkglibdir/"
		cp "/usr/share/postgresql/$m/extension/"hll[-.]* "$sharedir/extension/"
	fi
	[ -f "$sharedir/extension/hll.control" ] \
		|| die "postgresql-$m-hll installed, but $sharedir/extension/hll.control is missing (PG_BIN=$PG_BIN)"
}

# ---------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------

# Build and install the working tree, for a benchmark: unless AMQ_BENCH_SKIP_BUILD=1,
# which measures the extension already installed.
bench_build_and_install() {
	if [ "${AMQ_BENCH_SKIP_BUILD:-0}" = 1 ]; then
		log "build: skipped (AMQ_BENCH_SKIP_BUILD=1), using the installed extension"
	else
		ensure_packages
		build_and_install
	fi
}

# results_section FILE HEADING: the section of a results file that begins with
# the line HEADING, up to the next "## " heading or the end (nothing if there is
# none).  results_without_section FILE HEADING: the file without it.  Scripts
# that each write a section of one file keep the others' sections with these.
# Both read HEADING as results_heading gives it for the major measured.
# results_heading HEADING: HEADING, with the major when it is not 15
results_heading() {
	if [ "$AMQ_PG_MAJOR" = 15 ]; then echo "$1"; else echo "$1, PostgreSQL $AMQ_PG_MAJOR"; fi
}

results_section() {
	[ -f "$1" ] || return 0
	awk -v h="$(results_heading "$2")" '$0 == h { on = 1; print; next } on && /^## / { on = 0 } on' "$1"
}

results_without_section() {
	[ -f "$1" ] || return 0
	awk -v h="$(results_heading "$2")" '$0 == h { off = 1; next } off && /^## / { off = 0 } !off' "$1"
}

# results_replace_section FILE HEADING: replaces the section HEADING of a results
# file with the lines on standard input (under HEADING and a blank line), moved
# to the end; the other sections stay as they are.  Measured on another major
# than 15, the heading names it ("## Filter index: lookups, PostgreSQL 18"), so
# that the majors' sections stand side by side.
results_replace_section() {
	local body kept
	body=$(cat)
	kept=$(results_without_section "$1" "$2")
	set -- "$1" "$(results_heading "$2")"
	{
		if [ -n "$kept" ]; then
			printf '%s\n\n' "$kept"
		fi
		printf '%s\n\n%s\n' "$2" "$body"
	} >"$1.new"
	mv "$1.new" "$1"
}

# results_provenance SCRIPT: the lines under a results section's heading that say
# which script wrote it, when, from which commit, on which CPU, and how loaded the
# machine was when it was done.
results_provenance() {
	echo "Generated by \`sudo bash $1\` (bench/run.sh keeps this section)."
	echo
	echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- Commit: ${AMQ_COMMIT:-$(git -C "$AMQ_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
	echo "- CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1) (nproc: $(nproc))"
	echo "- Load average when done: $(cut -d' ' -f1-3 /proc/loadavg) (the machine may be shared"
	echo "  with other work: ratios measured in one run are what to compare)."
}

pgxs_make() {
	make --no-print-directory -C "$AMQ_ROOT" PG_CONFIG="$PG_CONFIG" "$@"
}

# Clean build that fails on any compiler warning, then install into PG_BIN's PostgreSQL.
# The compiler's output goes to stdout, or to stderr when the build fails.
build_and_install() {
	local output status=0

	pgxs_make clean >/dev/null
	# -Werror through CPPFLAGS reaches both gcc and the clang that PGXS runs for
	# JIT bitcode; the grep below is a second net for warnings -Werror misses
	log "build: make PG_CPPFLAGS=-Werror"
	output=$(pgxs_make PG_CPPFLAGS=-Werror 2>&1) || status=$?
	if [ "$status" -ne 0 ]; then
		printf '%s\n' "$output" >&2
		echo "build failed (make exited with $status)" >&2
		return 1
	fi
	if grep -q 'warning:' <<<"$output"; then
		printf '%s\n' "$output" >&2
		echo "build printed compiler warnings; the build must be warning-free:" >&2
		grep 'warning:' <<<"$output" >&2
		return 1
	fi
	printf '%s\n' "$output"

	log "build: make install"
	if ! pgxs_make install; then
		if is_root; then
			echo "make install failed" >&2
		else
			echo "make install failed: run as root (sudo) or make" \
				"$("$PG_CONFIG" --pkglibdir) and $("$PG_CONFIG" --sharedir)/extension" \
				"writable for $(id -un)" >&2
		fi
		return 1
	fi
}

# ---------------------------------------------------------------------------
# Throwaway cluster
# ---------------------------------------------------------------------------

# The directory of the cluster started last (the one the libpq environment points
# at), and those of every cluster started and not stopped yet, in starting order.
AMQ_CLUSTER_DIR=
AMQ_CLUSTER_DIRS=()
# Of a cluster started in a Debian root (start_cluster --pg): its root, and the bin
# directory of its PostgreSQL there, by the cluster's directory.
declare -A AMQ_CLUSTER_CHROOT=() AMQ_CLUSTER_BIN=()
# the roots start_cluster mounted, which stop_cluster unmounts
AMQ_CLUSTER_MOUNTS=()

# The user the server runs as: never root.
cluster_owner() {
	if is_root; then echo postgres; else id -un; fi
}

as_cluster_owner() {
	if is_root; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# True when PORT is in use: a listening TCP socket, or a PostgreSQL unix socket (or
# its lock file) for that port anywhere, including other throwaway clusters, which
# listen on no TCP port at all.
port_in_use() {
	local port=$1
	[ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ] && return 0
	# grep reads all of it: grep -q would stop at a match and, under pipefail,
	# the ss it cut off would make the port look free
	ss -Hlx 2>/dev/null | grep "\.s\.PGSQL\.$port\b" >/dev/null && return 0
	local dir
	for dir in /tmp /var/run/postgresql; do
		[ -e "$dir/.s.PGSQL.$port" ] || [ -e "$dir/.s.PGSQL.$port.lock" ] && return 0
	done
	return 1
}

find_free_port() {
	local port
	for ((port = AMQ_FIRST_PORT; port < AMQ_FIRST_PORT + AMQ_PORT_TRIES; port++)); do
		if ! port_in_use "$port"; then
			echo "$port"
			return 0
		fi
	done
	echo "no free port in $AMQ_FIRST_PORT..$((port - 1))" >&2
	return 1
}

# Start a throwaway cluster and point the libpq environment at it.  Extra arguments
# are postgresql.conf lines ("work_mem = '64MB'") appended after the defaults, so
# they win.  Several scripts may each run some at the same time, and one script
# several (a coordinator and its shards, say: each call starts one more, on its own
# port, and the caller notes PGHOST and PGPORT after each): every cluster has its
# own data and socket directories.  Options, before the settings:
#   --in DIR        make the cluster's directory (data/, socket/, server.log) in DIR,
#                   which the server's user must be able to enter, instead of /tmp
#   --at DIR        make it in DIR itself (new or empty), e.g. to keep it afterwards
#   --postgres EXE  run this server executable instead of $PG_BIN/postgres
#   --env NAME=VALUE
#                   add to the server's environment (pg_ctl, which starts it, and
#                   the shell pg_ctl starts it through get it too)
# The clusters are stopped on exit: start_cluster sets an EXIT trap unless the caller
# has one, which must then call stop_cluster itself.  Two more options:
#   --pg MAJOR      a cluster of PostgreSQL MAJOR: PG_BIN's if that is MAJOR, the
#                   host's Debian package if installed, else in MAJOR's Debian root
#                   (test/pgroots.sh, which must have made it; the extension is
#                   whatever was installed there), its files in the root's /tmp
#   --tcp           listen on 127.0.0.1 too (PGHOST is then 127.0.0.1): what a
#                   cluster in one root reaches a cluster in another by
start_cluster() {
	local owner port data sockdir setting parent='' at='' bin=$PG_BIN croot='' listen=''
	local -a server_env=() postgres_opt=()

	while [ $# -gt 0 ]; do
		case $1 in
			--in) parent=$2; shift 2 ;;
			--at) at=$2; shift 2 ;;
			--postgres) postgres_opt=(-p "$2"); shift 2 ;;
			--env) server_env+=("$2"); shift 2 ;;
			--pg)
				if [ "$2" != "$AMQ_PG_MAJOR" ]; then
					bin=/usr/lib/postgresql/$2/bin
					if [ ! -x "$bin/postgres" ]; then
						croot=$(pgroot_of "$2")
						[ -x "$croot$bin/postgres" ] \
							|| die "PostgreSQL $2: not installed, nor in $croot (bash test/pgroots.sh ensure $2)"
						pgroot_mount "$croot"
						[ "$AMQ_PGROOT_DID_MOUNT" = no ] || AMQ_CLUSTER_MOUNTS+=("$croot")
					fi
				fi
				shift 2
				;;
			--tcp) listen=127.0.0.1; shift ;;
			*) break ;;
		esac
	done
	parent=${parent:-$croot/tmp}
	owner=$(cluster_owner)
	[ -z "$croot" ] || owner=postgres
	port=$(find_free_port)

	if [ -n "$at" ]; then
		# a place the caller chose: new or empty, so that nothing there is lost
		if [ -e "$at" ] && [ -n "$(ls -A "$at")" ]; then
			die "$at is not empty: give a new or empty directory for the cluster"
		fi
		mkdir -p "$at"
		AMQ_CLUSTER_DIR=$(cd "$at" && pwd)
	else
		AMQ_CLUSTER_DIR=$(mktemp -d "$parent/amqfilter-pg.XXXXXX")
	fi
	AMQ_CLUSTER_DIRS+=("$AMQ_CLUSTER_DIR")
	AMQ_CLUSTER_CHROOT[$AMQ_CLUSTER_DIR]=$croot
	AMQ_CLUSTER_BIN[$AMQ_CLUSTER_DIR]=$bin
	[ -n "$(trap -p EXIT)" ] || trap stop_cluster EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	data=$AMQ_CLUSTER_DIR/data
	sockdir=$AMQ_CLUSTER_DIR/socket
	mkdir "$data" "$sockdir"
	chmod 700 "$data"
	# mktemp makes the directory 0700: the server's user must be able to enter it.
	chmod 755 "$AMQ_CLUSTER_DIR"
	if [ -n "$croot" ]; then
		pgroot_exec "$croot" chown -R postgres: "${AMQ_CLUSTER_DIR#"$croot"}"
	elif is_root; then
		chown -R "$owner:" "$AMQ_CLUSTER_DIR"
	fi

	# initdb turns data checksums on from 18: off, as before 18, so that every
	# major's cluster is alike (test/index_corrupt.sh edits pages and expects
	# the index's own checks, not a checksum failure, to catch them)
	local major checksums=()
	major=$(sed -n 's|.*/postgresql/\([0-9][0-9]*\)/bin$|\1|p' <<<"$bin")
	[ "${major:-$AMQ_PG_MAJOR}" -lt 18 ] || checksums=(--no-data-checksums)
	log "cluster: initdb in $data (owner $owner${croot:+, PostgreSQL in $croot})"
	cluster_exec "$AMQ_CLUSTER_DIR" "$bin/initdb" --pgdata="${data#"$croot"}" --username="$owner" \
		--auth=trust --encoding=UTF8 --locale=C --no-sync "${checksums[@]}" \
		>"$AMQ_CLUSTER_DIR/initdb.log" 2>&1 \
		|| { cat "$AMQ_CLUSTER_DIR/initdb.log" >&2; die "initdb failed"; }

	{
		echo "# throwaway cluster for amqfilter's tests"
		echo "listen_addresses = '$listen'"
		echo "port = $port"
		echo "unix_socket_directories = '${sockdir#"$croot"}'"
		echo "fsync = off"
		echo "synchronous_commit = off"
		echo "full_page_writes = off"
		echo "shared_buffers = '128MB'"
		echo "work_mem = '16MB'"
		echo "maintenance_work_mem = '256MB'"
		echo "max_wal_size = '2GB'"
		echo "checkpoint_timeout = '30min'"
		# The regression tests force parallel plans.
		echo "max_worker_processes = 8"
		echo "max_parallel_workers = 4"
		echo "max_parallel_workers_per_gather = 2"
		echo "log_min_messages = warning"
		for setting in "$@"; do
			echo "$setting"
		done
	} >>"$data/postgresql.conf"

	log "cluster: starting on port $port, socket in $sockdir"
	if ! cluster_exec "$AMQ_CLUSTER_DIR" env "${server_env[@]}" "$bin/pg_ctl" "${postgres_opt[@]}" \
		--pgdata="${data#"$croot"}" --log="${AMQ_CLUSTER_DIR#"$croot"}/server.log" --wait \
		--timeout=60 start >/dev/null; then
		tail -n 50 "$AMQ_CLUSTER_DIR/server.log" >&2 || true
		die "the server did not start"
	fi

	export PGHOST=${listen:-$sockdir} PGPORT=$port PGUSER=$owner PGDATABASE=postgres
	wait_until_ready
}

# cluster_exec DIR CMD...: CMD as the server's user of the cluster in DIR, in its
# Debian root if it runs in one (CMD then names paths as the root sees them).
cluster_exec() {
	local croot=${AMQ_CLUSTER_CHROOT[$1]:-}
	shift
	if [ -n "$croot" ]; then
		pgroot_exec "$croot" runuser -u postgres -- "$@"
	else
		as_cluster_owner "$@"
	fi
}

wait_until_ready() {
	local i
	for ((i = 0; i < 60; i++)); do
		if "$PG_BIN/pg_isready" --quiet; then
			return 0
		fi
		sleep 0.5
	done
	tail -n 50 "$AMQ_CLUSTER_DIR/server.log" >&2 || true
	die "the server is not accepting connections on $PGHOST port $PGPORT"
}

# Stop every throwaway cluster this shell started, newest first, and remove their
# files, or with --keep leave them (the caller reads their logs, then removes them).
# Runs from the EXIT trap, so it must not fail, and does nothing when no cluster is
# running.
stop_cluster() {
	local dirs=("${AMQ_CLUSTER_DIRS[@]}") i
	AMQ_CLUSTER_DIR=
	AMQ_CLUSTER_DIRS=()
	for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do
		stop_one_cluster "${dirs[i]}" "${1:-}"
	done
	unset PGHOST PGPORT PGUSER PGDATABASE
	for ((i = 0; i < ${#AMQ_CLUSTER_MOUNTS[@]}; i++)); do
		pgroot_umount "${AMQ_CLUSTER_MOUNTS[i]}"
	done
	AMQ_CLUSTER_MOUNTS=()
}

stop_one_cluster() {
	local dir=$1 keep=$2 croot=${AMQ_CLUSTER_CHROOT[$1]:-} bin=${AMQ_CLUSTER_BIN[$1]:-$PG_BIN}
	local data=$1/data
	data=${data#"$croot"}
	if [ -f "$dir/data/postmaster.pid" ]; then
		cluster_exec "$dir" "$bin/pg_ctl" --pgdata="$data" --mode=fast --wait \
			--timeout=60 stop >/dev/null 2>&1 \
			|| cluster_exec "$dir" "$bin/pg_ctl" --pgdata="$data" --mode=immediate \
				--wait stop >/dev/null 2>&1 \
			|| echo "warning: could not stop the server in $dir/data" >&2
	fi
	if [ "$keep" = --keep ]; then
		log "cluster: stopped, files kept in $dir"
		return 0
	fi
	rm -rf "$dir"
	log "cluster: stopped and removed"
}

# ---------------------------------------------------------------------------
# SQL
# ---------------------------------------------------------------------------

run_psql() {
	"$PG_BIN/psql" -X -v ON_ERROR_STOP=1 "$@"
}

# leading_sets SQL: splits SQL into the SET commands it begins with ("SET a = b;
# SET c = d; SELECT ..."; no ';' in their values), as psql -c arguments in
# SQL_SETUP, and the rest in SQL_BODY.
leading_sets() {
	SQL_SETUP=()
	SQL_BODY=$1
	while [[ $SQL_BODY =~ ^[[:space:]]*(SET[[:space:]][^\;]*\;)(.*)$ ]]; do
		SQL_SETUP+=(-c "${BASH_REMATCH[1]}")
		SQL_BODY=${BASH_REMATCH[2]}
	done
}

# Execution time of one run of SQL in milliseconds, as EXPLAIN (ANALYZE, TIMING OFF)
# reports it: planning and sending rows to the client are not included, and no
# per-node clock reads distort it.  SQL may begin with SET commands (leading_sets):
# they run first, in the same session, untimed, so that queries measured side by
# side may differ in settings.
exec_ms() {
	local ms
	leading_sets "$1"
	ms=$(run_psql -At "${SQL_SETUP[@]}" -c "EXPLAIN (ANALYZE, TIMING OFF) $SQL_BODY" \
		| sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p')
	[ -n "$ms" ] || die "no execution time reported for: $1"
	echo "$ms"
}

# Time of one run of SQL in milliseconds as psql's \timing reports it: planning,
# execution and the round trip, without EXPLAIN ANALYZE's instrumentation, which
# costs a function call or two per row in every plan node.  SQL as for exec_ms.
client_ms() {
	local ms
	leading_sets "$1"
	ms=$(run_psql -At "${SQL_SETUP[@]}" -c '\timing on' -c "$SQL_BODY" \
		| sed -n 's/^Time: \([0-9.]*\) ms.*$/\1/p' | tail -n 1)
	[ -n "$ms" ] || die "no time reported for: $1"
	echo "$ms"
}

median_exec_ms() {
	local runs=$1 sql=$2 i
	for ((i = 0; i < runs; i++)); do
		exec_ms "$sql"
	done | median
}

# interleaved_ms [--client] RUNS SQL...: the median execution time of each SQL
# (exec_ms; with --client, client_ms), one a line in order, measured in RUNS
# rounds that each run every SQL once (after one warm-up round; see
# interleaved_rounds).  On a machine whose speed drifts (shared, virtual),
# queries measured side by side see the same drift, so their ratios are
# steadier than when each query's runs come one after the other.
interleaved_ms() {
	local rounds n i
	rounds=$(interleaved_rounds "$@")
	n=$#
	[ "$1" != --client ] || n=$((n - 1))
	for ((i = 0; i < n - 1; i++)); do
		round_median "$i" <<<"$rounds"
	done
}

# interleaved_rounds [--client] RUNS SQL...: after a warm-up round, the times of
# RUNS rounds that each run every SQL once, one line a round, the SQLs' times in
# the order given.  Round r runs the SQLs starting from the (r mod n)-th, so
# that none always runs right after the same other one.  round_median and
# round_ratio read these lines.
interleaved_rounds() {
	local timer=exec_ms
	if [ "$1" = --client ]; then
		timer=client_ms
		shift
	fi
	local runs=$1 sql r j i n
	shift
	local -a sqls=("$@") line=()
	n=${#sqls[@]}
	for sql in "${sqls[@]}"; do
		"$timer" "$sql" >/dev/null
	done
	for ((r = 0; r < runs; r++)); do
		for ((j = 0; j < n; j++)); do
			i=$(((r + j) % n))
			line[i]=$("$timer" "${sqls[i]}")
		done
		echo "${line[*]}"
	done
}

# round_median COLUMN [DECIMALS]: the median of one SQL's times (0-based column)
# over the rounds on standard input (interleaved_rounds).
round_median() {
	awk -v c="$1" '{ print $(c + 1) }' | median "${2:-1}"
}

# round_ratio COLUMN BASE_COLUMN [DECIMALS]: the median over the rounds on
# standard input of the ratio of two SQLs' times in the same round (default 2
# places).  Paired within a round, a ratio follows the machine when its speed
# drifts between rounds, where a ratio of two medians would not.
round_ratio() {
	awk -v a="$1" -v b="$2" '$(b + 1) > 0 { printf "%.6f\n", $(a + 1) / $(b + 1) }' \
		| median "${3:-2}"
}

# pgbench_stat tps|latency MODE SECONDS SCRIPT: what one pgbench client running
# the pgbench script SCRIPT (SQL, and \set lines) for SECONDS in query MODE
# (simple, extended, prepared) reports: transactions per second, or the
# average latency in ms.  Empty if pgbench failed.
pgbench_stat() {
	local file pattern
	case $1 in
		tps) pattern='s/^tps = \([0-9.]*\) .*/\1/p' ;;
		latency) pattern='s/^latency average = \([0-9.]*\) ms$/\1/p' ;;
		*) die "pgbench_stat: tps or latency, not $1" ;;
	esac
	file=$(mktemp /tmp/amqfilter-bench.XXXXXX.sql)
	printf '%s\n' "$4" >"$file"
	"$PG_BIN/pgbench" -n -M "$2" -T "$3" -f "$file" 2>&1 | sed -n "$pattern"
	rm -f "$file"
}

# median [DECIMALS]: the median of the numbers on standard input, one a line, to
# DECIMALS places (default 1).
median() {
	sort -g | awk -v decimals="${1:-1}" '{ t[NR] = $1 }
		END {
			if (NR == 0) exit 1
			printf "%." decimals "f\n", (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
		}'
}

# timed_ms RUNS SQL [DECIMALS]: after a warm-up run, the median of RUNS execution
# times of SQL (exec_ms) to DECIMALS places (default 1), or "timeout" when the
# warm-up run ran past the statement_timeout; any other error stops the script.
timed_ms() {
	local runs=$1 sql=$2 decimals=${3:-1} i out
	if ! out=$(run_psql -At -c "EXPLAIN (ANALYZE, TIMING OFF) $sql" 2>&1); then
		grep -q 'statement timeout' <<<"$out" || die "failed: $sql: $out"
		echo timeout
		return
	fi
	for ((i = 0; i < runs; i++)); do
		exec_ms "$sql"
	done | median "$decimals"
}

# shown_ms MS: a time for a results table: MS, or "> N (timeout)" for "timeout",
# N the statement_timeout in ms (TIMEOUT_S, seconds, set by the caller).
shown_ms() {
	if [ "$1" = timeout ]; then echo "> $((TIMEOUT_S * 1000)) (timeout)"; else echo "$1"; fi
}

# ratio A B [DECIMALS]: A / B to DECIMALS places (default 1), "n/a" when either
# timed out or B is 0.
ratio() {
	if [ "$1" = timeout ] || [ "$2" = timeout ] || [ "$2" = 0 ]; then
		echo "n/a"
	else
		awk -v a="$1" -v b="$2" -v d="${3:-1}" 'BEGIN { printf "%." d "f", a / b }'
	fi
}

# foreign_scan_rows: the rows every Foreign Scan node returned (actual rows times
# loops), summed, from the text output of EXPLAIN (ANALYZE) on standard input: what
# postgres_fdw fetched from the remote servers.  (Since 18 EXPLAIN gives the rows
# per loop with two decimals.)
foreign_scan_rows() {
	awk '/Foreign Scan/ && match($0, /actual rows=[0-9.]+ loops=[0-9]+/) {
			split(substr($0, RSTART, RLENGTH), f, /[= ]/)
			rows += f[3] * f[5]
		}
		END { printf "%d\n", rows + 0.5 }'
}

# ---------------------------------------------------------------------------
# Checks of the shell test scripts
# ---------------------------------------------------------------------------

PASSES=0
FAILURES=0

pass() {
	PASSES=$((PASSES + 1))
	printf 'PASS  %s\n' "$*"
}

fail() {
	FAILURES=$((FAILURES + 1))
	printf 'FAIL  %s\n' "$*"
}

checks_summary() {
	echo "$1: $PASSES passed, $FAILURES failed"
	[ "$FAILURES" -eq 0 ]
}
