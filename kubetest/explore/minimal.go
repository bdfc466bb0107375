package explore

import (
	"strings"

	"github.com/loam-dev/loam/kubetest/internal/shrink"
)

// replayFunc replays steps, setting refused[i] to why the API server
// refused the i-th step's change, and returns what failed first, or nil:
// the explorer's replay.
type replayFunc func(steps []Step, refused []string) error

// answer is what one replay of a sequence found: what failed, or nil,
// and why the API server refused each step's change.
type answer struct {
	err     error
	refused []string
}

// minimal shrinks steps, which failed with whole, to a minimal failing
// sequence, by delta debugging and then by dropping each fault the
// failure doesn't need, and returns it with what its replay found. Every
// answer is remembered by the sequence's steps and faults, the whole
// sequence's first: no sequence is replayed twice, the minimal one
// included, whose replay the shrinking has had already. A second replay
// of a bug that never settles waits out Settle again, for nothing.
func minimal(steps []Step, whole answer, replay replayFunc) ([]Step, answer) {
	key := func(s []Step) string { return strings.Join(stepLines(s), "\n") }
	known := map[string]answer{key(steps): whole}
	fails := func(s []Step) bool {
		k := key(s)
		a, ok := known[k]
		if !ok {
			a = answer{refused: make([]string, len(s))}
			a.err = replay(s, a.refused)
			known[k] = a
		}
		return a.err != nil
	}
	shrunk := withoutFaults(shrink.Minimize(steps, fails), fails)
	// Minimize and withoutFaults return a sequence fails said fails, or
	// the one they were given, which does: its answer is known.
	return shrunk, known[key(shrunk)]
}
