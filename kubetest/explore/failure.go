package explore

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/loam-dev/loam/kubetest/internal/generate"
)

// Failure is a failing sequence the explorer found, shrunk to a minimal
// one.
type Failure struct {
	// Seed and Sequence say which sequence failed, when it was a new one:
	// the Sequence-th of Seed's, counting from 0.
	Seed     uint64
	Sequence int
	// Kept is the file of the kept sequence that failed, or "" when a new
	// one did.
	Kept string
	// Steps is the minimal failing sequence, each step with its fault; Of
	// how many steps the sequence had before it was shrunk.
	Steps []Step
	Of    int
	// Refused says, for each of Steps, why the API server refused its
	// change in the minimal sequence's replay, or "" when it didn't.
	Refused []string
	// Err is what the minimal sequence's replay found.
	Err error
	// Test is the test that found it, to replay it with go test -run.
	Test string
}

// Error prints the failure with the sequence it came from, what failed,
// the minimal sequence, a numbered step a line with its fault and, when
// the API server refused it, why, and how to replay it.
func (f *Failure) Error() string {
	lines := stepLines(f.Steps)
	for i, why := range f.Refused {
		if why != "" && i < len(lines) {
			lines[i] += " (refused by the API server: " + why + ")"
		}
	}
	from, replay := fmt.Sprintf("sequence %d of seed %d", f.Sequence, f.Seed), fmt.Sprintf("(Seed %d)", f.Seed)
	if f.Kept != "" {
		from, replay = "kept sequence "+f.Kept, "(kept sequences replay first)"
	}
	return fmt.Sprintf("%s fails: %v\nminimal sequence (%d of %d steps):\n  %s\nreplay: go test -run '^%s$' %s",
		from, f.Err, len(f.Steps), f.Of, strings.Join(lines, "\n  "), regexp.QuoteMeta(f.Test), replay)
}

// Step is one step of a sequence: a change to one object, and the fault
// the explorer injects while the operator handles it.
type Step struct {
	generate.Step
	// CrashAfter crashes the operator right after its CrashAfter-th write
	// of the step, counting from 1, and starts a fresh replica; 0 crashes
	// nothing. A step in which the operator writes less never crashes.
	CrashAfter int
	// StaleFrom makes the operator's view stale from its StaleFrom-th
	// write of the step on, counting from 1: what the API server sends on
	// its watches of every resource but the explored one, that write's
	// own change included, is held back until the operator has been
	// quiet for Quiet. 0 holds nothing back. A fresh replica after a
	// crash starts with a view that isn't stale, and the step's later
	// writes count on.
	StaleFrom int
	// LoseFrom makes the operator lose events from its LoseFrom-th write
	// of the step on, counting from 1, as after a compaction (lost.go):
	// right before that write goes on, every watch of the operator that
	// has sent its list is ended, what the API server sends on it from
	// then on dropped, and its watch again answered as expired, so that
	// its informers list again and see the newest state, none of the
	// states between. 0 loses nothing.
	LoseFrom int
	// RestartAfter restarts the API server right after the operator's
	// RestartAfter-th write of the step has landed, counting from 1: every
	// connection and watch goes, and the server comes back on the same
	// address with every object where it was. 0 restarts nothing.
	RestartAfter int
	// FailAt answers the FailAt-th request, counting from 1, that the
	// operator's reconciles of the step's object send the API server with
	// FailWith, through loam's failure injection; the requests before
	// and after it go through. 0 fails nothing. Each try client-go sends
	// counts, reads through the operator's clients included, and so do
	// the writes of the controller's own, its finalizer and status.
	FailAt int
	// FailWith is the HTTP status FailAt's request is answered with, or
	// 0 for a request that fails as if the API server were unreachable.
	FailWith int
	// Kubelet is the kubelet fault set on the replay's namespace right
	// before the step's change, which stays until a later step changes
	// it: NeverReady, CrashLoop, PartlyReady=n, Healthy for none, or ""
	// to leave it as it was (kubeletfaults.go). It is the world's state,
	// not the operator's fault: the sequence replayed without its
	// faults keeps it.
	Kubelet string
	// Down makes the step's change while the operator is down: the
	// running replica crashes before it, and a fresh one starts once it
	// has been tried; a change the API server refused then, as it
	// refuses what the operator's own webhooks admit while they are
	// down, is made again once the fresh replica is up (down.go).
	Down bool
	// OldListsFrom serves the operator's lists from an older state from
	// its OldListsFrom-th write of the step on, counting from 1 (old.go):
	// right before that write goes on, the cluster's resourceVersion is
	// noted, and for the rest of the step every list of the operator's
	// that the API server may answer from an older state, one from
	// resourceVersion "0" or not older than one older than the noted
	// one, is answered from the state at the noted one, and its streamed
	// lists are refused, as by an API server without WatchList, so that
	// its reflectors list. Its informers watch on from there, and are
	// sent every event since. Lists come in a step where something else
	// starts them: a crash's fresh replica lists afresh. 0 serves nothing
	// old.
	OldListsFrom int
}

// String says what the step changes, and its faults, each kind in
// its place of faultKinds' shown order.
func (s Step) String() string {
	out := s.Step.String()
	kinds := faultKinds()
	slices.SortStableFunc(kinds, func(a, b faultKind) int { return cmp.Compare(a.shown, b.shown) })
	for _, k := range kinds {
		if said := k.say(s); said != "" {
			out += ", " + said
		}
	}
	return out
}

func stepLines(steps []Step) []string {
	lines := make([]string, len(steps))
	for i, s := range steps {
		lines[i] = fmt.Sprintf("%d. %s", i+1, s)
	}
	return lines
}
