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
# major version the tests install (and no older).  PGXN wants semantic
# versions, so a two-part EXTVERSION (0.2) is written 0.2.0 there; the file is
# the version's
# full script, amqfilter--EXTVERSION.sql, and must exist.  Needs python3 (or
# jq); no PostgreSQL.
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
	# it claims what the tests run on: the PostgreSQL test/run.sh installs
	tested=${AMQ_PACKAGES[0]#postgresql-}
	expect_equal "prereqs.runtime.requires.PostgreSQL (tested: $tested)" "$pg_required" "$tested.0.0"
	if [ -f "$AMQ_ROOT/$ext_file" ]; then
		pass "$ext_file exists"
	else
		fail "provides.amqfilter.file '$ext_file' does not exist"
	fi
	checks_summary meta
}

main "$@"
