package app

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.opentelemetry.io/otel/attribute"
)

// shutdown calls every Service's Shutdown with graceCtx and waits, until
// waitCtx ends, for each Shutdown and each Serve still running to return.
// It returns false when a second stop request asked the App to exit at
// once.
func (l *lifecycle) shutdown(runCtx, graceCtx, waitCtx context.Context, services []Service, outcomes chan outcome, servesLeft []bool) bool {
	shutdownsLeft := make([]bool, len(services))
	for i, svc := range services {
		shutdownsLeft[i] = true
		go func() {
			outcomes <- call(graceCtx, i, svc.Shutdown)
		}()
	}
	left := len(services)
	for _, s := range servesLeft {
		if s {
			left++
		}
	}
	for left > 0 {
		o, w := await(waitCtx, l, outcomes, waitCtx.Done())
		switch w {
		case exitNow:
			return false
		case stopAsked:
			continue
		case received:
		case timedOut:
			l.reportStuck(waitCtx, services, servesLeft, shutdownsLeft)
			return true
		}
		left--
		svc := services[o.index]
		if o.serve {
			servesLeft[o.index] = false
			l.serveFailed(runCtx, svc, o.err)
			continue
		}
		shutdownsLeft[o.index] = false
		l.shutdownFailed(waitCtx, svc, o)
	}
	return true
}

// shutdownFailed logs a Shutdown's error, or that it returned after the
// grace period.
func (l *lifecycle) shutdownFailed(ctx context.Context, svc Service, o outcome) {
	name := attrService.String(serviceName(svc))
	var p *panicError
	switch {
	case errors.As(o.err, &p):
		l.logPanic(ctx, "shutdown panicked", p, name)
	case o.err != nil:
		l.logError(ctx, "shutdown failed", o.err, name)
	case o.late:
		l.logError(ctx, "shutdown overran the grace period", context.DeadlineExceeded, name, attrGrace.String(l.grace.String()))
	default:
		return
	}
	l.fail()
}

// reportStuck logs every Serve and Shutdown that has not returned by the
// end of the grace period. The App stops waiting for them.
func (l *lifecycle) reportStuck(ctx context.Context, services []Service, servesLeft, shutdownsLeft []bool) {
	for i, svc := range services {
		name := attrService.String(serviceName(svc))
		if servesLeft[i] {
			l.logError(ctx, "serve did not return within the grace period", context.DeadlineExceeded, name, attrGrace.String(l.grace.String()))
		}
		if shutdownsLeft[i] {
			l.logError(ctx, "shutdown did not return within the grace period", context.DeadlineExceeded, name, attrGrace.String(l.grace.String()))
		}
	}
	l.fail()
}

// runStopHooks runs the OnStop hooks, last registered first, each with
// graceCtx, waiting for each until waitCtx ends. It returns false when a
// second stop request asked the App to exit at once.
func (l *lifecycle) runStopHooks(graceCtx, waitCtx context.Context) bool {
	hooks := l.setup.onStop.registered()
	for i, hook := range slices.Backward(hooks) {
		if hook == nil {
			hook = func(context.Context) error { return errors.New("app: OnStop was given a nil func") }
		}
		done := make(chan outcome, 1)
		go func() { done <- call(graceCtx, i, hook) }()
		o, w := l.awaitHook(waitCtx, done)
		index := attribute.Int("loam.app.stop_hook", i)
		var p *panicError
		switch {
		case w == exitNow:
			return false
		case w == timedOut:
			l.logError(waitCtx, "stop hook did not return within the grace period", context.DeadlineExceeded, index, attrGrace.String(l.grace.String()))
		case errors.As(o.err, &p):
			l.logPanic(waitCtx, "stop hook panicked", p, index)
		case o.err != nil:
			l.logError(waitCtx, "stop hook failed", o.err, index)
		case o.late:
			l.logError(waitCtx, "stop hook overran the grace period", context.DeadlineExceeded, index, attrGrace.String(l.grace.String()))
		default:
			continue
		}
		l.fail()
	}
	return true
}

// awaitHook waits for a hook until waitCtx ends or, for a hook that
// starts after it ended, for overrunWait: every hook runs, and one that
// honours its expired context is heard.
func (l *lifecycle) awaitHook(waitCtx context.Context, done <-chan outcome) (outcome, waited) {
	if waitCtx.Err() != nil {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(context.WithoutCancel(waitCtx), overrunWait)
		defer cancel()
	}
	for {
		o, w := await(waitCtx, l, done, waitCtx.Done())
		if w != stopAsked {
			return o, w
		}
	}
}

// shutdownTelemetry flushes and shuts the telemetry down, last, within
// telemetryTimeout. Nothing is left to log through, so its error goes to
// the Process's stderr. It returns false when a second stop request asked
// the App to exit at once.
func (l *lifecycle) shutdownTelemetry(ctx context.Context, flush func(context.Context) error) bool {
	if flush == nil {
		return true
	}
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), telemetryTimeout)
	defer cancel()
	waitCtx, cancelWait := context.WithTimeout(context.WithoutCancel(ctx), telemetryTimeout+overrunWait)
	defer cancelWait()
	done := make(chan error, 1)
	go func() { done <- recovered(func() error { return flush(flushCtx) }) }()
	err, w := error(nil), stopAsked
	for w == stopAsked {
		err, w = await(waitCtx, l, done, waitCtx.Done())
	}
	switch w {
	case exitNow:
		return false
	case timedOut:
		err = fmt.Errorf("did not return within %v: %w", telemetryTimeout, context.DeadlineExceeded)
	}
	if err != nil {
		_, _ = fmt.Fprintf(l.setup.Process.Stderr, "telemetry: shutdown: %v\n", err)
		l.fail()
	}
	return true
}

// outcome is how a Serve, a Shutdown or a stop hook returned.
type outcome struct {
	index int
	serve bool
	err   error
	// late is set when it returned after the grace period ended, having
	// started before it did.
	late bool
}

// call calls f with graceCtx, recovering a panic, and tells whether f
// overran the grace period.
func call(graceCtx context.Context, index int, f func(context.Context) error) outcome {
	startedLate := graceCtx.Err() != nil
	err := recovered(func() error { return f(graceCtx) })
	return outcome{index: index, err: err, late: !startedLate && graceCtx.Err() != nil}
}
