package explore

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSideBySide replays kept sequences through a try that records how
// many run at once, and stops its goroutine for one, as t.FailNow does
// off the test's goroutine (kubetest's Namespace, apptest's Start): that
// one's Failure names its sequence, and the others' are theirs alone.
func TestSideBySide(t *testing.T) {
	seqs := []kept{{path: "a"}, {path: "stops"}, {path: "fails"}, {path: "d"}, {path: "e"}, {path: "f"}}
	var (
		mu            sync.Mutex
		running, most int
	)
	// Each try waits until atOnce run, or all that are left, so that a
	// slot unheld shows as fewer at once.
	atOnce := 3
	gate := make(chan struct{})
	started := 0
	try := func(k kept) *Failure {
		mu.Lock()
		running++
		most = max(most, running)
		started++
		if started == atOnce {
			close(gate)
		}
		mu.Unlock()
		<-gate
		defer func() {
			mu.Lock()
			running--
			mu.Unlock()
		}()
		switch k.path {
		case "stops":
			runtime.Goexit()
		case "fails":
			return &Failure{Kept: k.path, Err: errStopped}
		}
		return nil
	}
	failures := sideBySide("TestX", seqs, atOnce, try)
	require.Equal(t, atOnce, most, "at most atOnce at a time, and that many")
	require.Len(t, failures, len(seqs))
	require.NotNil(t, failures[1], "a replay that stopped its goroutine fails")
	require.Equal(t, "stops", failures[1].Kept)
	require.Equal(t, "TestX", failures[1].Test)
	require.Equal(t, "fails", failures[2].Kept)
	for _, i := range []int{0, 3, 4, 5} {
		require.Nil(t, failures[i], "kept %s passed", seqs[i].path)
	}
}

// TestKeptAtOnceFor: Config.OneReplicaAtATime replays kept sequences one
// at a time, and without it they replay keptAtOnce at a time.
func TestKeptAtOnceFor(t *testing.T) {
	require.Equal(t, 1, keptAtOnceFor(true))
	require.Equal(t, keptAtOnce, keptAtOnceFor(false))
	require.Greater(t, keptAtOnce, 1, "without the option, kept sequences replay side by side")
}
