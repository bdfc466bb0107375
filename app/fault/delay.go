package fault

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/app/fault/fit"
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
//
// A delay never outlives its experiment: when failure injection is turned
// off (SetOn), or the scenario reaches its end (fit.Scenario.Ends, on the
// Settings' clock), while the delay runs, the delay ends there and Inject
// returns nil, its abort or status not carried out, so the call goes on
// unfaulted. The span in ctx gets loam.fit.lifted and the Logger an INFO
// record, LiftedBody, saying why.
func (i *Injector) Inject(ctx context.Context, point string) error {
	f, s := i.eval(ctx, point)
	if f.Delay > 0 {
		reason, err := i.wait(ctx, point, f, s)
		if err != nil {
			return err
		}
		if reason != "" {
			return nil
		}
	}
	if f.Fails() {
		return &InjectedError{Point: point, Fault: f, Experiment: s.ID}
	}
	return nil
}

// wait waits f's delay, which point met in ctx under s. It returns ""
// once the delay is over; the reason, having recorded it, when failure
// injection is turned off or s ends first; and an *InjectedError that
// wraps ctx's cause when ctx is done first.
func (i *Injector) wait(ctx context.Context, point string, f fit.Fault, s fit.Scenario) (string, error) {
	// Read after eval, so a switch turned off since eval read it is seen
	// here: its channel is closed.
	lifted := *i.lifted.Load()
	start := time.Now()
	delay := time.NewTimer(f.Delay)
	defer delay.Stop()
	// The Settings' clock says how much of the scenario is left, since
	// its end is a time on that clock; the wait itself is real time, as
	// the delay's is, because a Settings clock only reads the time.
	var ends <-chan time.Time
	if !s.Ends.IsZero() {
		if left := s.Ends.Sub(i.now()); left < f.Delay {
			t := time.NewTimer(left)
			defer t.Stop()
			ends = t.C
		}
	}
	var reason string
	select {
	case <-delay.C:
		return "", nil
	case <-ctx.Done():
		return "", &InjectedError{Point: point, Fault: f, Cause: context.Cause(ctx), Experiment: s.ID}
	case <-lifted:
		reason = LiftedOff
	case <-ends:
		reason = LiftedExpired
	}
	i.lift(ctx, point, f, s.ID, reason, time.Since(start))
	return reason, nil
}

// lift records a delay that failure injection's end cut short, for
// reason, after it had lasted waited.
func (i *Injector) lift(ctx context.Context, point string, f fit.Fault, id, reason string, waited time.Duration) {
	attrs := withExperiment([]attribute.KeyValue{
		PointKey.String(point), DelayKey.Float64(f.Delay.Seconds()),
		WaitedKey.Float64(waited.Seconds()), ReasonKey.String(reason),
	}, id)
	trace.SpanFromContext(ctx).AddEvent(LiftedEvent, trace.WithAttributes(attrs...))
	if i.logger == nil {
		return
	}
	var r log.Record
	r.SetTimestamp(i.now())
	r.SetSeverity(log.SeverityInfo)
	r.SetSeverityText(log.SeverityInfo.String())
	r.SetBody(attribute.StringValue(LiftedBody))
	r.AddAttributes(attrs...)
	i.logger.Emit(ctx, r)
}
