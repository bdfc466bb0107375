package explore

import (
	"math/rand/v2"
	"net/http"
	"slices"

	"github.com/loam-dev/loam/kubetest/internal/generate"
)

// The fault schedule: each step crashes the operator with probability
// 1/faultOdds, makes its view stale with probability 1/faultOdds, makes
// it lose events, and serves its lists old, each with probability
// 1/faultOdds, when they are on, and restarts the API server with
// probability 1/restartOdds, each at one of
// the operator's first maxWrite writes of the step, picked uniformly;
// and fails one of the first maxWrite requests for the step's object
// with probability 1/faultOdds, with one of failures.
// Four writes cover what one reconcile of a typical operator does: a
// finalizer, a child or two, the status. A restart costs seconds, and
// its bugs need it once, not at every step.
const (
	faultOdds   = 2
	restartOdds = 8
	maxWrite    = 4
	// staleStream, restartStream, failStream and loseStream pick the
	// stale views, restarts, failed requests and lost events from
	// streams of their own, so that adding each left every seed's
	// earlier faults as they were.
	staleStream   = 0x5374616c65
	restartStream = 0x52657374617274
	failStream    = 0x4661696c
	loseStream    = 0x4c6f7365
)

// failures are the errors a failed request meets: an API server that
// can't be reached, one that fails inside, one that is unavailable, and
// one that throttles without saying for how long, so that client-go
// doesn't retry and the operator sees each.
var failures = []int{0, http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusTooManyRequests}

// schedule gives each change of the sequence-th sequence of seed its
// faults, the same for the same seed and sequence, of the kinds on
// picks: each kind of faultKinds from a stream of its own.
func schedule(seed uint64, sequence int, changes []generate.Step, on Faults) []Step {
	steps := make([]Step, len(changes))
	for i, c := range changes {
		steps[i].Step = c
	}
	for _, k := range faultKinds() {
		rng := rand.New(rand.NewPCG(seed, uint64(sequence)^k.stream))
		for i := range steps {
			k.draw(rng, &steps[i], on)
		}
	}
	return steps
}

// drawWrite draws, with probability 1/odds, the write a fault comes at,
// from 1 to maxWrite uniformly, and 0, no fault, otherwise.
func drawWrite(rng *rand.Rand, odds int) int {
	if rng.IntN(odds) != 0 {
		return 0
	}
	return 1 + rng.IntN(maxWrite)
}

// withoutFaults drops each fault of steps that the failure doesn't need,
// one at a time, in faultKinds' order, so the minimal sequence names
// only the faults that matter.
func withoutFaults(steps []Step, fails func([]Step) bool) []Step {
	steps = slices.Clone(steps)
	kinds := faultKinds()
	for i := range steps {
		for _, k := range kinds {
			if !k.has(steps[i]) {
				continue
			}
			try := slices.Clone(steps)
			k.clear(&try[i])
			if fails(try) {
				steps = try
			}
		}
	}
	return steps
}
