package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/loam-dev/loam/ports"
)

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
	return settlement{report: ports.Report{Outcome: ports.OutcomeSuccess, After: after}, after: after}
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
		if res.Status != nil {
			if aerr := l.applyStatus(ctx, key, obj, res.Status); aerr != nil {
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

// applyStatus applies asked, the status the Reconciler returned, to obj,
// unless that would change nothing: when asked is obj's status, compared
// as JSON values, or when obj's status is still what the API server
// answered the latest apply of asked with (see stored). An apply's answer
// that differs from asked is remembered for the next pass; one that
// doesn't, or a failed apply, leaves nothing.
func (l *Loop) applyStatus(ctx context.Context, key ports.Key, obj ports.Object, asked []byte) error {
	c := compareStatuses(obj.Status, asked)
	defer c.release()
	if !c.changed {
		return nil
	}
	if c.cached != nil && l.stored.holds(key, c.next.out, obj.UID, c.cached.out) {
		return nil
	}
	answered, err := l.c.Writer.ApplyStatus(ctx, key, obj.UID, asked)
	if err != nil || answered == nil || c.cached == nil {
		l.stored.forget(key)
		return err
	}
	// The answer in canonical form, in the buffer of the cached status's,
	// which the pass has no more use for.
	c.cached.canonicalize(answered)
	switch {
	case !c.cached.valid:
		l.stored.forget(key)
	case bytes.Equal(c.cached.out, c.next.out):
		// Stored as asked: the next pass finds it equal as it is.
		l.stored.forget(key)
	default:
		l.stored.learn(key, c.next.out, obj.UID, c.cached.out)
	}
	return nil
}
