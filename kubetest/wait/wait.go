// Package wait is how a test against a real API server waits for what it
// can only poll for: a status written, a Lease taken, a count reached.
// kubetest's own suites (e2e, chaos, scale) and the examples' end-to-end
// tests use it, and so may an end user's tests of their own operator. It is
// one helper with one argument order, so every wait reads the same and
// fails the same way: naming what it waited for, and telling what the Apps
// it watched were doing.
//
// A wait proves that something happened. It never proves that nothing
// did: for that, wait for a later event that must come after, and count.
package wait

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/loam-dev/loam/app/apptest"
)

// Every is how often For polls: often enough that a wait adds little to
// what a test measures, seldom enough that a condition which reads the API
// server doesn't load it.
const Every = 20 * time.Millisecond

// Watched is what a wait keeps an eye on while it polls, such as the App
// under test. Once it is done the wait fails at once, since what the wait
// is for will not come; and a failed wait's message carries its Report.
type Watched interface {
	// Done is closed once it has exited.
	Done() <-chan struct{}
	// Report describes it for a failed wait's message: whether it still
	// runs, and what it logged.
	Report() string
}

// For polls cond every Every until it holds, and returns the moment it
// first held. It fails t after within, or as soon as one of watched is
// done, with msg — what went wrong if cond never holds, such as "pod-0
// never leads" — and the Report of each of watched.
//
// cond runs on the test's goroutine, so it may use require.
func For(t testing.TB, within time.Duration, cond func() bool, msg string, watched ...Watched) time.Time {
	t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	for {
		if cond() {
			return time.Now()
		}
		if anyDone(watched) {
			// What an App did before it exited may be what cond waits for.
			if cond() {
				return time.Now()
			}
			t.Fatalf("%s: gave up after %v, as an App it watched has exited%s", msg, time.Since(start).Round(time.Millisecond), reports(watched))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v%s", msg, within, reports(watched))
		}
		time.Sleep(Every)
	}
}

// anyDone reports whether one of watched is done.
func anyDone(watched []Watched) bool {
	for _, w := range watched {
		select {
		case <-w.Done():
			return true
		default:
		}
	}
	return false
}

// reports joins the Reports of watched, each on lines of its own.
func reports(watched []Watched) string {
	var b strings.Builder
	for _, w := range watched {
		b.WriteString("\n\n")
		b.WriteString(w.Report())
	}
	return b.String()
}

// All returns ws as Watched, for a test that keeps its Apps in a slice of
// its own type: For(t, d, cond, msg, All(replicas)...).
func All[W Watched](ws []W) []Watched {
	out := make([]Watched, len(ws))
	for i, w := range ws {
		out[i] = w
	}
	return out
}

// LastSeen returns a Watched that never exits, whose Report is what
// report returns: what the test last saw, such as the condition's last
// reading, for a failed wait's message.
func LastSeen(report func() string) Watched { return lastSeen(report) }

type lastSeen func() string

// Done returns nil, a channel that is never closed.
func (lastSeen) Done() <-chan struct{} { return nil }

func (l lastSeen) Report() string { return "Last seen: " + l() }

// App returns a as For watches it, named "the App", with the records of
// its own Telemetry. A test's type that embeds an apptest.App and gives it
// another name, or another Telemetry, implements Watched with Report.
func App(a *apptest.App) Watched { return plainApp{a} }

type plainApp struct{ *apptest.App }

func (a plainApp) Report() string { return Report("the App", a.App, a.Telemetry()) }

// reportRecords and reportStderr bound what Report shows of an App: a
// retried failure logs once a retry, and the message must stay readable.
const (
	reportRecords = 40
	reportStderr  = 4 << 10
)

// Report describes the App a, called name, for a failed wait: whether it
// still runs or its exit code, why its Service failed if it says so, its
// log records from tel (the first and the last when there are many), and
// the end of its stderr. tel is the Telemetry the App reports to:
// a.Telemetry(), unless the test gave it another with app.WithTelemetry.
func Report(name string, a *apptest.App, tel *apptest.Telemetry) string {
	var b strings.Builder
	select {
	case <-a.Done():
		fmt.Fprintf(&b, "%s exited with %d.", name, a.Wait())
	default:
		fmt.Fprintf(&b, "%s still runs.", name)
	}
	if msgs := tel.ExceptionMessages("service failed"); len(msgs) > 0 {
		fmt.Fprintf(&b, " Its Service failed: %s", msgs[0])
	}
	records := tel.Records()
	fmt.Fprintf(&b, "\nIts %d log records:", len(records))
	for i, r := range records {
		if len(records) > reportRecords && i >= reportRecords/2 && i < len(records)-reportRecords/2 {
			if i == reportRecords/2 {
				fmt.Fprintf(&b, "\n  ... %d more ...", len(records)-reportRecords)
			}
			continue
		}
		b.WriteString("\n  " + r.Severity().String() + " " + r.Body().AsString())
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			b.WriteString(" " + string(kv.Key) + "=" + kv.Value.String())
			return true
		})
	}
	if stderr := a.Stderr(); stderr != "" {
		if len(stderr) > reportStderr {
			stderr = "..." + stderr[len(stderr)-reportStderr:]
		}
		b.WriteString("\nIts stderr:\n" + stderr)
	}
	return b.String()
}
