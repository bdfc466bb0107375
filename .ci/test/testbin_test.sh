#!/usr/bin/env bash
# Tests of .ci/testbin: `run` with fake test binaries (shell scripts), and
# `build` with a tiny Go module of its own.
. "$(dirname "$0")/lib.sh"

# pkg NAME SCRIPT adds package example.com/m/NAME, whose directory is
# $T/src/NAME, to the binaries' directory $T/bin, with SCRIPT (bash) as
# its test binary.
pkg() {
	local name=$1 script=$2 pkgdir="${PKGDIR:-$T/src}/$1" bins="${BINS:-$T/bin}"
	mkdir -p "$pkgdir" "$bins"
	printf '#!/usr/bin/env bash\n%s\n' "$script" >"$bins/$name.test"
	chmod +x "$bins/$name.test"
	printf 'example.com/m/%s\t%s\t%s\n' "$name" "$name.test" "$pkgdir" >>"$bins/packages"
}

# run runs .ci/testbin run on $T/bin (or $BINS), P=4 unless $P, with the
# flags given, its output in $T/out through a pipe, as make's stages
# read it, for at most 300 s (a hang; a loaded machine takes long).
run() {
	timeout -k 2 300 bash "$CI/testbin" run "${BINS:-$T/bin}" "${P:-4}" "$@" 2>&1 | cat >"$T/out"
	return "${PIPESTATUS[0]}"
}

t_pass_prints_go_tests_ok_line() {
	pkg a 'exit 0'
	pkg b 'echo PASS'
	run -test.count=1 || fail "status $?, want 0 (124: it hung)"
	has "$T/out" $'^ok  \texample.com/m/a\t[0-9]+\\.[0-9]{3}s$'
	has "$T/out" $'^ok  \texample.com/m/b\t[0-9]+\\.[0-9]{3}s$'
	hasnt "$T/out" 'PASS'
}

t_failure_prints_output_then_fail_line() {
	pkg a 'echo "--- FAIL: TestA (0.00s)"; echo FAIL; exit 1'
	pkg b 'exit 0'
	run
	rc=$?
	[ "$rc" = 1 ] || fail "status $rc, want 1"
	has "$T/out" '^--- FAIL: TestA'
	has "$T/out" $'^FAIL\texample.com/m/a\t[0-9.]+s$'
	has "$T/out" $'^ok  \texample.com/m/b\t'
}

t_panic_after_pass_fails() {
	pkg a 'echo PASS; echo "panic: after the tests"; exit 2'
	run
	rc=$?
	[ "$rc" = 1 ] || fail "status $rc, want 1"
	has "$T/out" '^panic: after the tests'
	has "$T/out" $'^FAIL\texample.com/m/a\t'
}

# go test prints why a binary that printed nothing, or died of a signal,
# failed: "signal: killed", "exit status 3".
t_killed_by_signal_says_so() {
	pkg a 'kill -KILL $$'
	pkg b 'echo something; kill -SEGV $$'
	pkg c 'exit 3'
	run
	rc=$?
	[ "$rc" = 1 ] || fail "status $rc, want 1"
	has "$T/out" '^signal: killed$'
	has "$T/out" '^signal: segmentation fault$'
	has "$T/out" '^exit status 3$'
	has "$T/out" $'^FAIL\texample.com/m/a\t'
	has "$T/out" $'^FAIL\texample.com/m/b\t'
	has "$T/out" $'^FAIL\texample.com/m/c\t'
}

# A failing binary's last line without a newline must not swallow the
# FAIL line that CI's failure summary matches at a line's start.
t_output_without_newline_keeps_fail_line() {
	pkg a 'printf "half a line"; exit 1'
	run
	has "$T/out" $'^FAIL\texample.com/m/a\t'
	has "$T/out" '^half a line$'
}

# A binary hung outside its tests (TestMain starting a cluster, or
# stopping one) is never stopped by its own -test.timeout: go test kills
# it a minute after that timeout; so must testbin (TESTBIN_GRACE: seconds
# after the timeout, here 1 instead of 60).
t_binary_hung_past_its_timeout_is_killed() {
	pkg a 'exec sleep 300'
	TESTBIN_GRACE=1 run -test.timeout=1s
	rc=$?
	[ "$rc" != 124 ] || fail "testbin hung"
	[ "$rc" = 1 ] || fail "status $rc, want 1"
	has "$T/out" 'ran too long'
	has "$T/out" $'^FAIL\texample.com/m/a\t'
}

# Without -test.timeout, go test passes -test.timeout=10m.
t_default_timeout_as_go_test() {
	pkg a 'printf "%s\n" "$@" >"'"$T"'/args"'
	run -test.count=1 || fail "status $?, want 0 (124: it hung)"
	has "$T/args" '^-test.timeout=10m0s$'
	has "$T/args" '^-test.paniconexit0$'
	has "$T/args" '^-test.count=1$'
}

