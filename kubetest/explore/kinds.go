package explore

import (
	"fmt"
	"math/rand/v2"
)

// The kinds of fault a step may carry, in one table (issue #47): each
// is drawn from a random stream of its own, kept in a kept sequence's
// file, said in Step.String, dropped by withoutFaults when a failure
// doesn't need it, and dropped by the replay without faults unless it is
// the world's. Adding a kind is a Step field, a keptStep field, an entry
// of faultKinds, and a file of its own for what it does in a replay.

// faultKind is one kind of fault: how a step gets it, and how it is kept,
// said and dropped.
type faultKind struct {
	// name names the kind, for tests.
	name string
	// stream is xored with the sequence's number to seed the kind's own
	// stream of draws, so that adding a kind left every seed's other
	// faults as they were; crashes, the first kind, have 0.
	stream uint64
	// draw draws the kind's fault of s from rng, and sets it only when on
	// turns the kind on: it makes the same draws either way, so that the
	// draws of the next steps stay the same.
	draw func(rng *rand.Rand, s *Step, on Faults)
	// has reports whether s has the kind's fault, and clear drops it.
	has   func(s Step) bool
	clear func(s *Step)
	// world marks a fault of the world's, not the operator's: the replay
	// without faults keeps it (kubeletfaults.go).
	world bool
	// shown orders the kinds in Step.String, lowest first; say says s's
	// fault there, "" when it has none.
	shown int
	say   func(s Step) string
	// keep puts s's fault in k, as a kept file holds it; read takes it
	// back from k into s, and returns what is wrong with it.
	keep func(s Step, k *keptStep)
	read func(k keptStep, s *Step) []string
}

// faultKinds returns the kinds of fault, in the order withoutFaults tries
// to drop them and decodeSteps reports their mistakes.
func faultKinds() []faultKind {
	return []faultKind{
		writeKind("crashAfter", 0, 5, func(s *Step) *int { return &s.CrashAfter },
			func(on Faults) bool { return !on.NoCrashes }, "crashing the operator right after its write %d",
			func(k *keptStep) *int { return &k.CrashAfter }),
		writeKind("staleFrom", staleStream, 2, func(s *Step) *int { return &s.StaleFrom },
			func(on Faults) bool { return !on.NoStaleViews }, "the operator's view stale from its write %d",
			func(k *keptStep) *int { return &k.StaleFrom }),
		writeKind("loseFrom", loseStream, 3, func(s *Step) *int { return &s.LoseFrom },
			func(on Faults) bool { return on.LostEvents }, "the operator's watches losing events from its write %d",
			func(k *keptStep) *int { return &k.LoseFrom }),
		{
			name: "restartAfter", stream: restartStream, shown: 6,
			draw: func(rng *rand.Rand, s *Step, on Faults) {
				if s.RestartAfter = drawWrite(rng, restartOdds); !on.Restarts {
					s.RestartAfter = 0
				}
			},
			has:   func(s Step) bool { return s.RestartAfter != 0 },
			clear: func(s *Step) { s.RestartAfter = 0 },
			say: func(s Step) string {
				if s.RestartAfter <= 0 {
					return ""
				}
				return fmt.Sprintf("restarting the API server right after the operator's write %d", s.RestartAfter)
			},
			keep: func(s Step, k *keptStep) { k.RestartAfter = s.RestartAfter },
			read: func(k keptStep, s *Step) []string {
				s.RestartAfter = k.RestartAfter
				return negative("restartAfter", k.RestartAfter)
			},
		},
		failKind(),
		kubeletKind(),
		downKind(),
		oldKind(),
	}
}

