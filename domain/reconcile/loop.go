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
// Keys are queued at one of the work queue's two priorities. Changes —
// of the object, of an object it owns, of a related object that maps to
// it, a deletion — go ahead of the background: the objects of the
// informers' first lists, resyncs, retries and Afters. A new leader's
// thousands of initial keys so don't delay the object a user just
// changed, and the queue still hands the background its share.
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
	"runtime/debug"
	"sync/atomic"
	"time"
	"unicode/utf8"

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
	// something whether this replica may reconcile obj: a sharded
	// controller's replica reconciles only the objects of the shards it
	// holds. When it may, Admit returns the context the pass runs in and
	// the function the Loop calls once the pass is settled; when it may
	// not, the key is forgotten, as an object gone from the cache is.
	Admit func(ctx context.Context, obj ports.Object) (context.Context, func(), bool)
}

// The reasons of the Events a Loop records on an object whose pass went
// wrong.
const (
	// ReasonFailed is the reason of a pass that failed or timed out.
	ReasonFailed = "ReconcileFailed"
	// ReasonPanicked is the reason of a pass whose end user's code
	// panicked.
	ReasonPanicked = "ReconcilePanicked"
	// NoteLimit is the API server's bound on an Event's note, in bytes,
	// to which a Loop cuts the error it records.
	NoteLimit = 1024
)

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
		// A retry and an After are the background's: they wait behind
		// the changes, as the keys of the informers' first lists do.
		timers:  newTimers(c.Clock, c.Queue.AddBackground),
		causes:  newCauses(),
		carried: newCarried(),
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
// at once, in the background, its pending retry dropped, rather than at
// its retry, which a long experiment's backoff may have put minutes away.
// It does nothing once the Loop has stopped.
func (l *Loop) Lift() {
	for _, key := range l.carried.take() {
		l.timers.drop(key)
		if !l.stopped.Load() {
			l.c.Queue.AddBackground(key)
		}
	}
}

// Reconcile runs one pass over key in ctx and settles the key in the
// queue. A pass that does something is a reconcile, which the Recorder is
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
			return
		}
		if l.c.Admit != nil {
			admitted, done, ok := l.c.Admit(ctx, obj)
			if !ok {
				// Another replica's: its timers and backoff are that
				// replica's too.
				l.forget(key)
				return
			}
			defer done()
			ctx = admitted
		}
	}

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

// recordEvent records on obj the Warning Event of a pass over it that
// report says went wrong, when the Config has Events: the object's
// describe then says why it isn't converging without its logs.
func (l *Loop) recordEvent(ctx context.Context, obj ports.Object, step Step, report ports.Report) {
	if l.c.Events == nil {
		return
	}
	r := ports.EventRecord{Type: ports.EventWarning, Action: action(step)}
	switch report.Outcome {
	case ports.OutcomeError, ports.OutcomeTimeout:
		r.Reason, r.Note = ReasonFailed, report.Err.Error()
	case ports.OutcomePanic:
		r.Reason, r.Note = ReasonPanicked, fmt.Sprintf("panic: %v", report.Panic.Value)
	default:
		return
	}
	r.Note = cutNote(r.Note)
	l.c.Events.Record(ctx, obj, r)
}

// action names what a pass of step did, as an Event's action reads:
// Finalize, or Reconcile for every other step, adding the finalizer
// included.
func action(step Step) string {
	if step == StepFinalize {
		return "Finalize"
	}
	return "Reconcile"
}

// cutNote returns note cut to NoteLimit bytes at a UTF-8 character's
// boundary, since a cut character would be encoded longer than it was.
func cutNote(note string) string {
	if len(note) <= NoteLimit {
		return note
	}
	cut := NoteLimit
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut]
}

// settlement is how a pass ends: its report, and when to reconcile the key
// again after a success.
type settlement struct {
	report ports.Report
	after  time.Duration
	// until is when what the pass's Prepare carried stops applying, or
	// zero; see Config.Until.
	until time.Time
	// carried says the pass's Prepare carried something into it; see
	// Config.Carried.
	carried bool
}

func succeeded(after time.Duration) settlement {
	return settlement{report: ports.Report{Outcome: ports.OutcomeSuccess}, after: after}
}

func failed(err error) settlement {
	return settlement{report: ports.Report{Outcome: ports.OutcomeError, Err: err}}
}

