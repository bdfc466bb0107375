// Package reconcile is the state machine that reconciles one object at a
// time for a controller. Handed a key, a Loop reads the object from the
// cache, decides the one Step the pass takes — nothing, add the
// controller's finalizer, finalize, or reconcile — runs it through the
// ports, recovering a panic of the end user's code, and settles the key in
// the work queue:
//
//   - an error retries the key with backoff;
//   - so does a timeout: the end user's Reconcile or Finalize returned
//     after Config.Timeout had cancelled its context;
//   - a panic forgets it, never retried;
//   - a failure, a timeout and a panic each record a Warning Event on the
//     object, when the Config has Events;
//   - otherwise a positive Result.After queues it again after that long,
//     and nothing else does until it changes or the resync comes.
//
// Each key has at most one pending timer, a retry's or an After's: the
// latest pass's outcome replaces it, and a change to the object drops it,
// as does a success without After or a panic, and Lift, which queues at
// once the keys whose latest pass failed carrying a failure scenario once
// failure injection is turned off. A change is an informer
// event with a new resourceVersion, the controller's own status write
// included; a resync is not, so it leaves the timer alone.
//
// Keys are queued at one of the work queue's three classes. Changes —
// of the object, of an object it owns, of a related object that maps to
// it, a deletion — go first. Requeues — a retry or an After whose timer
// fired, a key Lift queues again — go next, in the order they came due.
// The background — the objects of the informers' first lists, resyncs —
// goes last. A new leader's thousands of initial keys so delay neither
// the object a user just changed nor a key the controller asked to see
// again at a given time, and the queue still hands each class its share.
// A firing timer queues its key before a change's Notify can drop it, so
// a change notified while the timer fires is reconciled once, by the
// timer's pass or the next. The informer stores a change before it
// notifies it, so a change stored just before the timer fired and
// notified just after is seen by the timer's pass and queued once more:
// the key is reconciled twice, the second time a no-op. Telling the two
// apart would need the event's resourceVersion.
//
// A change of a related object, one the controller watches without owning
// it, queues the keys it maps to like any change, and the Loop keeps it as
// a cause of each: the next pass over the key takes the key's causes and
// reports them to the Recorder, at most MaxCauses of them, so a reconcile
// that no change of its own object explains says what did.
//
// The Loop runs no goroutine of its own: each of the controller's workers
// calls Next until it returns false, and its timers run on the Clock's.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/loam-dev/loam/domain/backoff"
	"github.com/loam-dev/loam/ports"
)

// Prepare is a step that runs first in every pass that does something,
// before the finalizer is added or removed and before the end user's code,
// and returns the context the rest of the pass runs in. Reading a failure
// scenario from the object's annotation is such a step. obj is shared with
// the cache and must not be modified. A panic in it is the pass's panic:
// nothing else runs, and the key is forgotten.
type Prepare func(ctx context.Context, obj ports.Object) context.Context

