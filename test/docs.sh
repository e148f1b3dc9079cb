#!/usr/bin/env bash
# test/docs.sh: every SQL example of the documentation runs.
#
#   bash test/docs.sh [FILE.md...]      as root (or with sudo); default: README.md docs/*.md
#
# Against the installed extension (test/run.sh builds it first), in a throwaway
# cluster.  Each markdown file gets a database of its own, made fresh, with
# amqfilter created in it; the file's ```sql blocks then run in the order they
# appear, each through its own psql with ON_ERROR_STOP, so a block sees the
# tables the blocks above it made (and none of another file's).  A block that
# fails stops the file and is reported as FILE:LINE, the markdown line of the
# statement that failed, with psql's message.
#
# A block that cannot run here is marked by an HTML comment on the line before
# its fence (blank lines may come between):
#
#   <!-- not run: REASON -->          skipped; REASON is required and printed
#   <!-- expect error: SQLSTATE -->   must fail, with that SQLSTATE
#
# Only blocks fenced ```sql at the start of a line are examples: other code
# blocks (```sh, ```text) are not SQL.  An indented ```sql fence, a marker
# without a reason or not followed by a ```sql block, and an unclosed fence
# are errors, so that no example is silently left out.  Each statement has
# STATEMENT_TIMEOUT_S (default 60) seconds.
set -euo pipefail

# shellcheck source=test/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STATEMENT_TIMEOUT_S=${STATEMENT_TIMEOUT_S:-60}

WORK=
RAN=0
EXPECTED_ERRORS=0
SKIPPED=0
SKIPS=()

# extract_blocks FILE DIR: write each ```sql block of FILE to DIR/NNN.sql and
# print one line per block, tab-separated: NNN, the markdown line of its
# opening fence, its kind (run, skip, error) and the marker's argument.
# Exits non-zero, saying where, on a malformed file.
extract_blocks() {
	awk -v dir="$2" -v file="$1" '
		function fail(line, msg) {
			printf "%s:%d: %s\n", file, line, msg > "/dev/stderr"
			bad = 1
			exit 1
		}
		BEGIN { n = 0; in_code = 0; in_sql = 0; kind = ""; arg = ""; marker_line = 0 }
		in_code {
			if ($0 ~ /^```[ \t]*$/) {
				if (in_sql)
					close(out)
				in_code = 0
				in_sql = 0
			} else if (in_sql) {
				print > out
			}
			next
		}
		/^<!-- *(not run|expect error):/ {
			if (kind != "")
				fail(marker_line, "marker not followed by a ```sql block")
			line = $0
			if (line !~ /-->[ \t]*$/)
				fail(NR, "marker must end with --> on its own line")
			sub(/^<!-- */, "", line)
			sub(/ *-->[ \t]*$/, "", line)
			if (line ~ /^not run:/) {
				kind = "skip"
				sub(/^not run: */, "", line)
				if (line == "")
					fail(NR, "<!-- not run: --> needs a reason")
			} else {
				kind = "error"
				sub(/^expect error: */, "", line)
				if (line !~ /^[0-9A-Z][0-9A-Z][0-9A-Z][0-9A-Z][0-9A-Z]$/)
					fail(NR, "<!-- expect error: --> needs a five-character SQLSTATE, not \"" line "\"")
			}
			arg = line
			marker_line = NR
			next
		}
		/^[ \t]+```[ \t]*sql/ { fail(NR, "indented ```sql fence: examples must be fenced at the start of a line") }
		/^```/ {
			in_code = 1
			if ($0 ~ /^```[ \t]*sql[ \t]*$/) {
				in_sql = 1
				n++
				out = sprintf("%s/%03d.sql", dir, n)
				printf "" > out
				printf "%03d\t%d\t%s\t%s\n", n, NR, (kind == "" ? "run" : kind), arg
			} else if (kind != "") {
				fail(marker_line, "marker not followed by a ```sql block")
			}
			kind = ""
			arg = ""
			next
		}
		/^[ \t]*$/ { next }
		{
			if (kind != "")
				fail(marker_line, "marker not followed by a ```sql block")
		}
		END {
			if (bad)
				exit 1
			if (in_code)
				fail(NR, "unclosed code fence")
			if (kind != "")
				fail(marker_line, "marker not followed by a ```sql block")
		}
	' "$1"
}

