package app

import (
	"context"
	"io"
	"io/fs"
	"net"
	"os"

	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/app/fault"
)

// Setup is everything an App's Init may use to reach outside its own
// process: the Host's network and files, the Process's environment and
// streams, the Telemetry providers and the failure injector. Nothing in
// loam reaches the real environment, disk or network except through it.
type Setup struct {
	// Host is the machine the App runs on: its network and its files.
	Host Host
	// Process is the App's own process: its environment, arguments,
	// standard streams and signals.
	Process Process
	// Telemetry holds the providers every component reports through. It
	// never falls back to OpenTelemetry's globals.
	Telemetry Telemetry
	// Faults is the App's failure injector. It is inert, evaluating every
	// point to the zero Fault, unless the App runs with WithFaults.
	Faults *fault.Injector

	onStop *stopHooks
	shared *sharedValues
}

// Network dials and listens on the Host's network.
type Network interface {
	// Dial connects to address on the named network, as net.Dialer's
	// DialContext does.
	Dial(ctx context.Context, network, address string) (net.Conn, error)
	// Listen announces on the local address, as net.ListenConfig's Listen
	// does.
	Listen(ctx context.Context, network, address string) (net.Listener, error)
}

// FS opens files by the Host's own paths, such as
// /var/run/secrets/kubernetes.io/serviceaccount/token. Unlike io/fs, a name
// is an operating-system path, absolute or relative to the working
// directory.
type FS interface {
	// Open opens the named file for reading.
	Open(name string) (fs.File, error)
}

// Host is the machine an App runs on. Its Network is promoted, so
// s.Host.Dial and s.Host.Listen reach it, and its FS reads its files.
// OSHost returns the real one; apptest builds one a test owns.
type Host struct {
	Network
	// FS reads the Host's files.
	FS FS
}

// Environment looks up the Process's environment variables.
type Environment interface {
	// LookupEnv returns the variable's value and whether it is set.
	LookupEnv(name string) (value string, ok bool)
}

// EnvironmentLister is an Environment that can also name every variable
// it holds, so a reader that owns a prefix, such as OTEL_, can report the
// variables under it that it doesn't support rather than ignore them. The
// Environments of Main's Process, of Run's default one and of apptest's
// Env are EnvironmentListers.
type EnvironmentLister interface {
	Environment
	// Names returns the name of every variable that is set, in no
	// particular order.
	Names() []string
}

// Process is the App's process as the App sees it: never os.Getenv,
// os.Args or os.Stderr directly, so a test can hand an App a process of
// its own.
type Process struct {
	// Environment holds the process's environment variables.
	Environment Environment
	// Args are the process's arguments, without the program's name.
	Args []string
	// Stdout and Stderr are the process's standard output and error.
	Stdout, Stderr io.Writer
	// Signals delivers the signals that ask the App to stop, such as
	// SIGTERM and SIGINT. A nil channel delivers none.
	Signals <-chan os.Signal
}

// Telemetry holds the OpenTelemetry providers and propagator an App
// reports through. Every field is set in a Setup that Main or Run builds:
// a Builder's nil field is filled with a no-op provider.
type Telemetry struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	LoggerProvider log.LoggerProvider
	Propagator     propagation.TextMapPropagator
	// MetricNames are the names the kube package's controllers, Client
	// and leader election record their metrics under, on MeterProvider:
	// MetricNamesLoam, the default, or MetricNamesControllerRuntime.
	MetricNames MetricNames
}