// Config is what a Loop drives.
type Config struct {
	// Name is the controller's name, Settings.Name, the field manager of
	// its applies: every pass's context carries it, with the object's
	// identity, as a Pass.
	Name string
	// Source is the cache the Loop reads objects from.
	Source ports.ObjectSource
	// Writer applies statuses and the finalizer.
	Writer ports.Writer
	// Queue holds the keys to reconcile, and settles them.
	Queue ports.Queue
	// Handler runs the end user's Reconciler and Finalize.
	Handler ports.Handler
	// Recorder is told of every reconcile.
	Recorder ports.Recorder
	// Clock times reconciles and runs the retries' and Afters' timers.
	Clock ports.Clock
	// Retry spaces the retries of a key whose pass failed; the zero Policy
	// is backoff.Default().
	Retry backoff.Policy
	// Finalizer is the finalizer the controller's Finalize holds objects
	// with, or "" when it has none: then Handler.Finalize is never called,
	// and no finalizer is ever applied.
	Finalizer string
	// Prepare, when not nil, runs first in every pass that does something.
	Prepare Prepare
	// Until, when not nil, is asked after every pass that Prepare ran
	// in, with the context Prepare returned, when what Prepare carried
	// into it stops applying, such as a failure scenario's end. While that
	// is still to come, the key's one timer goes off then at the latest:
	// the object is reconciled again once the scenario has ended, though
	// nothing changed. A panicked pass sets no timer, as ever.
	Until func(ctx context.Context) (time.Time, bool)
	// Carried, when not nil, is asked after every pass that Prepare ran
	// in, with the context Prepare returned, whether Prepare carried
	// something into it, such as a failure scenario: a key whose latest
	// pass failed or timed out carrying it is one Lift queues again.
	Carried func(ctx context.Context) bool
	// Timeout, when positive, bounds each call of the end user's Reconcile
	// and Finalize: the call's context is cancelled that long after it
	// started, with a cause that names the object and the timeout, and a
	// call that returns after that, whatever it returns, is a timeout. 0
	// bounds nothing.
	Timeout time.Duration
	// Events, when not nil, records a Warning Event on the object of
	// every pass that failed, timed out or panicked: ReasonFailed with
	// the error as its note, or ReasonPanicked with the panic's value.
	// Nil records none.
	Events ports.Events
	// Admit, when not nil, is asked before every pass that does
	// something whether this replica may reconcile obj, of key: a sharded
	// controller's replica reconciles only the objects of the shards it
	// holds. When it may, Admit returns the context the pass runs in and
	// the function the Loop calls once the pass is settled; when it may
	// not, the key is forgotten, as an object gone from the cache is.
	Admit func(ctx context.Context, key ports.Key, obj ports.Object) (context.Context, func(), bool)
}

// Loop reconciles a controller's keys, one pass at a time per call. It is
// safe for concurrent use by the controller's workers; the Queue sees to it
// that no key is in two passes at once.
type Loop struct {
	c       Config
	stopped atomic.Bool
	limiter *backoff.Limiter[ports.Key]
	timers  *timers
	causes  *causes
	carried *carried
	stored  *stored
}

