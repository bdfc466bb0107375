package explore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kubetest/internal/generate"
)

func TestSchedule(t *testing.T) {
	changes := make([]generate.Step, 8)
	for i := range changes {
		changes[i] = generate.Step{Op: generate.Update, Name: "x"}
	}
	all := Faults{Restarts: true, ScenarioAnnotation: "explore.loam.dev/scenario"}
	require.Equal(t, schedule(7, 3, changes, all), schedule(7, 3, changes, all), "the same seed and sequence, the same faults")

	// A kind turned off leaves the others as they were; restarts are off
	// by default.
	every := schedule(7, 3, changes, all)
	some := schedule(7, 3, changes, Faults{NoStaleViews: true})
	for i := range every {
		require.Equal(t, every[i].CrashAfter, some[i].CrashAfter)
		require.Zero(t, some[i].StaleFrom)
		require.Zero(t, some[i].RestartAfter)
		require.Zero(t, some[i].FailAt, "transient errors are off without an annotation")
		require.Zero(t, some[i].FailWith)
	}
	for _, s := range schedule(7, 3, changes, Faults{NoCrashes: true, Restarts: true}) {
		require.Zero(t, s.CrashAfter)
	}

	// Over many sequences, each fault comes about as often as its odds
	// say, at a write from 1 to maxWrite. The seeds are fixed, so the
	// counts are too; the bounds only say what the odds mean.
	var crashes, stale, restarts, fails, steps int
	with := map[int]int{}
	for seq := range 200 {
		for _, s := range schedule(1, seq, changes, all) {
			steps++
			for _, f := range []struct {
				at    int
				count *int
			}{{s.CrashAfter, &crashes}, {s.StaleFrom, &stale}, {s.RestartAfter, &restarts}, {s.FailAt, &fails}} {
				require.True(t, f.at >= 0 && f.at <= maxWrite, "a fault at write %d", f.at)
				if f.at > 0 {
					*f.count++
				}
			}
			if s.FailAt > 0 {
				with[s.FailWith]++
			} else {
				require.Zero(t, s.FailWith, "no status without a failed request")
			}
		}
	}
	require.InDelta(t, float64(steps)/faultOdds, crashes, float64(steps)/20)
	require.InDelta(t, float64(steps)/faultOdds, stale, float64(steps)/20)
	require.InDelta(t, float64(steps)/restartOdds, restarts, float64(steps)/20)
	require.InDelta(t, float64(steps)/faultOdds, fails, float64(steps)/20)
	require.Len(t, with, len(failures), "every kind of failure comes up")
	for status, n := range with {
		require.InDelta(t, float64(fails)/float64(len(failures)), n, float64(fails)/10, "status %d", status)
	}
}

func TestWithoutFaults(t *testing.T) {
	steps := []Step{
		{CrashAfter: 2, StaleFrom: 1, RestartAfter: 3, FailAt: 2, FailWith: 503},
		{CrashAfter: 1, StaleFrom: 4},
		{FailAt: 1, FailWith: 500},
	}
	// The failure needs the first step's stale view, the second's crash
	// and the third's failed request, and nothing else.
	fails := func(s []Step) bool { return s[0].StaleFrom == 1 && s[1].CrashAfter == 1 && s[2].FailAt == 1 }
	require.Equal(t, []Step{{StaleFrom: 1}, {CrashAfter: 1}, {FailAt: 1, FailWith: 500}}, withoutFaults(steps, fails),
		"a failed request dropped takes its status with it")
	require.Equal(t, Step{CrashAfter: 2, StaleFrom: 1, RestartAfter: 3, FailAt: 2, FailWith: 503}, steps[0], "the steps given are left as they were")
}

func TestStep_String(t *testing.T) {
	s := Step{Step: generate.Step{Op: generate.Delete, Name: "explore-0"}, CrashAfter: 2, StaleFrom: 1, RestartAfter: 3, FailAt: 4, FailWith: 503}
	require.Equal(t, "delete explore-0, the operator's view stale from its write 1, crashing the operator right after its write 2, restarting the API server right after the operator's write 3, failing the operator's request 4 for it with 503", s.String())
	s = Step{Step: generate.Step{Op: generate.Delete, Name: "explore-0"}, FailAt: 1}
	require.Equal(t, "delete explore-0, failing the operator's request 1 for it as if the API server were unreachable", s.String())
}

func TestRestarter_deadline(t *testing.T) {
	start := time.Unix(1000, 0)
	settle := 10 * time.Second
	for _, tc := range []struct {
		name  string
		ended time.Time
		want  time.Time
	}{
		{"no restart", time.Time{}, start.Add(settle)},
		{"long before", start.Add(-afterRestart - time.Minute), start.Add(settle)},
		{"just before: the clients may be catching up still", start.Add(-time.Second), start.Add(-time.Second + afterRestart + settle)},
		{"during the wait", start.Add(5 * time.Second), start.Add(5*time.Second + afterRestart + settle)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &restarter{ended: tc.ended}
			require.Equal(t, tc.want, s.deadline(start, settle))
		})
	}
}

func TestRestarter_during(t *testing.T) {
	at := time.Unix(1000, 0)
	open := make(chan struct{})
	closed := make(chan struct{})
	close(closed)
	for _, tc := range []struct {
		name  string
		s     *restarter
		since time.Time
		want  bool
	}{
		{"no restart", &restarter{}, at, false},
		{"one under way", &restarter{done: open, ended: at.Add(-time.Hour)}, at, true},
		{"one ended since", &restarter{done: closed, ended: at.Add(time.Second)}, at, true},
		{"the last ended before", &restarter{done: closed, ended: at.Add(-time.Second)}, at, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.s.during(tc.since))
		})
	}
}