t_flags_with_spaces_and_globs_kept_whole() {
	pkg a 'printf "%s\n" "$@" >"'"$T"'/args"'
	touch "$T/src/a/-test.run=Test-a-file"
	run -test.run 'TestA|Test B' '-test.run=Test*' || fail "status $?, want 0"
	has "$T/args" '^TestA\|Test B$'
	has "$T/args" '^-test.run=Test\*$'
}

t_spaces_in_paths() {
	BINS="$T/my bins" PKGDIR="$T/my src" pkg a 'pwd >"'"$T"'/pwd"'
	BINS="$T/my bins" run || fail "status $?, want 0"
	[ "$(cat "$T/pwd")" = "$T/my src/a" ] || fail "ran in $(cat "$T/pwd"), want $T/my src/a"
}

t_no_packages_passes() {
	mkdir -p "$T/bin" && : >"$T/bin/packages"
	run || fail "status $?, want 0"
	hasnt "$T/out" 'FAIL'
}

# The last run's times order the next; a damaged times file must not
# invent packages or lose any.
t_damaged_times_file() {
	pkg a 'exit 0'
	pkg b 'exit 0'
	printf 'example.com/m/a 1.5\nexample.com/m/a 2\ngarbage\nexample.com/m/b x y z\n\n' >"$T/bin/times"
	run || fail "status $?, want 0"
	[ "$(grep -c . "$T/out")" = 2 ] || fail "want two lines"
	has "$T/out" $'^ok  \texample.com/m/a\t'
	has "$T/out" $'^ok  \texample.com/m/b\t'
}

# A package that never ran fails the run: here the first binary kills
# xargs, which runs the binaries, before it starts the second.
t_package_that_did_not_run_fails() {
	pkg a 'p=$PPID; while [ "$(ps -o comm= -p "$p")" != xargs ]; do p=$(ps -o ppid= -p "$p" | tr -d " "); done; kill -TERM "$p"'
	pkg b 'exit 0'
	printf 'example.com/m/a 9\n' >"$T/bin/times"
	P=1 run
	rc=$?
	[ "$rc" = 1 ] || fail "status $rc, want 1"
	has "$T/out" 'example.com/m/b did not run'
	has "$T/out" $'^FAIL\texample.com/m/b\t'
}

# The slowest package of the last run starts first.
t_slowest_first() {
	pkg a 'echo a >>"'"$T"'/order"'
	pkg b 'echo b >>"'"$T"'/order"'
	printf 'example.com/m/a 1.000\nexample.com/m/b 9.000\n' >"$T/bin/times"
	P=1 run || fail "status $?, want 0"
	[ "$(tr -d '\n' <"$T/order")" = ba ] || fail "order $(tr -d '\n' <"$T/order"), want ba"
	has "$T/bin/times" '^example.com/m/a [0-9.]+$'
}

# Failing packages' outputs, printed at once by four runners, must not
# mix within a line: CI's summary greps them.
t_outputs_not_mixed() {
	for n in a b c d; do
		pkg "$n" 'yes "'"$n"' line 1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" | head -n 4000; exit 1'
	done
	run
	local whole
	whole=$(grep -Ec '^[a-d] line [0-9]+ x{94}$' "$T/out")
	[ "$whole" = 16000 ] || fail "$whole whole lines, want 16000: $(grep -Ev '^[a-d] line [0-9]+ x{94}$' "$T/out" | grep -v '^FAIL' | head -n 3 | cut -c1-300)"
}

# build: two packages of the same last element (go test -c -o DIR/
# refuses them), a major-version directory (go names its binary after
# the element before), a package with only external tests, and one with
# no tests.
t_build_then_run() {
	mkdir -p "$T/mod" && cd "$T/mod" || exit 1
	printf 'module example.com/m\n\ngo 1.22\n' >go.mod
	for p in a/util b/util lib/v2 ext none; do mkdir -p "$p"; echo "package $(basename "$p")" >"$p/p.go"; done
	printf 'package util\nimport "testing"\nfunc TestA(t *testing.T) {}\n' >a/util/a_test.go
	printf 'package util\nimport "testing"\nfunc TestB(t *testing.T) { t.Log("b") }\n' >b/util/b_test.go
	printf 'package v2\nimport "testing"\nfunc TestV(t *testing.T) {}\n' >lib/v2/v_test.go
	printf 'package ext_test\nimport "testing"\nfunc TestE(t *testing.T) {}\n' >ext/e_test.go
	timeout -k 2 600 bash "$CI/testbin" build "$T/bin" -ldflags=-w >"$T/out" 2>&1 || fail "build: status $?"
	run -test.count=1 || fail "run: status $?, want 0"
	for p in a/util b/util lib/v2 ext; do has "$T/out" $'^ok  \texample.com/m/'"$p"$'\t'; done
	[ "$(grep -c . "$T/out")" = 4 ] || fail "want four lines"
}

run_tests