// New returns a Loop that drives c's ports. It fails when a port is
// missing.
func New(c Config) (*Loop, error) {
	var errs []error
	for _, p := range []struct {
		name string
		nil  bool
	}{
		{"Source", c.Source == nil},
		{"Writer", c.Writer == nil},
		{"Queue", c.Queue == nil},
		{"Handler", c.Handler == nil},
		{"Recorder", c.Recorder == nil},
		{"Clock", c.Clock == nil},
	} {
		if p.nil {
			errs = append(errs, fmt.Errorf("reconcile: Config.%s is nil", p.name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if c.Retry == (backoff.Policy{}) {
		c.Retry = backoff.Default()
	}
	return &Loop{
		c:       c,
		limiter: backoff.NewLimiter[ports.Key](c.Retry, c.Clock),
		// A retry and an After are requeues: behind the changes, ahead
		// of the informers' first lists and the resyncs.
		timers:  newTimers(c.Clock, c.Queue.AddRequeue),
		causes:  newCauses(),
		carried: newCarried(),
		stored:  newStored(),
	}, nil
}

// Notify queues the key an informer's event names. A change drops the
// key's pending retry or After, since the pass it queues settles the key
// anew; a resync leaves it. An event's Cause is kept for the key's next
// pass to report. An object of an informer's first list and a resync are
// queued in the background, behind the changes: a new leader's thousands
// of keys don't delay the object a user just changed.
func (l *Loop) Notify(ev ports.Event) {
	if !ev.Resync {
		l.timers.drop(ev.Key)
	}
	// Kept before the key is queued, so the pass the event queues finds
	// it. Most events are the primary's own and carry none; they pay for
	// no lock.
	if !ev.Cause.IsZero() {
		l.causes.add(ev.Key, ev.Cause)
	}
	if ev.Initial || ev.Resync {
		l.c.Queue.AddBackground(ev.Key)
		return
	}
	l.c.Queue.Add(ev.Key)
}

// Pending returns how many keys wait on a timer: a retry or an After.
func (l *Loop) Pending() int { return l.timers.len() }

// Next takes a key from the queue, reconciles it in ctx and marks it done.
// It blocks until a key is ready, and returns false without reconciling
// once the queue is shut down or the Loop stopped.
func (l *Loop) Next(ctx context.Context) bool {
	key, shutdown := l.c.Queue.Get()
	if shutdown {
		return false
	}
	defer l.c.Queue.Done(key)
	// client-go's queue hands out what it holds even after it is shut
	// down; a stopped Loop leaves that backlog to the next leader.
	if l.stopped.Load() {
		return false
	}
	l.Reconcile(ctx, key)
	return true
}

// Stop stops the Loop taking keys: it cancels every pending timer, drops
// every key's causes, shuts the queue down, without draining it, and from
// then on Next returns false. A pass in flight goes on; its context is the
// caller's to cancel.
func (l *Loop) Stop() {
	l.stopped.Store(true)
	l.timers.stop()
	l.causes.stop()
	l.carried.stop()
	l.c.Queue.ShutDown()
}

// Lift says that what Prepare carried into every pass no longer applies,
// as when failure injection is turned off: each key whose latest pass
// failed or timed out carrying something (Config.Carried) is queued again
// at once, as a requeue, its pending retry dropped, rather than at
// its retry, which a long experiment's backoff may have put minutes away.
// It does nothing once the Loop has stopped.
func (l *Loop) Lift() {
	for _, key := range l.carried.take() {
		l.timers.drop(key)
		if !l.stopped.Load() {
			l.c.Queue.AddRequeue(key)
		}
	}
}

// Reconcile runs one pass over key in ctx and settles the key in the
// queue, in a context marked with the Pass (see PassOf). A pass that does something is a reconcile, which the Recorder is
// told of as it starts and ends, and of the related changes that queued
// it; skipping an object gone from the cache, or one being deleted that
// the finalizer doesn't hold, is not, and nor is skipping an object that
// Config.Admit refuses. Every pass takes the key's causes, a skip
// included, so those of a deleted object don't linger.
func (l *Loop) Reconcile(ctx context.Context, key ports.Key) {
	caused := l.causes.take(key)
	obj, found, err := l.c.Source.Get(key)
	step := StepSkip
	if err == nil {
		step = Decide(obj, found, l.c.Finalizer)
		if step == StepSkip {
			l.forget(key)
			l.stored.forget(key)
			return
		}
		if l.c.Admit != nil {
			admitted, done, ok := l.c.Admit(ctx, key, obj)
			if !ok {
				// Another replica's: its timers, backoff and statuses
				// are that replica's too.
				l.forget(key)
				l.stored.forget(key)
				return
			}
			defer done()
			ctx = admitted
		}
	}

	ctx = withPass(ctx, Pass{Controller: l.c.Name, Key: key, UID: obj.UID, object: obj.JSON})
	start := l.c.Clock.Now()
	ctx = l.c.Recorder.ReconcileStarted(ctx, key)
	if len(caused.objects) > 0 {
		l.c.Recorder.ReconcileCaused(ctx, caused.objects, caused.dropped)
	}
	var s settlement
	if err != nil {
		s = failed(fmt.Errorf("reading %s from the cache: %w", key, err))
	} else {
		s = l.pass(ctx, key, obj, step)
	}
	s.report.Duration = l.c.Clock.Now().Sub(start)
	l.settle(key, s)
	if err == nil {
		// A failed cache read has no object to record an Event on.
		l.recordEvent(ctx, obj, step, s.report)
	}
	l.c.Recorder.ReconcileEnded(ctx, key, s.report)
}
