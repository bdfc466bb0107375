package app

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
)

// waited is how an await ended.
type waited int

const (
	received  waited = iota // the value came
	stopAsked               // the first stop request came first
	exitNow                 // a second stop request came: exit at once
	timedOut                // the deadline passed first
)

// await waits for a value from ch, until deadline, handling the stop
// requests that arrive meanwhile: the first cancels init's and every
// Serve's context, the second asks the App to exit at once. A value and a
// deadline that are ready together yield the value.
func await[T any](ctx context.Context, l *lifecycle, ch <-chan T, deadline <-chan struct{}) (T, waited) {
	var zero T
	for {
		select {
		case v := <-ch:
			return v, received
		case <-deadline:
			select {
			case v := <-ch:
				return v, received
			default:
				return zero, timedOut
			}
		case sig, ok := <-l.signals:
			if !ok {
				// A closed channel delivers no more signals.
				l.signals = nil
				continue
			}
			return zero, l.stopRequest(ctx, attrSignal.String(sig.String()))
		case <-l.done:
			l.done = nil
			return zero, l.stopRequest(ctx, attrReason.String("the context ended"))
		}
	}
}

// stopRequest handles a signal or the end of Run's context: the first
// cancels init's and every Serve's context, the second asks the App to
// exit at once.
func (l *lifecycle) stopRequest(ctx context.Context, why attribute.KeyValue) waited {
	if l.stopRequested {
		l.logError(ctx, "asked again to stop: exiting at once", nil, why)
		return exitNow
	}
	l.stopRequested = true
	l.log(ctx, log.SeverityInfo, "stopping", nil, why, attrGrace.String(l.grace.String()))
	l.cancel()
	return stopAsked
}
