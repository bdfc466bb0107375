#!/usr/bin/env bash
# Tests of .ci/stages, each against a fake repository: a copy of the
# script and a Makefile of tiny stages.
. "$(dirname "$0")/lib.sh"

# repo makes $T/repo, with .ci/stages and the Makefile read from stdin
# (recipes start with a tab).
repo() {
	mkdir -p "$T/repo/.ci"
	cp "$CI/stages" "$T/repo/.ci/stages"
	cat >"$T/repo/Makefile"
}

# stages runs the copy with the arguments given, its output in $T/out, for at
# most 300 s (a hang; a loaded machine takes long), and returns its status.
stages() { timeout -k 2 300 bash "$T/repo/.ci/stages" "$@" >"$T/out" 2>&1; }

t_lanes_pass_and_print_times() {
	repo <<'MK'
a:
	@echo a ran
b:
	@echo b ran
MK
	stages a :: b || fail "status $?, want 0"
	has "$T/out" '^\[a\] a ran$'
	has "$T/out" '^\[b\] b ran$'
	has "$T/out" '^  a +[0-9]+ s .* ok +[0-9]+ s CPU$'
	has "$T/out" '^  total '
}

# Each stage's CPU seconds beside its wall time: a stage that waits uses
# little, one that computes about its wall time per busy core.
t_cpu_seconds_per_stage() {
	repo <<'MK'
waits:
	@sleep 2
computes:
	@awk 'BEGIN { for (i = 0; i < 4e7; i++) s += i }'
MK
	stages waits computes || fail "status $?, want 0"
	has "$T/out" '^  waits +[0-9]+ s .* ok +0 s CPU$'
	has "$T/out" '^  computes +[0-9]+ s .* ok +[1-9][0-9]* s CPU$'
}

t_no_stages_passes() {
	repo </dev/null
	stages || fail "status $?, want 0"
}

# A lane that fails early stops; the other finishes, so one run reports
# every failure; the status is the failed make's, and the failure's lines
# come last for CI's log tail.
t_failing_lane_status_and_summary() {
	repo <<'MK'
bad:
	@echo '--- FAIL: TestBroken (0.00s)'; echo 'FAIL	example.com/m/broken	0.012s'; exit 1
never:
	@echo never ran
other:
	@echo other ran
MK
	stages bad never :: other
	rc=$?
	[ "$rc" = 2 ] || fail "status $rc, want make's 2"
	hasnt "$T/out" 'never ran'
	has "$T/out" '^\[other\] other ran$'
	has "$T/out" '^  bad .* FAIL +[0-9]+ s CPU$'
	tail -n 3 "$T/out" >"$T/tail"
	has "$T/tail" '--- FAIL: TestBroken'
	has "$T/tail" 'FAIL	example.com/m/broken'
}

t_after_waits_for_other_lane() {
	repo <<'MK'
build:
	@sleep 1; touch built
use:
	@test -f built && echo used
MK
	stages after:build use :: build || fail "status $?, want 0"
	has "$T/out" '^\[use\] used$'
}

t_after_failed_stage_fails() {
	repo <<'MK'
build:
	@exit 1
use:
	@echo used
MK
	stages after:build use :: build
	rc=$?
	[ "$rc" != 0 ] || fail "status 0, want a failure"
	hasnt "$T/out" 'used'
	has "$T/out" 'build did not pass \(FAIL\)'
}

t_after_skipped_stage_fails() {
	repo <<'MK'
bad:
	@exit 1
build:
	@echo built
use:
	@echo used
MK
	stages after:build use :: bad build
	[ $? != 0 ] || fail "status 0, want a failure"
	hasnt "$T/out" 'used|built'
	has "$T/out" 'build did not pass \(skipped\)'
}

t_after_unknown_stage_is_an_error() {
	repo <<'MK'
use:
	@echo used
MK
	stages after:nothing use
	rc=$?
	[ "$rc" = 2 ] || fail "status $rc, want 2"
	has "$T/out" 'after:nothing waits for a stage that no lane runs'
}

# after:X where X runs later in the same lane can never end: refused at
# once, not a hang until CI's limit.
t_after_later_in_own_lane_is_an_error() {
	repo <<'MK'
build:
	@echo built
other:
	@echo other
MK
	stages after:build build :: other
	rc=$?
	[ "$rc" = 2 ] || fail "status $rc, want 2 (124: it hung)"
	has "$T/out" 'after:build'
}

# Ctrl-C: the terminal sends SIGINT to the foreground process group,
# make's and .ci/stages'. Every stage's processes must end, not go on
# as orphans (an API server's test binary holding ports and CPU).
# interrupt SIG WHOM [make] sends SIG to the run's process group (WHOM
# group) or to its first process (one): .ci/stages, or make test when
# the third argument is make (make sends SIGTERM on to its recipe).
interrupt() {
	local sig=$1 whom=$2
	repo <<'MK'
test:
	@bash .ci/stages sleeper :: other
sleeper:
	@echo $$$$ >sleeper.pid; exec sleep 300
other:
	@trap '' TERM; echo $$$$ >other.pid; exec sleep 300
MK
	export STAGES_GRACE=1 # other ignores SIGTERM: killed a second later
	set -m # the fake run gets a process group of its own, as a terminal's job
	if [ "${3:-}" = make ]; then
		(cd "$T/repo" && exec make --no-print-directory test) >"$T/out" 2>&1 &
	else
		bash "$T/repo/.ci/stages" sleeper :: other >"$T/out" 2>&1 &
	fi
	local pid=$!
	set +m
	for _ in $(seq 1 100); do [ -s "$T/repo/sleeper.pid" ] && [ -s "$T/repo/other.pid" ] && break; sleep 0.1; done
	[ -s "$T/repo/other.pid" ] || fail "the stages did not start"
	if [ "$whom" = group ]; then kill "-$sig" -- "-$pid"; else kill "-$sig" "$pid"; fi
	for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
	local left=""
	for p in "$pid" "$(cat "$T/repo/sleeper.pid")" "$(cat "$T/repo/other.pid")"; do
		alive "$p" && left="$left $(ps -o pid=,args= -p "$p");"
	done
	if [ -n "$left" ]; then
		kill -KILL -- "-$pid" "$(cat "$T/repo/sleeper.pid")" "$(cat "$T/repo/other.pid")" 2>/dev/null
		fail "SIG$sig to $whom: still running 5 s later:$left"
	fi
	wait "$pid"
	local rc=$?
	[ "$rc" != 0 ] || fail "status 0 after SIG$sig"
}
t_ctrl_c_ends_every_stage() { interrupt INT group; }
t_sigterm_to_stages_ends_every_stage() { interrupt TERM one; }
t_sigterm_to_make_test_ends_every_stage() { interrupt TERM one make; }

run_tests
