package fault

import (
	"context"
	"time"
)

// Inject evaluates point in ctx, as Eval does, and carries out the Fault it
// meets. A delay is waited first, inside ctx: when ctx is done before the
// delay is over, Inject returns at once with an *InjectedError that wraps
// ctx's cause, so errors.Is finds context.DeadlineExceeded or
// context.Canceled in it. Then an abort or a status returns an
// *InjectedError, and the caller goes no further: an abort is a call that
// never reached its dependency, and a status one its dependency refused.
// A caller that answers for its dependency reads the status from the
// error's Fault (package transport answers as the API server would);
// any other fails the call with the error. The zero Fault returns nil at
// once.
func (i *Injector) Inject(ctx context.Context, point string) error {
	f, id := i.eval(ctx, point)
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return &InjectedError{Point: point, Fault: f, Cause: context.Cause(ctx), Experiment: id}
		}
	}
	if f.Fails() {
		return &InjectedError{Point: point, Fault: f, Experiment: id}
	}
	return nil
}