func panicked(p *ports.Panic) settlement {
	return settlement{report: ports.Report{Outcome: ports.OutcomePanic, Panic: p}}
}

// timedOut is the settlement of a call of the end user's that ran past
// its deadline: its Err is the deadline's error, joined with what else
// went wrong, when anything did — the error the call returned, which
// tells where it was when its context ended, and a failed status apply.
func timedOut(deadline *DeadlineError, errs ...error) settlement {
	err := error(deadline)
	if others := errors.Join(errs...); others != nil {
		err = errors.Join(deadline, others)
	}
	return settlement{report: ports.Report{Outcome: ports.OutcomeTimeout, Err: err, Timeout: deadline.Timeout}}
}

// pass takes step over obj, and says until when what Prepare carried
// into it applies.
func (l *Loop) pass(ctx context.Context, key ports.Key, obj ports.Object, step Step) settlement {
	if l.c.Prepare != nil {
		prepared, p := prepare(ctx, l.c.Prepare, obj)
		if p != nil {
			return panicked(p)
		}
		ctx = prepared
	}
	s := l.step(ctx, key, obj, step)
	if l.c.Prepare != nil && l.c.Until != nil {
		if until, ok := l.c.Until(ctx); ok {
			s.until = until
		}
	}
	if l.c.Prepare != nil && l.c.Carried != nil {
		s.carried = l.c.Carried(ctx)
	}
	return s
}

// step takes step over obj, in the context Prepare returned.
func (l *Loop) step(ctx context.Context, key ports.Key, obj ports.Object, step Step) settlement {
	switch step {
	case StepAddFinalizer:
		if err := l.c.Writer.ApplyFinalizer(ctx, key, obj.UID, l.c.Finalizer, true); err != nil {
			return failed(fmt.Errorf("adding finalizer %q: %w", l.c.Finalizer, err))
		}
		return succeeded(0)

	case StepFinalize:
		o := l.call(ctx, key, obj, step)
		switch {
		case o.panic != nil:
			// The finalizer stays: the deletion waits for the next pass.
			return panicked(o.panic)
		case o.timedOut != nil:
			// A Finalize that ran out of time failed, whatever it
			// returned: the finalizer stays, and it is retried.
			var err error
			if o.err != nil {
				err = fmt.Errorf("finalize %q: %w", l.c.Finalizer, o.err)
			}
			return timedOut(o.timedOut, err)
		case o.err != nil:
			return failed(fmt.Errorf("finalize %q: %w", l.c.Finalizer, o.err))
		}
		if err := l.c.Writer.ApplyFinalizer(ctx, key, obj.UID, l.c.Finalizer, false); err != nil {
			return failed(fmt.Errorf("removing finalizer %q: %w", l.c.Finalizer, err))
		}
		return succeeded(0)

	default:
		o := l.call(ctx, key, obj, step)
		if o.panic != nil {
			// No Result, so no status: nothing is applied.
			return panicked(o.panic)
		}
		res, err := o.result, o.err
		// The status is applied even when Reconcile failed or ran out of
		// time, so a failure can be a condition and an error at once. It
		// is applied in the pass's context, never the call's, which has
		// expired when the call timed out.
		if res.Status != nil && StatusChanged(obj.Status, res.Status) {
			if aerr := l.c.Writer.ApplyStatus(ctx, key, obj.UID, res.Status); aerr != nil {
				err = errors.Join(err, fmt.Errorf("applying status: %w", aerr))
			}
		}
		if o.timedOut != nil {
			return timedOut(o.timedOut, err)
		}
		if err != nil {
			return failed(err)
		}
		return succeeded(res.After)
	}
}

// settle sets or drops key's timer as s ended its pass: at the retry's
// backoff or the After, or sooner when what the pass's Prepare carried
// stops applying sooner.
func (l *Loop) settle(key ports.Key, s settlement) {
	var ends time.Duration
	if !s.until.IsZero() && s.report.Outcome != ports.OutcomePanic {
		ends = s.until.Sub(l.c.Clock.Now())
	}
	sooner := func(d time.Duration) time.Duration {
		if ends > 0 && (d <= 0 || ends < d) {
			return ends
		}
		return d
	}
	if s.report.Outcome == ports.OutcomeError || s.report.Outcome == ports.OutcomeTimeout {
		l.markCarried(key, s.carried)
		l.timers.set(key, sooner(l.limiter.When(key)))
		return
	}
	l.markCarried(key, false)
	// A success and a panic both end the key's backoff; a panic is never
	// retried, since it would only panic again.
	if d := sooner(s.after); d > 0 {
		l.limiter.Forget(key)
		l.timers.set(key, d)
		return
	}
	l.forget(key)
}

