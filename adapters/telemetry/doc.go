// Package telemetry is a controller's OpenTelemetry: it implements
// ports.Recorder, turning each reconcile into a root span, its log records
// and the reconcile.duration histogram; it measures client-go's work queue
// through a workqueue.MetricsProvider of its own; and it hands client-go a
// logr.Logger that writes client-go's records to the LoggerProvider, so
// nothing of what the controller runs reaches the real stderr.
//
// Everything goes through the providers a Config names, under the
// instrumentation scope github.com/loam-dev/loam/kube. The package sets no
// global: not OpenTelemetry's, not klog's, and not client-go's workqueue
// metrics provider.
//
// # The reconcile's span
//
// Every reconcile is a root span named "reconcile <Kind>", of kind
// internal, with these attributes:
//
//   - k8s.namespace.name: the object's namespace, for a namespaced object
//     only;
//   - loam.kube.object.name: the object's name;
//   - loam.kube.controller.reconcile.outcome: how it ended, as on
//     reconcile.duration: success, error, panic or timeout;
//   - loam.kube.controller.reconcile.timeout: on a timeout, the timeout it
//     ran past, such as "5m0s";
//   - loam.kube.controller.related.changes: when changes of related
//     objects, ones the controller watches without owning them, queued
//     the reconcile, each such object as its resource and key, such as
//     "configmaps cache/flags", at most eight;
//   - loam.kube.controller.related.dropped: how many more related changes
//     queued it, beyond those eight, when any did.
//
// It is a root span because nothing that a trace could link to caused it:
// an informer's event carries no trace context. The reconcile's context
// carries it, so the API requests the reconcile makes are its children.
//
// A reconcile that fails, or times out, records its error on the span, as
// an exception event, and sets the span's status to Error. A panic adds an exception
// event with exception.type (the panic value's Go type), exception.message
// and exception.stacktrace (the stack the panic was recovered on), and
// sets the status to Error. A failure scenario that an object's annotation
// carried and the reconcile does not adds the event loam.fit.strip: with
// no attributes for an object that isn't trusted, and with error.type and
// error.message for an annotation that can't be read.
//
// # The records
//
// Each record of a reconcile is emitted in the reconcile span's context,
// so it carries the span's trace and span IDs, and has the attributes
// loam.kube.controller.name, k8s.namespace.name (namespaced objects only)
// and loam.kube.object.name:
//
//   - WARN "reconcile failed", with the error as the record's error and as
//     exception.message, for every reconcile that failed;
//   - WARN "reconcile timed out", with loam.kube.controller.reconcile.timeout
//     and the error as for a failure, for every reconcile whose end user's
//     call returned after its timeout, and then no "reconcile failed";
//   - ERROR "reconcile panicked", with exception.type, exception.message
//     and exception.stacktrace, for every panic, and then no "reconcile
//     failed".
//
// An informer runs the end user's mapping of a related resource, and its
// index functions, outside any reconcile: when one panics, the informer
// recovers, and the record is an ERROR "mapping panicked" with
// loam.kube.controller.name, loam.kube.controller.mapping naming the
// function, the panic's exception.type, exception.message and
// exception.stacktrace, and, when the object it was called with is known,
// loam.kube.related.resource, k8s.namespace.name (namespaced objects only)
// and loam.kube.object.name naming it.
//
// # The instruments
//
// Six instruments, every data point with loam.kube.controller.name (the
// Config's Name, which is the controller's Settings.Name):
//
//   - loam.kube.controller.reconcile.duration (histogram, s): every
//     reconcile, with loam.kube.controller.reconcile.outcome: success,
//     error, panic or timeout;
//   - loam.kube.controller.queue.depth (gauge, {key}): the keys waiting in
//     the work queue;
//   - loam.kube.controller.queue.adds (counter, {key}): every add to the
//     work queue;
//   - loam.kube.controller.queue.duration (histogram, s): how long each key
//     waited in the queue before a worker took it;
//   - loam.kube.controller.reconcile.unfinished_duration (gauge, s): how
//     long the reconciles in flight have run, summed;
//   - loam.kube.controller.reconcile.longest_unfinished_duration (gauge,
//     s): how long the longest reconcile in flight has run.
//
// Both histograms have the boundaries OpenTelemetry advises for a duration
// in seconds: 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1,
// 2.5, 5, 7.5 and 10. The queue records all but reconcile.duration, through
// QueueMetrics, and updates the two gauges every 500ms while it runs. Its
// work duration and its retries aren't recorded: reconcile.duration times
// the same work with its outcome, and the queue counts every AddAfter as a
// retry, while the error and timeout outcomes count the real ones. No data point
// carries an object's name: an object's reconciles are its spans. A
// sharded controller's queue records queue.depth, queue.adds and
// queue.duration itself, through ShardedQueue, with the shard of each
// key's object in loam.kube.controller.shard.
//
// # client-go's records
//
// Logger returns the logr.Logger the controller puts, with klog.NewContext,
// in the context of everything of client-go's it runs: the reflectors, the
// work queue and leader election log through klog.FromContext, and their
// records arrive here. An Info at verbosity 0 is an INFO record, every
// Error an ERROR record; the chattier verbosities, up to the Config's
// Verbosity, are DEBUG records and the rest are dropped.
package telemetry
