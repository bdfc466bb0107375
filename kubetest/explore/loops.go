package explore

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/loam-dev/loam/adapters/telemetry"
)

// The liveness oracle (issue #47): an operator that writes nothing may
// still never rest, reconciling an object again and again with nothing
// to do, a Reconciler that asks for another pass after 5 ms every time,
// say. The quiet check sees no write and passes it; the explorer counts
// the operator's reconciles instead, by the span each reconcile of a
// kube.Controller records, in the replica's own telemetry.

// defaultLoopRate is Config.LoopRate's default: ten reconciles a second
// of one object with nothing to do is a loop, not a poll.
const defaultLoopRate = 10

// minLoop is the fewest reconciles of one object, while the operator is
// quiet, that the explorer calls a loop, whatever their rate: a quiet
// window is short, and one or two reconciles in it, an event's late
// delivery, say, make a high rate of nothing.
const minLoop = 3

// reconcile is one reconcile of an object, as its span tells it.
type reconcile struct {
	// object names the object: its Kind, as the span's name has it, and
	// its namespace and name.
	object    string
	start     time.Time
	succeeded bool
}

// reconciles returns the reconciles among spans: the root span of each,
// "reconcile <Kind>", has its outcome, and names its object.
func reconciles(spans []tracetest.SpanStub) []reconcile {
	var out []reconcile
	for _, s := range spans {
		object, outcome, ok := reconciled(s)
		if !ok || outcome == "" {
			continue
		}
		out = append(out, reconcile{object: object, start: s.StartTime, succeeded: outcome == "success"})
	}
	return out
}

// underWay returns the objects whose reconciles are under way among
// running, the spans started and not yet ended, in the order they
// started: a reconcile's span has its outcome only once it ends.
func underWay(running []tracetest.SpanStub) []string {
	var out []string
	for _, s := range running {
		if object, _, ok := reconciled(s); ok {
			out = append(out, object)
		}
	}
	return out
}

// reconciled returns the object s reconciles, by its Kind, namespace and
// name, and the reconcile's outcome, "" before it ends, when s is the
// root span of a reconcile, "reconcile <Kind>".
func reconciled(s tracetest.SpanStub) (object, outcome string, ok bool) {
	kind, ok := strings.CutPrefix(s.Name, "reconcile ")
	if !ok || s.Parent.IsValid() {
		return "", "", false
	}
	var namespace, name string
	for _, a := range s.Attributes {
		switch a.Key {
		case telemetry.OutcomeKey:
			outcome = a.Value.AsString()
		case telemetry.NamespaceKey:
			namespace = a.Value.AsString()
		case telemetry.ObjectNameKey:
			name = a.Value.AsString()
		}
	}
	if namespace != "" {
		return kind + " " + namespace + "/" + name, outcome, true
	}
	return kind + " " + name, outcome, true
}

// loops returns, for each object reconciled more than rate times a
// second, and at least minLoop times, from from to to, a while in which
// the operator wrote nothing, how many times and at what rate, in the
// order of the objects' names.
func loops(rs []reconcile, from, to time.Time, rate float64) []string {
	window := to.Sub(from)
	if window <= 0 {
		return nil
	}
	counts := map[string]int{}
	for _, r := range rs {
		if !r.start.Before(from) && !r.start.After(to) {
			counts[r.object]++
		}
	}
	var out []string
	for _, object := range slices.Sorted(maps.Keys(counts)) {
		n := counts[object]
		if per := float64(n) / window.Seconds(); n >= minLoop && per > rate {
			out = append(out, fmt.Sprintf("%s, reconciled %d times in %v (%.0f a second)", object, n, window.Round(time.Millisecond), per))
		}
	}
	return out
}