// forget ends key's backoff and drops its timer: nothing queues it again
// but a change or the resync.
func (l *Loop) forget(key ports.Key) {
	l.limiter.Forget(key)
	l.timers.drop(key)
	l.markCarried(key, false)
}

// markCarried keeps key in the set Lift queues again when carried, and drops
// it otherwise. A Loop whose passes carry nothing (no Config.Carried)
// never fills the set, so it takes no lock for it.
func (l *Loop) markCarried(key ports.Key, carried bool) {
	if l.c.Carried != nil {
		l.carried.set(key, carried)
	}
}

// recoverInto, deferred, recovers a panic of the end user's code into *p,
// with the stack it panicked on.
func recoverInto(p **ports.Panic) {
	if v := recover(); v != nil {
		*p = &ports.Panic{Value: v, Stack: debug.Stack()}
	}
}

func prepare(ctx context.Context, f Prepare, obj ports.Object) (prepared context.Context, p *ports.Panic) {
	defer recoverInto(&p)
	if prepared = f(ctx, obj); prepared == nil {
		prepared = ctx
	}
	return prepared, nil
}

// userOutcome is what a call of the end user's code ended with.
type userOutcome struct {
	result ports.Result
	err    error
	panic  *ports.Panic
	// timedOut, when not nil, is the deadline that had cancelled the
	// call's context by the time it returned.
	timedOut *DeadlineError
}

// DeadlineError is the cause of the context of a call of the end user's
// Reconcile or Finalize that ran past Config.Timeout, as context.Cause
// returns it, and the error a timed-out reconcile reports. It wraps
// context.DeadlineExceeded, the context's Err.
type DeadlineError struct {
	// Step is the pass whose call ran out of time: StepReconcile or
	// StepFinalize.
	Step Step
	// Key names the object the call was over.
	Key ports.Key
	// Timeout is the Config's Timeout.
	Timeout time.Duration
}

// Error reads as "reconcile of ns/m timed out after 5m0s: context deadline
// exceeded".
func (e *DeadlineError) Error() string {
	return fmt.Sprintf("%s of %s timed out after %v: %v", e.Step, e.Key, e.Timeout, context.DeadlineExceeded)
}

// Unwrap returns context.DeadlineExceeded.
func (e *DeadlineError) Unwrap() error { return context.DeadlineExceeded }

// call runs the end user's code that step calls, Finalize or Reconcile,
// over obj in ctx, bounded by the Config's Timeout. The call timed out
// when its deadline is what ended its context: a context that ctx's own
// end cancelled first, such as on a lost Lease, has that cause, so such a
// call is no timeout, however long it ran.
func (l *Loop) call(ctx context.Context, key ports.Key, obj ports.Object, step Step) userOutcome {
	var deadline *DeadlineError
	if l.c.Timeout > 0 {
		deadline = &DeadlineError{Step: step, Key: key, Timeout: l.c.Timeout}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, l.c.Timeout, deadline)
		defer cancel()
	}
	var o userOutcome
	if step == StepFinalize {
		o = callFinalize(ctx, l.c.Handler, obj)
	} else {
		o = callReconcile(ctx, l.c.Handler, obj)
	}
	// Read before the deferred cancel, which would end a context that is
	// still alive with a cause of its own.
	if deadline != nil && errors.Is(context.Cause(ctx), deadline) {
		o.timedOut = deadline
	}
	return o
}

func callFinalize(ctx context.Context, h ports.Handler, obj ports.Object) (o userOutcome) {
	defer recoverInto(&o.panic)
	o.err = h.Finalize(ctx, obj)
	return o
}

func callReconcile(ctx context.Context, h ports.Handler, obj ports.Object) (o userOutcome) {
	defer recoverInto(&o.panic)
	o.result, o.err = h.Reconcile(ctx, obj)
	return o
}
