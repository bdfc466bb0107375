# shellcheck shell=bash
# The self-tests' helpers: a test file sources this, defines functions
# named t_*, and ends with `run_tests`. Each test runs in a subshell of its
# own, in a fresh temporary directory ($T), with a copy of the script under
# test; a test fails by calling fail, or by exiting non-zero.
set -uo pipefail

# The repository's .ci, whose scripts the tests copy.
CI="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# fail prints why the test failed, and what it printed, and ends it.
fail() {
	echo "    $*" >&2
	if [ -f "$T/out" ]; then
		echo "    --- what it printed:" >&2
		sed 's/^/    | /' "$T/out" >&2
	fi
	exit 1
}

# has and hasnt check that file $1 has (hasnt) a line matching the
# extended regular expression $2.
has() { grep -Eq -e "$2" "$1" || fail "no line matching /$2/ in $1"; }
hasnt() { ! grep -Eq -e "$2" "$1" || fail "a line matching /$2/ in $1: $(grep -E -e "$2" "$1" | head -n 3)"; }

# alive reports whether process $1 runs (a zombie doesn't).
alive() { [ -n "$(ps -o stat= -p "$1" 2>/dev/null | grep -v Z)" ]; }

# run_tests runs every t_* function of the file, each in a subshell with
# a fresh $T, prints "ok|FAIL name seconds", and exits 1 if any failed.
run_tests() {
	local t failed=0 start rc
	for t in $(declare -F | awk '$3 ~ /^t_/ { print $3 }'); do
		start=$(date +%s)
		T="$(mktemp -d)"
		(cd "$T" && T="$T" "$t") >"$T.log" 2>&1
		rc=$?
		if [ "$rc" = 0 ]; then
			printf '  ok    %-52s %3d s\n' "$t" "$(($(date +%s) - start))"
		else
			printf '  FAIL  %-52s %3d s\n' "$t" "$(($(date +%s) - start))"
			cat "$T.log"
			failed=1
		fi
		rm -rf "$T" "$T.log"
	done
	exit "$failed"
}
