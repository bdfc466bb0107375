package wait_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// fatal is a testing.TB whose Fatalf keeps the message and ends the
// goroutine For runs on, as the real one ends the test's.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}

func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure runs For with a fatal TB, and returns the message it failed
// with, or "" when it returned.
func failure(t *testing.T, within time.Duration, cond func() bool, msg string, watched ...wait.Watched) string {
	t.Helper()
	f := &fatal{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait.For(f, within, cond, msg, watched...)
	}()
	<-done
	return f.msg
}

func TestFor_returns_when_the_condition_first_holds(t *testing.T) {
	n := 0
	before := time.Now()
	at := wait.For(t, time.Minute, func() bool { n++; return n == 3 }, "never three")
	require.Equal(t, 3, n, "polled until it held, and no longer")
	require.False(t, at.Before(before))
}

func TestFor_fails_after_within_naming_what_it_waited_for(t *testing.T) {
	msg := failure(t, 50*time.Millisecond, func() bool { return false }, "the Lease is never taken")
	require.Equal(t, "the Lease is never taken: not within 50ms", msg)
}

func TestFor_fails_at_once_when_a_watched_App_exits_and_reports_it(t *testing.T) {
	a := apptest.Start(t, func(context.Context, *app.Setup) ([]app.Service, error) {
		return nil, errors.New("no CRD")
	})
	<-a.Done()
	began := time.Now()
	msg := failure(t, time.Hour, func() bool { return false }, "never reconciled", wait.App(a))
	require.Less(t, time.Since(began), time.Minute, "it didn't wait out within")
	require.Contains(t, msg, "never reconciled: gave up after")
	require.Contains(t, msg, "as an App it watched has exited")
	require.Contains(t, msg, "the App exited with 78.")
	require.Contains(t, msg, "init failed exception.message=no CRD", "the App's records")
	require.Contains(t, msg, "Its stderr:\ninit: no CRD", "the App's stderr")
}

// idle is a Service that serves until it is stopped.
type idle struct{}

func (idle) Serve(ctx context.Context) error { <-ctx.Done(); return nil }
func (idle) Shutdown(context.Context) error  { return nil }

func TestFor_reports_an_App_that_still_runs_when_it_times_out(t *testing.T) {
	a := apptest.Start(t, func(context.Context, *app.Setup) ([]app.Service, error) {
		return []app.Service{idle{}}, nil
	})
	msg := failure(t, 10*time.Millisecond, func() bool { return false }, "no status", wait.App(a))
	require.Contains(t, msg, "no status: not within 10ms\n\nthe App still runs.\nIts 0 log records:")
}

// replica is a test's own type of App, named after its identity.
type replica struct {
	*apptest.App
	identity string
}

func (r *replica) Report() string { return wait.Report("replica "+r.identity, r.App, r.Telemetry()) }

func TestAll_passes_a_slice_of_a_test_s_own_type(t *testing.T) {
	start := func(identity string) *replica {
		return &replica{App: apptest.Start(t, func(context.Context, *app.Setup) ([]app.Service, error) {
			return []app.Service{idle{}}, nil
		}), identity: identity}
	}
	replicas := []*replica{start("pod-0"), start("pod-1")}
	msg := failure(t, 10*time.Millisecond, func() bool { return false }, "nobody leads", wait.All(replicas)...)
	require.Contains(t, msg, "replica pod-0 still runs.")
	require.Contains(t, msg, "replica pod-1 still runs.")
}

func TestFor_reports_what_the_test_last_saw(t *testing.T) {
	try := 0
	msg := failure(t, 30*time.Millisecond, func() bool { try++; return false }, "never denied",
		wait.LastSeen(func() string { return fmt.Sprintf("try %d was allowed", try) }))
	require.Regexp(t, `^never denied: not within 30ms\n\nLast seen: try \d+ was allowed$`, msg)
}

func TestFor_holds_when_the_App_did_what_it_waited_for_as_it_exited(t *testing.T) {
	a := apptest.Start(t, func(context.Context, *app.Setup) ([]app.Service, error) {
		return nil, errors.New("no CRD")
	})
	<-a.Done()
	// The first reading is before the App exited; the second, after, is
	// what it did on its way out.
	readings := 0
	wait.For(t, time.Minute, func() bool { readings++; return readings == 2 }, "never", wait.App(a))
	require.Equal(t, 2, readings)
}
