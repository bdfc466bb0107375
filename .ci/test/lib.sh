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

# run_tests runs every t_* function of the file, all at once (they mostly
# wait), each in a subshell with a fresh $T, prints "ok|FAIL name seconds"
# and a failed test's output, and exits 1 if any failed. CI_TEST_RUN, an
# extended regular expression, picks the tests to run.
run_tests() {
	local t failed=0 tests=() pids=() dirs=() i start
	start=$(date +%s)
	for t in $(declare -F | awk '$3 ~ /^t_/ { print $3 }' | grep -E -e "${CI_TEST_RUN:-.}"); do
		T="$(mktemp -d)"
		(cd "$T" && T="$T" "$t"; rc=$?; date +%s >"$T.end"; exit "$rc") >"$T.log" 2>&1 &
		tests+=("$t")
		pids+=($!)
		dirs+=("$T")
	done
	for i in "${!tests[@]}"; do
		if wait "${pids[$i]}"; then
			printf '  ok    %-52s %3d s\n' "${tests[$i]}" "$(($(cat "${dirs[$i]}.end") - start))"
		else
			printf '  FAIL  %-52s\n' "${tests[$i]}"
			cat "${dirs[$i]}.log"
			failed=1
		fi
		rm -rf "${dirs[$i]}" "${dirs[$i]}.log" "${dirs[$i]}.end"
	done
	exit "$failed"
}
