package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	"github.com/loam-dev/loam/app/fault"
)

// The App's exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitConfig = 78 // EX_CONFIG, from BSD's sysexits.h
)

// overrunWait is how long, once a grace period has passed, the App still
// waits for a Shutdown or hook that honours its context: long enough to
// hear the error it returns, then the App stops waiting for it.
const overrunWait = time.Second

// telemetryTimeout bounds flushing and shutting the telemetry down, which
// happens after the grace period: 20s and 5s fit inside a pod's default
// terminationGracePeriodSeconds of 30s.
const telemetryTimeout = 5 * time.Second

// scopeName is the instrumentation scope of the runtime's own records.
const scopeName = "github.com/loam-dev/loam/app"

// The attributes of the runtime's records.
const (
	attrService    = attribute.Key("loam.app.service")
	attrSignal     = attribute.Key("loam.app.signal")
	attrGrace      = attribute.Key("loam.app.grace_period")
	attrReason     = attribute.Key("loam.app.reason")
	attrExcType    = attribute.Key("exception.type")
	attrExcMessage = attribute.Key("exception.message")
	attrExcStack   = attribute.Key("exception.stacktrace")
)

// Run runs an App and returns its exit code, for a test to check: Main
// without the OS process. It builds a Setup, calls init and serves every
// Service init returns until Run's ctx ends, a signal arrives on the
// Process's Signals, a Serve fails, or every Serve has returned; then it
// cancels every Serve's context and calls every Service's Shutdown within
// the grace period, runs the OnStop hooks, last registered first, and
// flushes and shuts the telemetry down.
//
// The exit code is 0 when everything stopped cleanly; 78 when the options
// are wrong, or init or the telemetry or the failure injector can't be
// built, with the error printed to the Process's stderr; 1 when a Serve,
// a Shutdown or a hook failed or panicked, something overran its time, or
// a second stop request, a signal or the end of ctx after a first one,
// asked the App to exit at once. Run then returns without waiting for
// what is still running, and without flushing telemetry, as a process
// that exits would.
//
// Run reaches nothing outside the process on its own: without WithHost its
// Host refuses every dial, listen and open, and without WithProcess its
// Process has no environment, no arguments, no signals and streams that
// discard what is written.
func Run(ctx context.Context, init Init, opts ...Option) int {
	cfg, err := newRunConfig(opts)
	process := Process{}
	if cfg.process != nil {
		process = *cfg.process
	}
	process = completeProcess(process)
	if init == nil {
		err = errors.Join(err, errors.New("app: Init is nil"))
	}
	if err != nil {
		_, _ = fmt.Fprintln(process.Stderr, err)
		return exitConfig
	}
	host := Host{}
	if cfg.host != nil {
		host = *cfg.host
	}

	telemetry, flush, err := buildTelemetry(ctx, cfg.telemetry, process)
	if err != nil {
		var p *panicError
		if errors.As(err, &p) {
			_, _ = fmt.Fprintf(process.Stderr, "%v\n%s", err, p.stack)
			return exitFailed
		}
		_, _ = fmt.Fprintln(process.Stderr, err)
		return exitConfig
	}

	setup := &Setup{
		Host:      completeHost(host),
		Process:   process,
		Telemetry: telemetry,
		Faults:    fault.Inert(),
		onStop:    &stopHooks{},
	}
	l := &lifecycle{
		setup:   setup,
		logger:  telemetry.LoggerProvider.Logger(scopeName),
		signals: process.Signals,
		done:    ctx.Done(),
		grace:   cfg.gracePeriod,
		cancel:  func() {},
	}
	if cfg.faults != nil {
		setup.Faults, err = fault.New(*cfg.faults)
		if err != nil {
			_, _ = fmt.Fprintln(process.Stderr, err)
			l.logError(ctx, "failure injection failed", err)
			l.code = exitConfig
			if !l.shutdownTelemetry(ctx, flush) {
				return exitFailed
			}
			return l.code
		}
	}
	if !l.run(ctx, init) {
		return exitFailed
	}
	if !l.shutdownTelemetry(ctx, flush) {
		return exitFailed
	}
	return l.code
}

// lifecycle is one run of an App: the state its phases share.
type lifecycle struct {
	setup  *Setup
	logger log.Logger
	grace  time.Duration

	// signals and done deliver stop requests. done is Run's ctx's, and
	// becomes nil once it has delivered its one.
	signals <-chan os.Signal
	done    <-chan struct{}
	// stopRequested records the first stop request: the next one exits at
	// once.
	stopRequested bool
	// cancel cancels init's and every Serve's context.
	cancel context.CancelFunc

	code int
}

// fail records that the App failed, keeping an earlier, more telling code
// such as Init's 78.
func (l *lifecycle) fail() {
	if l.code == exitOK {
		l.code = exitFailed
	}
}

