package apptest

import (
	"context"
	"maps"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/loam-dev/loam/app"
)

// Option configures an App that Start runs. Every HostOption, such as
// WithFiles, is an Option too.
type Option interface {
	applyStart(*startConfig)
}

type startConfig struct {
	host    hostConfig
	onHost  *Host
	env     map[string]string
	args    []string
	appOpts []app.Option
}

type startOption func(*startConfig)

func (f startOption) applyStart(c *startConfig) { f(c) }

// WithHost runs the App on h, a Host the test built and may listen on
// itself, rather than on a new one. WithFiles still writes into it.
func WithHost(h *Host) Option {
	return startOption(func(c *startConfig) { c.onHost = h })
}

// WithEnv sets the App's environment variables: the only ones its
// Process has, since nothing of the real environment reaches it. Several
// WithEnv add up; a later one's value for a name wins.
func WithEnv(env map[string]string) Option {
	env = maps.Clone(env)
	return startOption(func(c *startConfig) {
		if c.env == nil {
			c.env = map[string]string{}
		}
		maps.Copy(c.env, env)
	})
}

// WithArgs appends args to the App's arguments, which have no program
// name.
func WithArgs(args ...string) Option {
	args = append([]string(nil), args...)
	return startOption(func(c *startConfig) { c.args = append(c.args, args...) })
}

// WithAppOptions passes opts on to app.Run, after the options Start sets
// itself, so they win: app.WithHost(app.OSHost()) runs the App on the real
// machine, and app.WithTelemetry replaces the in-memory Telemetry.
func WithAppOptions(opts ...app.Option) Option {
	opts = append([]app.Option(nil), opts...)
	return startOption(func(c *startConfig) { c.appOpts = append(c.appOpts, opts...) })
}

// App is an App that Start runs in a goroutine of the test, as app.Run
// runs it: on a test Host, as a test Process whose environment, arguments
// and signals the test chooses and whose output it reads, and reporting
// to an in-memory Telemetry.
type App struct {
	tb        testing.TB
	host      *Host
	telemetry *Telemetry
	signals   chan os.Signal
	// signalled is set once the test has delivered a signal, so cleanup
	// does not send a second one, which would make the App exit at once.
	signalled atomic.Bool
	stdout    output
	stderr    output

	// initReturned is closed when the App's Init has returned; setup is
	// set before.
	initReturned chan struct{}
	setup        *app.Setup
	// done is closed when app.Run has returned, code set before.
	done chan struct{}
	code int
}

// Start runs init as an App, with app.Run, in a goroutine of its own. The
// App runs on a new test Host (or WithHost's), as a Process with only
// WithEnv's variables and WithArgs's arguments, and reports to a new
// Telemetry. Call Start inside a testing/synctest bubble to run the App on
// the bubble's clock.
//
// When the test ends, the App is sent SIGTERM if it still runs and the
// test has sent it no signal, and the test waits for it to exit; if the
// test failed, the App's stderr and its log records (FormatRecords) are
// logged, so a failure in CI shows what the App said.
func Start(tb testing.TB, init app.Init, opts ...Option) *App {
	tb.Helper()
	var c startConfig
	for _, o := range opts {
		o.applyStart(&c)
	}
	host := c.onHost
	if host == nil {
		host = newHost(tb)
	}
	host.writeFiles(c.host.files)

	a := &App{
		tb:           tb,
		host:         host,
		telemetry:    NewTelemetry(),
		signals:      make(chan os.Signal),
		initReturned: make(chan struct{}),
		done:         make(chan struct{}),
	}
	process := app.Process{
		Environment: Env(c.env),
		Args:        c.args,
		Stdout:      &a.stdout,
		Stderr:      &a.stderr,
		Signals:     a.signals,
	}
	runOpts := append([]app.Option{
		app.WithHost(host.Host()),
		app.WithProcess(process),
		app.WithTelemetry(a.telemetry.Builder()),
	}, c.appOpts...)
	// A nil init stays nil, so app.Run reports it as it would in main,
	// rather than the wrapper's call of it panicking.
	var recorded app.Init
	if init != nil {
		recorded = func(ctx context.Context, s *app.Setup) ([]app.Service, error) {
			a.setup = s
			defer close(a.initReturned)
			return init(ctx, s)
		}
	}

	tb.Cleanup(a.cleanup)
	go func() {
		defer close(a.done)
		a.code = app.Run(context.Background(), recorded, runOpts...)
	}()
	return a
}

// cleanup stops the App, unless the test already signalled it, and waits
// for it to exit.
func (a *App) cleanup() {
	if !a.signalled.Load() {
		a.Signal(syscall.SIGTERM)
	}
	<-a.done
	if a.tb.Failed() {
		a.tb.Logf("apptest: the App exited with %d; its stderr:\n%s", a.code, a.stderr.String())
		if records := a.telemetry.FormatRecords(); records != "" {
			a.tb.Logf("apptest: the App's log records:\n%s", records)
		}
	}
}

// Host returns the Host the App runs on, unless WithAppOptions replaced
// it.
func (a *App) Host() *Host { return a.host }

// Telemetry returns the Telemetry the App reports to, unless
// WithAppOptions replaced it.
func (a *App) Telemetry() *Telemetry { return a.telemetry }

// Setup waits for the App's Init to return, so whatever Init set up, such
// as a listener, is there, and returns the Setup Init was given. If the
// App exits without calling Init, the test fails.
func (a *App) Setup() *app.Setup {
	a.tb.Helper()
	select {
	case <-a.initReturned:
		return a.setup
	case <-a.done:
	}
	select {
	case <-a.initReturned:
		return a.setup
	default:
		a.tb.Fatalf("apptest: the App exited with %d before calling its Init; its stderr:\n%s", a.code, a.stderr.String())
		return nil
	}
}

// Signal delivers sig to the App through its Process, waiting until the
// App takes it. It does nothing once the App has exited.
func (a *App) Signal(sig os.Signal) {
	select {
	case a.signals <- sig:
		a.signalled.Store(true)
	case <-a.done:
	}
}

// Stop sends the App SIGTERM and returns its exit code once it has
// exited.
func (a *App) Stop() int {
	a.Signal(syscall.SIGTERM)
	return a.Wait()
}

// Wait waits for the App to exit and returns its exit code.
func (a *App) Wait() int {
	<-a.done
	return a.code
}

// Done is closed when the App has exited.
func (a *App) Done() <-chan struct{} { return a.done }

// Stdout returns what the App has written to its standard output.
func (a *App) Stdout() string { return a.stdout.String() }

// Stderr returns what the App has written to its standard error.
func (a *App) Stderr() string { return a.stderr.String() }
