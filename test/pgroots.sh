# shellcheck shell=bash
# test/pgroots.sh: Debian roots that carry the PostgreSQL majors the host lacks.
#
# Debian 12 carries PostgreSQL 15 only; 17 is in trixie, 18 in sid and 19 in
# experimental.  Each of those majors is built and tested in a minimal Debian
# root made with debootstrap, entered with chroot:
#
#   major   root      packages
#   17      trixie    postgresql-17, postgresql-server-dev-17
#   18      sid       postgresql-18, postgresql-server-dev-18
#   19      sid       the same root, postgresql-19 from experimental
#
# Run as a script:
#
#   bash test/pgroots.sh ensure MAJOR...   make the roots of these majors, or reuse them
#   bash test/pgroots.sh path MAJOR        print the root of MAJOR
#   bash test/pgroots.sh shell MAJOR       a shell in MAJOR's root
#   bash test/pgroots.sh run MAJOR CMD...  CMD in MAJOR's root, in this working tree
#                                          (mounted there at the same path), for
#                                          MAJOR: `run 18 bash bench/skip.sh`
#
# or source it (after test/lib.sh) for the functions:
#
#   pgroot_majors              the majors that live in roots, one a line
#   pgroot_of MAJOR            the root's directory
#   pgroot_ensure MAJOR        make the root of MAJOR and install MAJOR in it,
#                              unless that is done already
#   pgroot_mount ROOT          /proc, /dev and a private /dev/shm in ROOT, unless
#                              mounted (pgroot_umount_all undoes what it did)
#   pgroot_umount ROOT         unmount everything under ROOT
#   pgroot_exec ROOT CMD...    CMD inside ROOT, in a clean environment (the
#                              NAME=VALUE words before CMD are added to it)
#
# The roots live in AMQ_ROOTS_DIR (default /var/cache/amqfilter-roots), outside
# any clone, so that every run of the tests, from any clone, reuses them.  A
# root is complete once its stamp file is written, last; a root without it was
# left half-made (the run was stopped) and is made again.  A lock keeps two runs
# from making the same root at once.  The packages come from the Debian mirror
# the host's apt sources name (AMQ_DEBIAN_MIRROR overrides it); that mirror may
# be a snapshot whose Release files have expired, so the roots' apt does not
# check their dates.  Making a root takes about a minute, installing a major in
# it another.

AMQ_ROOTS_DIR=${AMQ_ROOTS_DIR:-/var/cache/amqfilter-roots}
# what the build and the tests need in a root, besides the major itself
AMQ_ROOT_PACKAGES=(make gcc libc6-dev iproute2 python3 binutils util-linux ca-certificates)
# bumped when the recipe of a root changes, so that older roots are made again
AMQ_ROOT_RECIPE=1
AMQ_MOUNTED_ROOTS=()

pgroot_majors() {
	printf '%s\n' 17 18 19
}

# pgroot_suite MAJOR: the Debian suite of MAJOR's root
pgroot_suite() {
	case $1 in
		17) echo trixie ;;
		18 | 19) echo sid ;;
		*) return 1 ;;
	esac
}

pgroot_of() {
	local suite
	suite=$(pgroot_suite "$1") || { echo "no root carries PostgreSQL $1" >&2; return 1; }
	echo "$AMQ_ROOTS_DIR/$suite"
}

# debian_mirror: the Debian archive the host's apt reads (not the security
# archive), from its one-line or deb822 sources.
debian_mirror() {
	if [ -n "${AMQ_DEBIAN_MIRROR:-}" ]; then
		echo "$AMQ_DEBIAN_MIRROR"
		return 0
	fi
	local mirror
	mirror=$(
		{
			cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
				| awk '$1 == "deb" {
						i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
						if ($(i + 1) !~ /-(security|updates|backports)$/ && $i ~ /debian\/?$/) print $i
					}'
			cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
				| awk 'function flush() {
						if (deb && suites !~ /-(security|updates|backports)( |$)/ && uri ~ /debian\/?$/) print uri
						deb = 0; suites = ""; uri = ""
					}
					/^[[:space:]]*$/ { flush(); next }
					/^Types:/ { deb = ($0 ~ /(^|[ :])deb( |$)/) }
					/^URIs:/ { uri = $2 }
					/^Suites:/ { suites = $0 }
					END { flush() }'
		} | head -n 1
	)
	[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
	echo "${mirror%/}"
}

