#!/usr/bin/env bash
# test/meta.sh: META.json, the PGXN metadata, parses and names the version this
# tree builds.
#
#   bash test/meta.sh
#
# Checks that META.json is valid JSON with the fields the PGXN meta spec 1.0.0
# requires, and that its version, provides.amqfilter.version and
# provides.amqfilter.file agree with EXTVERSION in the Makefile and
# default_version in amqfilter.control.  PGXN wants semantic versions, so a
# two-part EXTVERSION (0.2) is written 0.2.0 there; the file is the version's
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
			for v in (meta["name"], meta["version"], ext.get("version"), ext.get("file"),
			          meta["meta-spec"].get("version")):
			    print("" if v is None else v)
		PY
	elif command -v jq >/dev/null; then
		jq -er '
			. as $meta
			| if (["name", "abstract", "version", "maintainer", "license", "provides", "meta-spec"]
			      | all(. as $k | $meta | has($k))) and (.provides.amqfilter | type == "object")
			then .name, .version, (.provides.amqfilter.version // ""),
			     (.provides.amqfilter.file // ""), (."meta-spec".version // "")
			else error("META.json lacks a required field") end' "$1"
	else
		die "neither python3 nor jq is installed: cannot read META.json"
	fi
}

main() {
	local fields name version ext_version ext_file spec extversion control semver
	local -a lines

	fields=$(meta_fields "$AMQ_ROOT/META.json") || {
		fail "META.json parses"
		checks_summary meta || exit 1
	}
	pass "META.json parses, with the fields the PGXN meta spec requires"
	mapfile -t lines <<<"$fields"
	name=${lines[0]} version=${lines[1]} ext_version=${lines[2]} ext_file=${lines[3]}
	spec=${lines[4]}

	extversion=$(sed -n 's/^EXTVERSION[[:space:]]*=[[:space:]]*\([^[:space:]]*\).*/\1/p' "$AMQ_ROOT/Makefile")
	control=$(sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$AMQ_ROOT/amqfilter.control")
	[ -n "$extversion" ] || die "no EXTVERSION in the Makefile"
	# PGXN versions are semantic versions: 0.2 is 0.2.0
	semver=$extversion
	while [ "$(tr -cd . <<<"$semver" | wc -c)" -lt 2 ]; do
		semver=$semver.0
	done

	[ "$name" = amqfilter ] && pass "name is amqfilter" || fail "name is $name, not amqfilter"
	[ "$spec" = 1.0.0 ] && pass "meta-spec version 1.0.0" || fail "meta-spec version is '$spec', not 1.0.0"
	[ "$control" = "$extversion" ] \
		&& pass "amqfilter.control default_version $control = Makefile EXTVERSION" \
		|| fail "amqfilter.control default_version '$control' is not Makefile EXTVERSION $extversion"
	[ "$version" = "$semver" ] \
		&& pass "version $version is EXTVERSION $extversion" \
		|| fail "META.json version '$version' is not $semver (EXTVERSION $extversion)"
	[ "$ext_version" = "$semver" ] \
		&& pass "provides.amqfilter.version $ext_version is EXTVERSION $extversion" \
		|| fail "provides.amqfilter.version '$ext_version' is not $semver (EXTVERSION $extversion)"
	[ "$ext_file" = "amqfilter--$extversion.sql" ] \
		&& pass "provides.amqfilter.file is amqfilter--$extversion.sql" \
		|| fail "provides.amqfilter.file '$ext_file' is not amqfilter--$extversion.sql"
	[ -f "$AMQ_ROOT/$ext_file" ] \
		&& pass "$ext_file exists" \
		|| fail "provides.amqfilter.file '$ext_file' does not exist"
	checks_summary meta
}

main "$@"
