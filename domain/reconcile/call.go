package reconcile

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/loam-dev/loam/ports"
)

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
