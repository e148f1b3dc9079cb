#!/usr/bin/env bash
# test/meta.sh: META.json, the PGXN metadata, parses and names the version this
# tree builds.
#
#   bash test/meta.sh
#
# Checks that META.json is valid JSON with the fields the PGXN meta spec 1.0.0
# requires, and that its version, provides.amqfilter.version and
# provides.amqfilter.file agree with EXTVERSION in the Makefile and
# default_version in amqfilter.control, and that it requires the PostgreSQL
# majors CI tests (AMQ_ALL_MAJORS in test/run.sh), as the range from the
# oldest to before the one after the newest.  PGXN wants semantic
# versions, so a two-part EXTVERSION (0.2) is written 0.2.0 there; the file is
# the version's
# full script, amqfilter--EXTVERSION.sql, and must exist.
#
# Then the release: `make dist` builds the PGXN zip from the commit checked out
# (git archive), and the zip must hold, under amqfilter-VERSION/, exactly the
# committed files but those .gitattributes marks export-ignore, with the
# committed META.json, the files it names (provides.file, docfile) and the
# control file; unpacked, it must build with PGXS when pg_config is there.
# Needs python3 (or jq, without the zip checks); the zip checks need a git
# checkout, and are skipped (with a note) in an unpacked release.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# meta_fields FILE: name, version, provides.amqfilter.version,
# provides.amqfilter.file and meta-spec.version, one a line; fails if FILE is
# not JSON or a required field is missing.
meta_fields() {
	if command -v python3 >/dev/null; then
		python3 - "$1" <<-'PY'
			import json, sys
			with open(sys.argv[1], encoding="utf-8") as f:
			    meta = json.load(f)
			required = ["name", "abstract", "version", "maintainer", "license", "provides", "meta-spec"]
			missing = [k for k in required if k not in meta]
			if missing:
			    sys.exit("META.json lacks " + ", ".join(missing))
			ext = meta["provides"].get("amqfilter")
			if not isinstance(ext, dict):
			    sys.exit("META.json provides nothing named amqfilter")
			pg = meta.get("prereqs", {}).get("runtime", {}).get("requires", {}).get("PostgreSQL")
			for v in (meta["name"], meta["version"], ext.get("version"), ext.get("file"),
			          meta["meta-spec"].get("version"), pg):
			    print("" if v is None else v)
		PY
	elif command -v jq >/dev/null; then
		jq -er '
			. as $meta
			| if (["name", "abstract", "version", "maintainer", "license", "provides", "meta-spec"]
			      | all(. as $k | $meta | has($k))) and (.provides.amqfilter | type == "object")
			then .name, .version, (.provides.amqfilter.version // ""),
			     (.provides.amqfilter.file // ""), (."meta-spec".version // ""),
			     (.prereqs.runtime.requires.PostgreSQL // "")
			else error("META.json lacks a required field") end' "$1"
	else
		die "neither python3 nor jq is installed: cannot read META.json"
	fi
}

# expect_equal WHAT ACTUAL EXPECTED: pass when ACTUAL is EXPECTED.
expect_equal() {
	if [ "$2" = "$3" ]; then
		pass "$1: $2"
	else
		fail "$1 is '$2', not '$3'"
	fi
}

# check_dist SEMVER: make dist's zip holds the release, and builds.
check_dist() {
	local semver=$1 tmp zip problems
	# an unpacked release has no history to archive: nothing to check there
	if ! command -v git >/dev/null || [ ! -e "$AMQ_ROOT/.git" ] \
		|| ! git -C "$AMQ_ROOT" rev-parse -q --verify HEAD >/dev/null; then
		log "meta: not a git checkout with a commit: make dist not checked"
		return
	fi
	if ! command -v python3 >/dev/null; then
		log "meta: no python3: make dist not checked"
		return
	fi
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" RETURN
	if ! make --no-print-directory -s -C "$AMQ_ROOT" dist DIST_DIR="$tmp" >/dev/null; then
		fail "make dist builds the zip"
		return
	fi
	zip=$tmp/amqfilter-$semver.zip
	if [ ! -f "$zip" ]; then
		fail "make dist builds amqfilter-$semver.zip ($(ls "$tmp"))"
		return
	fi
	pass "make dist builds amqfilter-$semver.zip"
	git -C "$AMQ_ROOT" ls-tree -r -z --name-only HEAD >"$tmp/committed"
	problems=$(cd "$AMQ_ROOT" && python3 - "$zip" "amqfilter-$semver/" "$tmp/committed" <<-'PY'
		import json, subprocess, sys, zipfile
		zpath, prefix = sys.argv[1], sys.argv[2]
		with open(sys.argv[3], encoding="utf-8") as f:
		    committed = set(f.read().split("\0")) - {""}
		# .gitattributes' export-ignore entries: paths (files or folders) of the tree
		ignored = set()
		with open(".gitattributes", encoding="utf-8") as f:
		    for line in f:
		        fields = line.split()
		        if len(fields) >= 2 and not fields[0].startswith("#") and "export-ignore" in fields[1:]:
		            ignored.add(fields[0].strip("/"))
		is_ignored = lambda p: any(p == d or p.startswith(d + "/") for d in ignored)
		shipped = {p for p in committed if not is_ignored(p)}
		with zipfile.ZipFile(zpath) as z:
		    names = [n for n in z.namelist() if not n.endswith("/")]
		    problems = []
		    outside = [n for n in names if not n.startswith(prefix)]
		    if outside:
		        problems.append("outside " + prefix + ": " + ", ".join(outside[:5]))
		    inside = {n[len(prefix):] for n in names if n.startswith(prefix)}
		    if inside - shipped:
		        problems.append("not committed, or export-ignore: " + ", ".join(sorted(inside - shipped)[:5]))
		    if shipped - inside:
		        problems.append("committed but missing: " + ", ".join(sorted(shipped - inside)[:5]))
		    meta_bytes = z.read(prefix + "META.json")
		    committed_meta = subprocess.run(["git", "show", "HEAD:META.json"],
		                                    capture_output=True, check=True).stdout
		    if meta_bytes != committed_meta:
		        problems.append("its META.json is not the committed one")
		    meta = json.loads(meta_bytes)
		    ext = meta["provides"]["amqfilter"]
		    for needed in (ext.get("file"), ext.get("docfile"), "amqfilter.control", "Makefile", "LICENSE"):
		        if needed and needed not in inside:
		            problems.append("lacks " + needed)
		    if any(is_ignored(p) for p in inside):
		        problems.append("holds export-ignore files")
		print("; ".join(problems))
	PY
	) || problems="the zip could not be read"
	if [ -z "$problems" ]; then
		pass "the zip holds the committed tree (export-ignore left out) and what META.json names"
	else
		fail "the zip holds the committed tree and what META.json names: $problems"
	fi
	if [ -n "${PG_CONFIG:-}" ] && command -v "$PG_CONFIG" >/dev/null; then
		(cd "$tmp" && python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall('.')" "$zip")
		if make --no-print-directory -s -j2 -C "$tmp/amqfilter-$semver" \
			PG_CONFIG="$PG_CONFIG" with_llvm=no >"$tmp/build.log" 2>&1 \
			&& [ -f "$tmp/amqfilter-$semver/amqfilter.so" ]; then
			pass "the unpacked zip builds with PGXS"
		else
			fail "the unpacked zip builds with PGXS"
			tail -n 20 "$tmp/build.log" >&2
		fi
	fi
}

main() {
	local fields name version ext_version ext_file spec extversion control semver
	local pg_required tested
	local -a lines

	fields=$(meta_fields "$AMQ_ROOT/META.json") || {
		fail "META.json parses"
		checks_summary meta || exit 1
	}
	pass "META.json parses, with the fields the PGXN meta spec requires"
	mapfile -t lines <<<"$fields"
	name=${lines[0]} version=${lines[1]} ext_version=${lines[2]} ext_file=${lines[3]}
	spec=${lines[4]} pg_required=${lines[5]:-}

	extversion=$(sed -n 's/^EXTVERSION[[:space:]]*=[[:space:]]*\([^[:space:]]*\).*/\1/p' "$AMQ_ROOT/Makefile")
	control=$(sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$AMQ_ROOT/amqfilter.control")
	[ -n "$extversion" ] || die "no EXTVERSION in the Makefile"
	# PGXN versions are semantic versions: 0.2 is 0.2.0
	semver=$extversion
	while [ "$(tr -cd . <<<"$semver" | wc -c)" -lt 2 ]; do
		semver=$semver.0
	done

	expect_equal "name" "$name" amqfilter
	expect_equal "meta-spec version" "$spec" 1.0.0
	expect_equal "amqfilter.control default_version (Makefile EXTVERSION $extversion)" \
		"$control" "$extversion"
	expect_equal "version (EXTVERSION $extversion)" "$version" "$semver"
	expect_equal "provides.amqfilter.version (EXTVERSION $extversion)" "$ext_version" "$semver"
	expect_equal "provides.amqfilter.file" "$ext_file" "amqfilter--$extversion.sql"
	# it claims what CI tests: the majors test/run.sh --all runs, from the
	# oldest up to the next after the newest (PGXN reads a bare version as
	# "this or later")
	read -r -a tested < <(sed -n 's/^AMQ_ALL_MAJORS=(\(.*\))$/\1/p' "$AMQ_ROOT/test/run.sh")
	[ ${#tested[@]} -gt 0 ] || die "no AMQ_ALL_MAJORS in test/run.sh"
	expect_equal "prereqs.runtime.requires.PostgreSQL (tested: ${tested[*]})" "$pg_required" \
		">= ${tested[0]}.0.0, < $((tested[${#tested[@]} - 1] + 1)).0.0"
	if [ -f "$AMQ_ROOT/$ext_file" ]; then
		pass "$ext_file exists"
	else
		fail "provides.amqfilter.file '$ext_file' does not exist"
	fi
	check_dist "$semver"
	checks_summary meta
}

main "$@"
