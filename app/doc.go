// Package app is the runtime every loam program runs on. A program's main
// is one call:
//
//	func main() { app.Main(Init) }
//
// Main builds a Setup and calls the program's Init with it. Init sources
// its settings from the Setup's Process, builds its Services, and returns
// them; Main then serves every one until the process is asked to stop, with
// SIGTERM or SIGINT, or until a Service fails, and stops them all within a
// grace period. The process's exit code says how it ended:
//
//   - 0: every Service stopped cleanly, after a signal or because each
//     Serve returned nil; an App with no Services ends right after Init.
//   - 1: a Serve failed or panicked; a Shutdown or an OnStop hook failed,
//     panicked, or overran the grace period; Init panicked; or a second
//     signal asked the App to exit at once.
//   - 78 (EX_CONFIG): Init, the options, the telemetry or the failure
//     injector could not be built. The error, which names every bad
//     setting, is printed to the process's stderr, after "init: " for
//     Init's.
//
// # Stopping
//
// Stopping has one order. Every Serve's context is cancelled, and every
// Service's Shutdown is called at once with a context that ends when the
// grace period (20s, or WithGracePeriod's) has passed. Once every Serve and
// Shutdown has returned, the OnStop hooks run, last registered first, with
// that same context: what Init opened, such as a client's idle
// connections, closes after the Services that used it. Telemetry is
// flushed and shut down last, so the records of everything before it are
// sent. A Serve that panics is recovered, and its stack logged, so the
// other Services still stop cleanly.
//
// # The Setup
//
// The Setup is the App's only way out of its process. Its Host dials,
// listens and opens files; its Process holds the environment, the
// arguments, the standard streams and the signals; its Telemetry holds the
// OpenTelemetry providers every component reports through, never
// OpenTelemetry's globals; its Faults is the failure injector, inert unless
// WithFaults turns it on. Main fills it from the real machine (OSHost) and
// the OS process: it is the only code in loam that does. Run runs an App
// for a test, on the Host and Process the test hands it with WithHost and
// WithProcess, and returns the exit code instead of exiting; apptest builds
// both so an App's test runs inside a testing/synctest bubble.
//
// # Telemetry
//
// Without WithTelemetry, traces and metrics go nowhere and log records are
// written to the Process's stderr, one JSON object a line, with the
// record's time, severity, scope, body and attributes, and its trace and
// span IDs when it was emitted inside a span. The propagator is W3C trace
// context and baggage. The runtime's own records (a failed Init, a failed
// or panicking Service, a Shutdown that overran) are in the scope
// github.com/loam-dev/loam/app and name the Service by its String method,
// or else its type, in the attribute loam.app.service.
//
// WithTelemetry's builder is handed the Process; WithHostTelemetry's is
// handed the Host too, completed before the telemetry is built, so an
// exporter that sends to a collector dials through the Host, as everything
// else the App reaches does.
package app
