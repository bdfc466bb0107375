package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"

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

// faultScopeName is the scope of the records of the App's failure
// injector.
const faultScopeName = "github.com/loam-dev/loam/app/fault"

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
	// The Host is complete before the telemetry is built, so a
	// HostTelemetryBuilder's exporters dial through the Host the Setup
	// gets.
	host = completeHost(host)

	telemetry, flush, err := buildTelemetry(ctx, cfg.telemetry, host, process)
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
		Host:      host,
		Process:   process,
		Telemetry: telemetry,
		Faults:    fault.Inert(),
		onStop:    &stopHooks{},
		shared:    &sharedValues{},
	}
	l := &lifecycle{
		setup:   setup,
		logger:  telemetry.LoggerProvider.Logger(scopeName),
		signals: process.Signals,
		done:    ctx.Done(),
		grace:   cfg.gracePeriod,
		cancel:  func() {},
	}
	stopSwitch := func() {}
	if cfg.faults != nil {
		fs := *cfg.faults
		if fs.Logger == nil {
			// Each injected fault leaves a record, whether or not its
			// trace is sampled.
			fs.Logger = telemetry.LoggerProvider.Logger(faultScopeName)
		}
		setup.Faults, err = fault.New(fs)
		if err != nil {
			_, _ = fmt.Fprintln(process.Stderr, err)
			l.logError(ctx, "failure injection failed", err)
			l.code = exitConfig
			if !l.shutdownTelemetry(ctx, flush) {
				return exitFailed
			}
			return l.code
		}
		if fs.Switch != "" {
			sw := &faultSwitch{sw: fault.NewSwitch(setup.Faults, l.logger, fault.SwitchKey.String(fs.Switch)), fs: host.FS, path: fs.Switch}
			// Read before Init, so the App starts as the switch says.
			sw.read(ctx)
			stopSwitch = sw.start(ctx)
		}
	}
	ran := l.run(ctx, init)
	stopSwitch()
	if !ran {
		return exitFailed
	}
	if !l.shutdownTelemetry(ctx, flush) {
		return exitFailed
	}
	return l.code
}
