package ports

import (
	"context"
	"strconv"
	"time"
)

// Recorder is where the controller reports each reconcile, and what its
// informers recover from the end user's code: the telemetry adapter turns
// the calls into a span, log records and the reconcile.duration
// histogram.
type Recorder interface {
	// ReconcileStarted is called as a reconcile of key starts, and returns
	// the context the reconcile runs in, such as one carrying its span.
	ReconcileStarted(ctx context.Context, key Key) context.Context
	// ReconcileCaused reports the related objects whose changes queued the
	// reconcile in ctx, the context ReconcileStarted returned. It is called
	// right after ReconcileStarted, and only when related changes queued
	// the key since a pass last took it. causes are the distinct objects,
	// at most a bound of them; dropped counts the changes beyond the bound
	// of objects not among causes, and an object that changed twice counts
	// twice, since telling the changes apart would mean keeping every
	// object. causes is the Recorder's to keep.
	ReconcileCaused(ctx context.Context, causes []Cause, dropped int)
	// ScenarioStripped reports a failure scenario that an object's
	// annotation carried and its reconcile does not: err says why the
	// annotation couldn't be read, and is nil when the object isn't
	// trusted. ctx is the reconcile's.
	ScenarioStripped(ctx context.Context, err error)
	// ReconcileEnded is called once for each ReconcileStarted, with the
	// context it returned, as the reconcile ends.
	ReconcileEnded(ctx context.Context, key Key, report Report)
	// LeaderElectionUnfenced reports Lease timings that let a leader cut
	// off from the API server reconcile after a standby may have taken the
	// Lease: timings that settings.Fenced doesn't find fenced.
	LeaderElectionUnfenced(ctx context.Context, leaseDuration, renewDeadline, retryPeriod time.Duration)
	// MappingPanicked reports a panic of an end user's function that an
	// informer calls and recovers: the mapping of a related watch, an
	// index function or an update filter. what names the function, such
	// as "the mapping of configmaps", `index "configMap"` or
	// `filter "SkipStatusOnly" of deployments.apps`, and cause the object it was
	// called with, zero when that is unknown. ctx is the informer's: no
	// reconcile is running.
	MappingPanicked(ctx context.Context, what string, cause Cause, p *Panic)
	// ShardChanged reports that a sharded controller's replica acquired,
	// released or lost shard, of count. ctx is the controller's: no
	// reconcile is running.
	ShardChanged(ctx context.Context, change ShardChange, shard, count int)
	// HandOffStuck reports a pass over key of shard, of count, that still
	// runs, for running, after its shard's hand-off cancelled it at
	// DrainTimeout and waited a grace beyond: it ignores its context, and
	// the replica keeps the shard's Lease, reconciling none of the shard's
	// objects, for as long as it runs. ctx is the controller's: the pass's
	// own reconcile still runs.
	HandOffStuck(ctx context.Context, key Key, shard, count int, running time.Duration)
}

// Report is how one reconcile ended.
type Report struct {
	// Outcome is how the reconcile settled its key.
	Outcome Outcome
	// Err is why the reconcile failed, when Outcome is OutcomeError or
	// OutcomeTimeout.
	Err error
	// Panic is what the end user's code panicked with, when Outcome is
	// OutcomePanic.
	Panic *Panic
	// Timeout is the deadline the end user's call ran past, when Outcome
	// is OutcomeTimeout.
	Timeout time.Duration
	// Duration is how long the reconcile took.
	Duration time.Duration
	// After is when the key is reconciled again, unless it changes
	// first, when Outcome is OutcomeSuccess and the Result asked for it:
	// controller-runtime's requeue_after result.
	After time.Duration
}

// Outcome is how a reconcile settled its key.
type Outcome int

const (
	// OutcomeSuccess is a reconcile that needs no retry: its key is
	// forgotten, and reconciled again after its Result's After, on a
	// change, or on the resync.
	OutcomeSuccess Outcome = iota
	// OutcomeError is a reconcile that failed: its key is retried with
	// backoff.
	OutcomeError
	// OutcomePanic is a reconcile whose end user's code panicked: its key is
	// forgotten and never retried.
	OutcomePanic
	// OutcomeTimeout is a reconcile whose end user's code returned after
	// its deadline had cancelled its context, whatever it returned: a
	// failure, retried with backoff as OutcomeError is.
	OutcomeTimeout
)

// String returns the outcome as the reconcile.outcome attribute reads:
// success, error, panic or timeout.
func (o Outcome) String() string {
	switch o {
	case OutcomeSuccess:
		return "success"
	case OutcomeError:
		return "error"
	case OutcomePanic:
		return "panic"
	case OutcomeTimeout:
		return "timeout"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Panic is a panic recovered from the end user's code.
type Panic struct {
	// Value is what the code panicked with.
	Value any
	// Stack is the panicking goroutine's stack, as runtime/debug.Stack
	// returns it.
	Stack []byte
}
