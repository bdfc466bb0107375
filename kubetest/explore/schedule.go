package explore

import (
	"math/rand/v2"
	"net/http"
	"slices"

	"github.com/loam-dev/loam/kubetest/internal/generate"
)

// The fault schedule: each step crashes the operator with probability
// 1/faultOdds, makes its view stale with probability 1/faultOdds, makes
// it lose events with probability 1/faultOdds, when lost events are on,
// and
// restarts the API server with probability 1/restartOdds, each at one of
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
// picks.
func schedule(seed uint64, sequence int, changes []generate.Step, on Faults) []Step {
	crashes := rand.New(rand.NewPCG(seed, uint64(sequence)))
	stale := rand.New(rand.NewPCG(seed, uint64(sequence)^staleStream))
	restarts := rand.New(rand.NewPCG(seed, uint64(sequence)^restartStream))
	fails := rand.New(rand.NewPCG(seed, uint64(sequence)^failStream))
	loses := rand.New(rand.NewPCG(seed, uint64(sequence)^loseStream))
	kubelets := rand.New(rand.NewPCG(seed, uint64(sequence)^kubeletStream))
	steps := make([]Step, len(changes))
	for i, c := range changes {
		steps[i].Step = c
		steps[i].CrashAfter = drawWrite(crashes, faultOdds)
		steps[i].StaleFrom = drawWrite(stale, faultOdds)
		steps[i].RestartAfter = drawWrite(restarts, restartOdds)
		steps[i].FailAt = drawWrite(fails, faultOdds)
		steps[i].FailWith = failures[fails.IntN(len(failures))]
		steps[i].LoseFrom = drawWrite(loses, faultOdds)
		steps[i].Kubelet = drawKubelet(kubelets)
		// Drawn and then dropped, so that the draws of the next steps
		// stay the same.
		if on.NoCrashes {
			steps[i].CrashAfter = 0
		}
		if on.NoStaleViews {
			steps[i].StaleFrom = 0
		}
		if !on.Restarts {
			steps[i].RestartAfter = 0
		}
		if !on.LostEvents {
			steps[i].LoseFrom = 0
		}
		if on.ScenarioAnnotation == "" || steps[i].FailAt == 0 {
			steps[i].FailAt, steps[i].FailWith = 0, 0
		}
		if !on.Kubelet {
			steps[i].Kubelet = ""
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
// one at a time, so the minimal sequence names only the faults that
// matter.
func withoutFaults(steps []Step, fails func([]Step) bool) []Step {
	steps = slices.Clone(steps)
	for i := range steps {
		for _, fault := range []func(*Step) *int{
			func(s *Step) *int { return &s.CrashAfter },
			func(s *Step) *int { return &s.StaleFrom },
			func(s *Step) *int { return &s.LoseFrom },
			func(s *Step) *int { return &s.RestartAfter },
			func(s *Step) *int { return &s.FailAt },
		} {
			if *fault(&steps[i]) == 0 {
				continue
			}
			try := slices.Clone(steps)
			*fault(&try[i]) = 0
			if try[i].FailAt == 0 {
				try[i].FailWith = 0
			}
			if fails(try) {
				steps = try
			}
		}
		if steps[i].Kubelet != "" {
			try := slices.Clone(steps)
			try[i].Kubelet = ""
			if fails(try) {
				steps = try
			}
		}
		if steps[i].Down {
			try := slices.Clone(steps)
			try[i].Down = false
			if fails(try) {
				steps = try
			}
		}
	}
	return steps
}
