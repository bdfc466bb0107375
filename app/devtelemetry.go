package app

import (
	"context"
	"errors"
	"io"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// DevOption changes what WithDevTelemetry prints, or where.
type DevOption struct {
	apply func(*devConfig)
}

// devConfig is what the DevOptions asked for.
type devConfig struct {
	w io.Writer // nil: the Process's stderr
}

// DevWriter prints to w instead of the Process's stderr. A nil w is the
// Process's stderr. w is written from the goroutines that end spans and
// emit records, one whole line, or one line and its indented
// continuation, at a time, never two at once.
func DevWriter(w io.Writer) DevOption {
	return DevOption{apply: func(c *devConfig) { c.w = w }}
}

// WithDevTelemetry builds the App's Telemetry for a person watching a local
// run, instead of the default's JSON lines: it prints, readably, one line
// for each log record (time, severity, body, attributes, the first 8 hex
// digits of its trace), and one line for each span that is the root of its
// trace — a controller's reconcile, with its object, outcome and duration
// — unless it is a client request's, such as a Lease's renewal, and for
// every span that ended in an error, with the error. A reconcile's records,
// those its Reconciler logs through klog.FromContext(ctx) among them, come
// before its span's line and carry the same trace. An exception's stack is
// printed below its line, indented. A control character in a record's
// text — a newline, a carriage return, a terminal's ESC — is printed as
// its Go escape, so no text logged forges a line or drives the terminal.
//
// It prints to the Process's stderr unless DevWriter says otherwise.
// Metrics are no-ops. Nothing is batched: each line is written as its
// record is emitted or its span ends, so a crash loses none. The library
// turns it on only when the end user passes it, in code; it reads no
// environment variable: the end user's main decides, from a flag of its
// own, say:
//
//	dev := flag.Bool("dev", false, "print logs and reconciles readably")
//	flag.Parse()
//	var opts []app.Option
//	if *dev {
//		opts = append(opts, app.WithDevTelemetry())
//	}
//	app.Main(Init, opts...)
//
// It replaces an earlier WithTelemetry, WithHostTelemetry or
// WithDevTelemetry, and a later one replaces it.
func WithDevTelemetry(opts ...DevOption) Option {
	var c devConfig
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&c)
		}
	}
	return Option{apply: func(rc *runConfig) {
		rc.telemetry = func(_ context.Context, _ Host, p Process) (Telemetry, func(context.Context) error, error) {
			w := c.w
			if w == nil {
				w = p.Stderr
			}
			t, shutdown := devTelemetry(w)
			return t, shutdown, nil
		}
		rc.telemetrySet = "WithDevTelemetry"
	}}
}

// devTelemetry returns the Telemetry of WithDevTelemetry, printing to w,
// and the func that shuts it down. Its providers are built with every
// setting given, as the default's are, so no OpenTelemetry variable of the
// real environment changes what they print.
func devTelemetry(w io.Writer) (Telemetry, func(context.Context) error) {
	p := newDevPrinter(w)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.Empty()),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(devSpans{p}),
	)
	lp := sdklog.NewLoggerProvider(
		sdklog.WithResource(resource.Empty()),
		sdklog.WithAttributeCountLimit(128),
		sdklog.WithAttributeValueLengthLimit(-1),
		sdklog.WithProcessor(devRecords{p}),
	)
	return Telemetry{
		TracerProvider: tp,
		MeterProvider:  metricnoop.NewMeterProvider(),
		LoggerProvider: lp,
		Propagator:     defaultPropagator(),
	}, func(ctx context.Context) error {
		return errors.Join(tp.Shutdown(ctx), lp.Shutdown(ctx))
	}
}