# pgroot_umount ROOT: unmount everything mounted under ROOT, deepest first
pgroot_umount() {
	local root mnt
	root=$(realpath -m "$1")
	awk -v r="$root/" 'index($2 "/", r) == 1 { print $2 }' /proc/mounts | sort -r \
		| while read -r mnt; do
			umount "$mnt" 2>/dev/null || umount -l "$mnt"
		done
}

pgroot_mount() {
	local root=$1 did=no
	mountpoint -q "$root/proc" || { mount -t proc proc "$root/proc"; did=yes; }
	if ! mountpoint -q "$root/dev"; then
		mount --bind /dev "$root/dev"
		# nothing mounted on the root's /dev (its /dev/shm below) may reach the
		# host's, where / is a shared mount
		mount --make-private "$root/dev"
		did=yes
	fi
	# PostgreSQL's dynamic shared memory: a /dev/shm of the root's own
	if ! mountpoint -q "$root/dev/shm" || [ "$did" = yes ]; then
		mount -t tmpfs -o mode=1777,size=2g shm "$root/dev/shm"
		did=yes
	fi
	[ "$did" = no ] || AMQ_MOUNTED_ROOTS+=("$root")
	AMQ_PGROOT_DID_MOUNT=$did
}

pgroot_umount_all() {
	local root
	for root in "${AMQ_MOUNTED_ROOTS[@]}"; do
		pgroot_umount "$root"
	done
	AMQ_MOUNTED_ROOTS=()
}