// writeKind is a kind whose fault comes at one of the operator's first
// maxWrite writes of a step, with probability 1/faultOdds: field is the
// Step's field, kept the keptStep's of key, on whether Faults turn it
// on, and says how Step.String says it, of the write.
func writeKind(key string, stream uint64, shown int, field func(*Step) *int, on func(Faults) bool, says string, kept func(*keptStep) *int) faultKind {
	return faultKind{
		name: key, stream: stream, shown: shown,
		draw: func(rng *rand.Rand, s *Step, faults Faults) {
			if *field(s) = drawWrite(rng, faultOdds); !on(faults) {
				*field(s) = 0
			}
		},
		has:   func(s Step) bool { return *field(&s) != 0 },
		clear: func(s *Step) { *field(s) = 0 },
		say: func(s Step) string {
			if n := *field(&s); n > 0 {
				return fmt.Sprintf(says, n)
			}
			return ""
		},
		keep: func(s Step, k *keptStep) { *kept(k) = *field(&s) },
		read: func(k keptStep, s *Step) []string {
			*field(s) = *kept(&k)
			return negative(key, *kept(&k))
		},
	}
}

// negative returns the mistake of a kept fault's write or request n of
// key, when it is negative.
func negative(key string, n int) []string {
	if n >= 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s %d: want 0 (none) or more", key, n)}
}

// failKind is the kind of the transient errors: a step's FailAt-th
// request answered with FailWith (Faults.ScenarioAnnotation).
func failKind() faultKind {
	return faultKind{
		name: "failAt", stream: failStream, shown: 7,
		draw: func(rng *rand.Rand, s *Step, on Faults) {
			s.FailAt = drawWrite(rng, faultOdds)
			s.FailWith = failures[rng.IntN(len(failures))]
			if on.ScenarioAnnotation == "" || s.FailAt == 0 {
				s.FailAt, s.FailWith = 0, 0
			}
		},
		has:   func(s Step) bool { return s.FailAt != 0 },
		clear: func(s *Step) { s.FailAt, s.FailWith = 0, 0 },
		say: func(s Step) string {
			if s.FailAt <= 0 {
				return ""
			}
			how := "as if the API server were unreachable"
			if s.FailWith != 0 {
				how = fmt.Sprintf("with %d", s.FailWith)
			}
			return fmt.Sprintf("failing the operator's request %d for it %s", s.FailAt, how)
		},
		keep: func(s Step, k *keptStep) { k.FailAt, k.FailWith = s.FailAt, s.FailWith },
		read: func(k keptStep, s *Step) []string {
			s.FailAt, s.FailWith = k.FailAt, k.FailWith
			mistakes := negative("failAt", k.FailAt)
			if k.FailWith != 0 && k.FailAt == 0 {
				mistakes = append(mistakes, fmt.Sprintf("failWith %d without failAt", k.FailWith))
			}
			return mistakes
		},
	}
}

// kubeletKind is the kind of the kubelet's faults (kubeletfaults.go),
// the world's.
func kubeletKind() faultKind {
	return faultKind{
		name: "kubelet", stream: kubeletStream, shown: 0, world: true,
		draw: func(rng *rand.Rand, s *Step, on Faults) {
			if s.Kubelet = drawKubelet(rng); !on.Kubelet {
				s.Kubelet = ""
			}
		},
		has:   func(s Step) bool { return s.Kubelet != "" },
		clear: func(s *Step) { s.Kubelet = "" },
		say: func(s Step) string {
			if s.Kubelet == "" {
				return ""
			}
			return "the kubelet's Pods " + s.Kubelet + " from then on"
		},
		keep: func(s Step, k *keptStep) { k.Kubelet = s.Kubelet },
		read: func(k keptStep, s *Step) []string {
			s.Kubelet = k.Kubelet
			if k.Kubelet == "" {
				return nil
			}
			if _, err := annotationValue(k.Kubelet); err != nil {
				return []string{err.Error()}
			}
			return nil
		},
	}
}

// downKind is the kind of the steps made while the operator is down
// (down.go).
func downKind() faultKind {
	return faultKind{
		name: "down", stream: downStream, shown: 1,
		draw:  func(rng *rand.Rand, s *Step, on Faults) { s.Down = rng.IntN(downOdds) == 0 && on.Down },
		has:   func(s Step) bool { return s.Down },
		clear: func(s *Step) { s.Down = false },
		say: func(s Step) string {
			if !s.Down {
				return ""
			}
			return "made while the operator is down"
		},
		keep: func(s Step, k *keptStep) { k.Down = s.Down },
		read: func(k keptStep, s *Step) []string {
			s.Down = k.Down
			return nil
		},
	}
}