// run calls init, serves its Services, shuts them down and runs the OnStop
// hooks. It returns false when a second stop request asked the App to exit
// at once.
func (l *lifecycle) run(ctx context.Context, init Init) bool {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	l.cancel = cancel

	services, ok := l.init(runCtx, init)
	if !ok {
		return false
	}
	servesLeft := make([]bool, len(services))
	outcomes := make(chan outcome, 2*len(services))
	if len(services) > 0 {
		for i, svc := range services {
			servesLeft[i] = true
			go func() {
				err := recovered(func() error { return svc.Serve(runCtx) })
				outcomes <- outcome{index: i, serve: true, err: err}
			}()
		}
		if !l.serve(runCtx, services, outcomes, servesLeft) {
			return false
		}
	}
	// Whatever ended the serving, every Serve's context ends now.
	cancel()

	graceCtx, cancelGrace := context.WithTimeout(context.WithoutCancel(ctx), l.grace)
	defer cancelGrace()
	waitCtx, cancelWait := context.WithTimeout(context.WithoutCancel(ctx), l.grace+overrunWait)
	defer cancelWait()

	if len(services) > 0 && !l.shutdown(runCtx, graceCtx, waitCtx, services, outcomes, servesLeft) {
		return false
	}
	return l.runStopHooks(graceCtx, waitCtx)
}

// init calls init, and checks what it returned. It returns the Services to
// serve, none when init failed, and false when a second stop request asked
// the App to exit at once.
func (l *lifecycle) init(ctx context.Context, init Init) ([]Service, bool) {
	type result struct {
		services []Service
		err      error
	}
	results := make(chan result, 1)
	go func() {
		var r result
		r.err = recovered(func() error {
			var err error
			r.services, err = init(ctx, l.setup)
			return err
		})
		results <- r
	}()
	for {
		r, w := await(ctx, l, results, nil)
		switch w {
		case exitNow:
			return nil, false
		case stopAsked, timedOut:
			// init's context is cancelled: wait for init to notice. (With
			// no deadline, the wait never times out.)
			continue
		case received:
		}
		if r.err != nil && ctx.Err() != nil && errors.Is(r.err, ctx.Err()) {
			// Asked to stop while init ran, and init stopped: a clean end.
			return nil, true
		}
		if r.err != nil {
			var p *panicError
			if errors.As(r.err, &p) {
				l.logPanic(ctx, "init panicked", p)
				l.fail()
				return nil, true
			}
			_, _ = fmt.Fprintf(l.setup.Process.Stderr, "init: %v\n", r.err)
			l.logError(ctx, "init failed", r.err)
			l.code = exitConfig
			return nil, true
		}
		if i := slices.Index(r.services, nil); i >= 0 {
			err := fmt.Errorf("returned a nil Service at index %d", i)
			_, _ = fmt.Fprintf(l.setup.Process.Stderr, "init: %v\n", err)
			l.logError(ctx, "init failed", err)
			l.fail()
			return nil, true
		}
		return r.services, true
	}
}

// serve waits for the App to begin stopping: a stop request, a Serve's
// failure, or every Serve returning. It returns false when a second stop
// request asked the App to exit at once.
func (l *lifecycle) serve(runCtx context.Context, services []Service, outcomes <-chan outcome, servesLeft []bool) bool {
	if runCtx.Err() != nil {
		// Asked to stop while init ran: go straight to shutting down.
		return true
	}
	left := len(services)
	for {
		o, w := await(runCtx, l, outcomes, nil)
		switch w {
		case exitNow:
			return false
		case stopAsked, timedOut:
			return true
		case received:
		}
		servesLeft[o.index] = false
		left--
		if l.serveFailed(runCtx, services[o.index], o.err) {
			return true
		}
		if left == 0 {
			l.log(runCtx, log.SeverityInfo, "stopping", nil, attrReason.String("every Serve returned"), attrGrace.String(l.grace.String()))
			return true
		}
	}
}

// serveFailed logs a Serve's error and reports whether there was one. A
// Serve that returns its context's own error, once its context has ended,
// has stopped as it was asked to.
func (l *lifecycle) serveFailed(runCtx context.Context, svc Service, err error) bool {
	if err == nil || (runCtx.Err() != nil && errors.Is(err, runCtx.Err())) {
		return false
	}
	var p *panicError
	if errors.As(err, &p) {
		l.logPanic(runCtx, "service panicked", p, attrService.String(serviceName(svc)))
	} else {
		l.logError(runCtx, "service failed", err, attrService.String(serviceName(svc)))
	}
	l.fail()
	return true
}

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

// serviceName names svc in the runtime's records: its String, or its type.
func serviceName(svc Service) string {
	if s, ok := svc.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", svc)
}
