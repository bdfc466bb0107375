package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/loam-dev/loam/app/fault"
)

// DefaultGracePeriod is how long Services and OnStop hooks have to stop
// once the App begins stopping, unless WithGracePeriod says otherwise. It
// fits inside a pod's default terminationGracePeriodSeconds of 30s, with
// room left to flush telemetry.
const DefaultGracePeriod = 20 * time.Second

// TelemetryBuilder builds an App's telemetry from its Process, so the end
// user names the service and picks the exporters, reading their settings
// from the Process's environment. The returned func flushes and shuts the
// providers down; the App calls it last, after every Service and OnStop
// hook. It may be nil when there is nothing to flush. A nil field of the
// returned Telemetry is filled with a no-op provider, and a nil Propagator
// with W3C trace context and baggage. An error fails the App with exit
// code 78.
type TelemetryBuilder func(ctx context.Context, p Process) (Telemetry, func(context.Context) error, error)

// HostTelemetryBuilder builds an App's telemetry as a TelemetryBuilder
// does, and is handed the App's Host too, so exporters that send telemetry
// over the network dial through the Host's Network rather than the real
// one. The Host is the one the App's Setup gets: WithHost's, or the
// default, with its missing parts refusing every call. Its returns mean
// what a TelemetryBuilder's do.
type HostTelemetryBuilder func(ctx context.Context, h Host, p Process) (Telemetry, func(context.Context) error, error)

// Option changes how Main or Run runs an App.
type Option struct {
	apply func(*runConfig)
}

// runConfig is what the Options asked for.
type runConfig struct {
	host         *Host
	process      *Process
	telemetry    HostTelemetryBuilder
	telemetrySet string // the option that set telemetry, "" for none
	gracePeriod  time.Duration
	faults       *fault.Settings
}

// WithHost runs the App on h instead of the default Host: the real machine
// for Main, and a Host that refuses every dial, listen and open for Run. A
// nil Network or FS in h refuses its calls with an error naming the Host's
// missing part.
func WithHost(h Host) Option {
	return Option{apply: func(c *runConfig) { c.host = &h }}
}

// WithProcess runs the App as p instead of the default Process: the OS
// process for Main, and an empty one for Run. A nil Environment in p has
// no variables, a nil Stdout or Stderr discards what is written, and a nil
// Signals delivers none. apptest runs an App on a test's Process with it.
func WithProcess(p Process) Option {
	return Option{apply: func(c *runConfig) { c.process = &p }}
}

// WithTelemetry builds the App's Telemetry with b instead of the default:
// no-op traces and metrics, and log records written to the Process's
// stderr as one JSON object a line. A nil b fails the App with exit code
// 78. It replaces an earlier WithTelemetry or WithHostTelemetry.
func WithTelemetry(b TelemetryBuilder) Option {
	return Option{apply: func(c *runConfig) {
		c.telemetry = nil
		if b != nil {
			c.telemetry = func(ctx context.Context, _ Host, p Process) (Telemetry, func(context.Context) error, error) {
				return b(ctx, p)
			}
		}
		c.telemetrySet = "WithTelemetry"
	}}
}

// WithHostTelemetry builds the App's Telemetry with b, as WithTelemetry
// does, handing b the App's Host as well as its Process: an exporter that
// sends telemetry to a collector dials through the Host. It replaces an
// earlier WithTelemetry or WithHostTelemetry. A nil b fails the App with
// exit code 78.
func WithHostTelemetry(b HostTelemetryBuilder) Option {
	return Option{apply: func(c *runConfig) {
		c.telemetry = b
		c.telemetrySet = "WithHostTelemetry"
	}}
}

// WithGracePeriod sets how long the App's Services and OnStop hooks have
// to stop, from the moment it begins stopping: each Shutdown's context,
// and the hooks', ends when it passes. The default is DefaultGracePeriod.
// A negative d fails the App with exit code 78; zero gives them none.
func WithGracePeriod(d time.Duration) Option {
	return Option{apply: func(c *runConfig) { c.gracePeriod = d }}
}

// WithFaults turns failure injection on: the Setup's Faults is the
// injector fault.New builds from s, rather than an inert one. An error from
// fault.New fails the App with exit code 78.
func WithFaults(s fault.Settings) Option {
	return Option{apply: func(c *runConfig) { c.faults = &s }}
}

// newRunConfig applies opts over the defaults. Its error names every bad
// option.
func newRunConfig(opts []Option) (runConfig, error) {
	c := runConfig{gracePeriod: DefaultGracePeriod}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&c)
		}
	}
	var errs []error
	if c.gracePeriod < 0 {
		errs = append(errs, fmt.Errorf("app: WithGracePeriod: %v is negative", c.gracePeriod))
	}
	if c.telemetrySet != "" && c.telemetry == nil {
		errs = append(errs, fmt.Errorf("app: %s: the builder is nil", c.telemetrySet))
	}
	return c, errors.Join(errs...)
}