# psql_line_of OUTPUT: the line of the block file psql's first error names
# ("psql:FILE:LINE: ERROR: ..."), or 1.
psql_line_of() {
	sed -n 's/^psql:[^:]*:\([0-9]\+\): ERROR:.*/\1/p' <<<"$1" | head -n 1 | grep . || echo 1
}

# run_file FILE: run FILE's blocks in a fresh database; non-zero on the first
# block that does not do what it should.
run_file() {
	local file=$1 rel db dir manifest num line kind arg out status
	local ran=0 skipped=0 errors=0
	rel=${file#"$AMQ_ROOT"/}
	dir=$WORK/$(tr '/.' '__' <<<"$rel")
	mkdir -p "$dir"
	manifest=$(extract_blocks "$file" "$dir") || return 1
	db=docs_$(tr -c 'a-zA-Z0-9\n' '_' <<<"$rel" | tr '[:upper:]' '[:lower:]')

	run_psql -q -d postgres -c "CREATE DATABASE $db"
	run_psql -q -d "$db" -c "CREATE EXTENSION amqfilter"

	while IFS=$'\t' read -r num line kind arg; do
		[ -n "$num" ] || continue
		if [ "$kind" = skip ]; then
			skipped=$((skipped + 1))
			SKIPPED=$((SKIPPED + 1))
			SKIPS+=("$rel:$line: $arg")
			continue
		fi
		status=0
		out=$(PGOPTIONS="-c statement_timeout=${STATEMENT_TIMEOUT_S}s" \
			run_psql -d "$db" -v VERBOSITY=verbose -f "$dir/$num.sql" 2>&1 >/dev/null) \
			|| status=$?
		if [ "$kind" = error ]; then
			if [ "$status" -eq 0 ]; then
				echo "FAIL  $rel:$line: the block should fail with SQLSTATE $arg and did not"
				return 1
			fi
			if ! grep -q "ERROR:  $arg:" <<<"$out"; then
				echo "FAIL  $rel:$((line + $(psql_line_of "$out"))): expected SQLSTATE $arg, got:"
				printf '%s\n' "$out" | sed 's/^/      /'
				return 1
			fi
			errors=$((errors + 1))
			EXPECTED_ERRORS=$((EXPECTED_ERRORS + 1))
		elif [ "$status" -ne 0 ]; then
			echo "FAIL  $rel:$((line + $(psql_line_of "$out"))): the block starting at line $line failed:"
			printf '%s\n' "$out" | sed 's/^/      /'
			return 1
		fi
		ran=$((ran + 1))
		RAN=$((RAN + 1))
	done <<<"$manifest"

	run_psql -q -d postgres -c "DROP DATABASE $db"
	echo "ok    $rel: $ran blocks ran ($errors failing as they should), $skipped skipped"
}

main() {
	local files=() file failed=0 reason
	if [ $# -gt 0 ]; then
		for file in "$@"; do
			files+=("$(cd "$(dirname "$file")" && pwd)/$(basename "$file")")
		done
	else
		files=("$AMQ_ROOT/README.md" "$AMQ_ROOT"/docs/*.md)
	fi

	WORK=$(mktemp -d /tmp/amqfilter-docs.XXXXXX)
	trap 'rm -rf "$WORK"; stop_cluster' EXIT
	start_cluster

	for file in "${files[@]}"; do
		[ -f "$file" ] || die "no such file: $file"
		run_file "$file" || failed=$((failed + 1))
	done

	echo
	echo "docs: $RAN SQL blocks ran ($EXPECTED_ERRORS of them failing as they should), $SKIPPED skipped:"
	for reason in "${SKIPS[@]}"; do
		echo "  skipped $reason"
	done
	if [ "$failed" -gt 0 ]; then
		echo "docs: $failed of ${#files[@]} files failed"
		return 1
	fi
	echo "docs: all ${#files[@]} files passed"
}

main "$@"