pgroot_exec() {
	local root=$1
	shift
	local -a envs=()
	while [ $# -gt 0 ] && [[ $1 == [A-Za-z_]*=* ]]; do
		envs+=("$1")
		shift
	done
	chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		DEBIAN_FRONTEND=noninteractive "${envs[@]}" "$@"
}

# pgroot_make ROOT SUITE: a minimal Debian SUITE in ROOT, with the packages the
# build and the tests need; ROOT/.amqfilter-root marks it complete.
pgroot_make() {
	local root=$1 suite=$2 mirror start=$SECONDS
	mirror=$(debian_mirror)
	if [ -e "$root" ]; then
		log "roots: $root is half-made; making it again"
		pgroot_umount "$root"
		rm -rf --one-file-system "$root"
	fi
	command -v debootstrap >/dev/null || install_packages debootstrap debootstrap
	log "roots: debootstrap $suite into $root from $mirror"
	mkdir -p "$(dirname "$root")"
	if ! debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1; then
		tail -n 30 "$root.debootstrap.log" >&2
		die "debootstrap $suite failed (the whole log: $root.debootstrap.log)"
	fi
	echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99amqfilter"
	{
		echo 'APT::Install-Recommends "false";'
		echo 'APT::Install-Suggests "false";'
	} >>"$root/etc/apt/apt.conf.d/99amqfilter"
	echo "deb $mirror $suite main" >"$root/etc/apt/sources.list"
	if [ "$suite" = sid ]; then
		echo "deb $mirror experimental main" >>"$root/etc/apt/sources.list"
	fi
	# no services start in the root when packages are installed
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	# Debian's postgresql-common makes a cluster for each major it installs:
	# the tests make their own
	mkdir -p "$root/etc/postgresql-common"
	echo 'create_main_cluster = false' >"$root/etc/postgresql-common/createcluster.conf"
	cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	pgroot_mount "$root"
	pgroot_exec "$root" apt-get update -q >/dev/null
	pgroot_exec "$root" apt-get install -y -q "${AMQ_ROOT_PACKAGES[@]}" >/dev/null
	echo "$AMQ_ROOT_RECIPE $suite $mirror" >"$root/.amqfilter-root"
	log "roots: $suite made in $((SECONDS - start))s"
}

# pgroot_ensure MAJOR: MAJOR's root, complete, with MAJOR installed in it
pgroot_ensure() {
	local major=$1 root suite stamp start=$SECONDS
	local -a target=()
	is_root || die "making and entering the Debian roots needs root (sudo)"
	root=$(pgroot_of "$major") || return 1
	suite=$(pgroot_suite "$major")
	stamp=$root/.amqfilter-pg$major
	mkdir -p "$AMQ_ROOTS_DIR"
	(
		trap pgroot_umount_all EXIT
		flock 9
		if [ "$(cut -d' ' -f1 "$root/.amqfilter-root" 2>/dev/null)" != "$AMQ_ROOT_RECIPE" ]; then
			pgroot_make "$root" "$suite"
		fi
		if [ ! -f "$stamp" ]; then
			pgroot_mount "$root"
			[ "$major" != 19 ] || target=(-t experimental)
			log "roots: installing PostgreSQL $major in $root"
			pgroot_exec "$root" apt-get install -y -q "${target[@]}" \
				"postgresql-$major" "postgresql-server-dev-$major" >"$root.pg$major.log" 2>&1 \
				|| { pgroot_exec "$root" apt-get update -q >/dev/null \
					&& pgroot_exec "$root" apt-get install -y -q "${target[@]}" \
						"postgresql-$major" "postgresql-server-dev-$major" >"$root.pg$major.log" 2>&1; } \
				|| { tail -n 30 "$root.pg$major.log" >&2; die "could not install PostgreSQL $major in $root"; }
			pgroot_exec "$root" "/usr/lib/postgresql/$major/bin/postgres" --version >"$stamp"
			log "roots: $(cat "$stamp") in $root, in $((SECONDS - start))s"
			pgroot_umount_all
		fi
	) 9>"$AMQ_ROOTS_DIR/.lock"
}

# run as a script (not when lib.sh, sourced below, sources this file again)
if [ "${BASH_SOURCE[0]}" = "$0" ] && [ -z "${AMQ_PGROOTS_MAIN:-}" ]; then
	AMQ_PGROOTS_MAIN=1
	set -euo pipefail
	# shellcheck source=test/lib.sh
	source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
	trap pgroot_umount_all EXIT
	case ${1:-} in
		ensure)
			shift
			for major in "$@"; do
				pgroot_ensure "$major"
			done
			;;
		path) pgroot_of "$2" ;;
		shell)
			pgroot_ensure "$2"
			root=$(pgroot_of "$2")
			pgroot_mount "$root"
			pgroot_exec "$root" "TERM=${TERM:-dumb}" bash -l
			;;
		run)
			[ $# -ge 3 ] || { echo "usage: bash test/pgroots.sh run MAJOR CMD..." >&2; exit 2; }
			major=$2
			shift 2
			pgroot_ensure "$major"
			root=$(pgroot_of "$major")
			pgroot_mount "$root"
			# the tree at the same path, so that what CMD writes (results) is here
			mkdir -p "$root$AMQ_ROOT"
			mountpoint -q "$root$AMQ_ROOT" || mount --bind "$AMQ_ROOT" "$root$AMQ_ROOT"
			trap 'umount "$root$AMQ_ROOT" || true; pgroot_umount_all' EXIT
			# (a root has no git: the commit, for what CMD writes down)
			pgroot_exec "$root" "AMQ_PG_MAJOR=$major" "AMQ_FIRST_PORT=$AMQ_FIRST_PORT" \
				"AMQ_COMMIT=$(git -C "$AMQ_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
				"TERM=${TERM:-dumb}" bash -c 'cd "$1" && shift && exec "$@"' run "$AMQ_ROOT" "$@"
			;;
		*)
			echo "usage: bash test/pgroots.sh ensure MAJOR... | path MAJOR | shell MAJOR | run MAJOR CMD..." >&2
			exit 2
			;;
	esac
fi
