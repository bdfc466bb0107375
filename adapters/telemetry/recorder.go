package telemetry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/domain/settings"
	"github.com/loam-dev/loam/ports"
)

// The names of the controller's six instruments.
const (
	ReconcileDurationName         = "loam.kube.controller.reconcile.duration"
	QueueDepthName                = "loam.kube.controller.queue.depth"
	QueueAddsName                 = "loam.kube.controller.queue.adds"
	QueueDurationName             = "loam.kube.controller.queue.duration"
	UnfinishedDurationName        = "loam.kube.controller.reconcile.unfinished_duration"
	LongestUnfinishedDurationName = "loam.kube.controller.reconcile.longest_unfinished_duration"
)

const (
	unitSeconds = "s"
	unitKeys    = "{key}"

	reconcileSpanPrefix   = "reconcile "
	reconcileFailedBody   = "reconcile failed"
	reconcileTimedOutBody = "reconcile timed out"
	reconcilePanickedBody = "reconcile panicked"
	mappingPanickedBody   = "mapping panicked"
	unfencedBody          = "leadership is not fenced"
	shardAcquiredBody     = "shard acquired"
	shardReleasedBody     = "shard released"
	shardLostBody         = "shard lost"
	handOffStuckBody      = "reconcile stuck in a hand-off"
	exceptionEventName    = "exception"
)

// The attributes a Recorder sets.
const (
	// ControllerNameKey is on every data point, every reconcile's record,
	// and every record of client-go's: the controller's Settings.Name.
	ControllerNameKey = attribute.Key("loam.kube.controller.name")
	// OutcomeKey is on reconcile.duration's data points and every
	// reconcile span: success, error, panic or timeout.
	OutcomeKey = attribute.Key("loam.kube.controller.reconcile.outcome")
	// TimeoutKey is on the span and the record of a reconcile that timed
	// out: the timeout it ran past, as a Go duration reads, such as "5m0s".
	TimeoutKey = attribute.Key("loam.kube.controller.reconcile.timeout")
	// NamespaceKey is on a namespaced object's reconcile span and records,
	// and on the record of a mapping that panicked over a namespaced
	// related object.
	NamespaceKey = attribute.Key("k8s.namespace.name")
	// ObjectNameKey is on every reconcile span and record, and on the
	// record of a mapping that panicked over a related object it knows.
	ObjectNameKey = attribute.Key("loam.kube.object.name")
	// RelatedChangesKey is on the span of a reconcile that related changes
	// queued: each related object, as ports.Cause's String reads, at most
	// reconcile.MaxCauses of them.
	RelatedChangesKey = attribute.Key("loam.kube.controller.related.changes")
	// RelatedDroppedKey is on the span of a reconcile that more related
	// changes queued than RelatedChangesKey holds: how many more.
	RelatedDroppedKey = attribute.Key("loam.kube.controller.related.dropped")
	// MappingKey is on the record of a mapping that panicked: the end
	// user's function it was, such as "the mapping of configmaps".
	MappingKey = attribute.Key("loam.kube.controller.mapping")
	// RelatedResourceKey is on the record of a mapping that panicked over a
	// related object it knows: the object's resource, with ObjectNameKey
	// and NamespaceKey naming the object.
	RelatedResourceKey = attribute.Key("loam.kube.related.resource")
	// ShardKey is on the reconcile span of a sharded controller's object,
	// and on the records of the shards a replica acquires, releases and
	// loses: the shard's number, from 0.
	ShardKey = attribute.Key("loam.kube.controller.shard")
	// ShardsKey is on the records of the shards a replica acquires,
	// releases and loses: the controller's number of shards.
	ShardsKey = attribute.Key("loam.kube.controller.shards")

	exceptionTypeKey    = attribute.Key("exception.type")
	exceptionMessageKey = attribute.Key("exception.message")
	exceptionStackKey   = attribute.Key("exception.stacktrace")
	errorTypeKey        = attribute.Key("error.type")
	errorMessageKey     = attribute.Key("error.message")
	leaseDurationKey    = attribute.Key("loam.kube.leader_election.lease_duration")
	renewDeadlineKey    = attribute.Key("loam.kube.leader_election.renew_deadline")
	retryPeriodKey      = attribute.Key("loam.kube.leader_election.retry_period")
	runningKey          = attribute.Key("loam.kube.controller.reconcile.running")
)

// DurationBoundaries returns both histograms' bucket boundaries, in
// seconds: OpenTelemetry's advice for a duration. Each call returns a new
// slice.
func DurationBoundaries() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
}

// Config is what a Recorder reports through, and for which controller.
type Config struct {
	// Name is the controller's Settings.Name: the value of
	// loam.kube.controller.name.
	Name string
	// Kind is the kind the controller reconciles, such as Memcached: its
	// spans are named "reconcile <Kind>".
	Kind string
	// TracerProvider, MeterProvider and LoggerProvider are the Setup's
	// providers.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	LoggerProvider log.LoggerProvider
	// Verbosity is the highest logr verbosity Logger records. At 0, the
	// default, only V(0) is recorded: client-go's V(1) and above, which
	// log every watch and every sync, are dropped.
	Verbosity int
	// ControllerRuntime, when set, records controller-runtime's
	// instruments too, beside loam's own, where loam measures the same
	// thing: the CR…Name constants, with controller-runtime's labels and
	// buckets, so that its dashboards and alerts read a loam controller.
	ControllerRuntime bool
	// Workers is the controller's Settings.Workers: the value of
	// controller_runtime_max_concurrent_reconciles, recorded with
	// ControllerRuntime only.
	Workers int
}

// Recorder reports a controller's reconciles, work queue and client-go's
// records through OpenTelemetry. It implements ports.Recorder, and is safe
// for concurrent use by the controller's workers.
type Recorder struct {
	spanName  string
	name      attribute.KeyValue
	verbosity int
	tracer    trace.Tracer
	logger    log.Logger

	reconcileDuration metric.Float64Histogram
	// outcomes holds reconcile.duration's attributes for each known
	// outcome, so a reconcile allocates none.
	outcomes map[ports.Outcome][]metric.RecordOption

	queue queueInstruments
	// cr is controller-runtime's instruments, nil without
	// Config.ControllerRuntime.
	cr *crInstruments
	// shards are a sharded controller's instruments of the shards its
	// replica holds.
	shards *shardInstruments
}

var _ ports.Recorder = (*Recorder)(nil)

// NewRecorder returns a Recorder reporting through c's providers. It fails,
// naming every mistake at once, when c has no Name or Kind, when a
// provider is nil — a controller always has the Setup's, no-ops at the
// least, so a nil one is a wiring mistake rather than a wish for silence —
// or when Verbosity is negative.
func NewRecorder(c Config) (*Recorder, error) {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("telemetry: Config.Name is empty"))
	}
	if c.Kind == "" {
		errs = append(errs, errors.New("telemetry: Config.Kind is empty"))
	}
	if c.TracerProvider == nil {
		errs = append(errs, errors.New("telemetry: Config.TracerProvider is nil"))
	}
	if c.MeterProvider == nil {
		errs = append(errs, errors.New("telemetry: Config.MeterProvider is nil"))
	}
	if c.LoggerProvider == nil {
		errs = append(errs, errors.New("telemetry: Config.LoggerProvider is nil"))
	}
	if c.Verbosity < 0 {
		errs = append(errs, fmt.Errorf("telemetry: Config.Verbosity is %d, below 0", c.Verbosity))
	}
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("telemetry: Config.Workers is %d, below 0", c.Workers))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	r := &Recorder{
		spanName:  reconcileSpanPrefix + c.Kind,
		name:      ControllerNameKey.String(c.Name),
		verbosity: c.Verbosity,
		tracer:    c.TracerProvider.Tracer(ports.ScopeName),
		logger:    c.LoggerProvider.Logger(ports.ScopeName),
		outcomes:  make(map[ports.Outcome][]metric.RecordOption, 4),
	}
	meter := c.MeterProvider.Meter(ports.ScopeName)
	var err error
	r.reconcileDuration, err = meter.Float64Histogram(ReconcileDurationName,
		metric.WithUnit(unitSeconds),
		metric.WithDescription("How long each reconcile took, by outcome."),
		metric.WithExplicitBucketBoundaries(DurationBoundaries()...))
	if err != nil {
		return nil, fmt.Errorf("telemetry: instrument %s: %w", ReconcileDurationName, err)
	}
	for _, o := range []ports.Outcome{ports.OutcomeSuccess, ports.OutcomeError, ports.OutcomePanic, ports.OutcomeTimeout} {
		r.outcomes[o] = r.outcomeAttributes(o)
	}
	if r.queue, err = newQueueInstruments(meter, r.name); err != nil {
		return nil, err
	}
	if r.shards, err = newShardInstruments(meter, r.name); err != nil {
		return nil, err
	}
	if c.ControllerRuntime {
		if r.cr, err = newCRInstruments(meter, c.Name, c.Workers); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Recorder) outcomeAttributes(o ports.Outcome) []metric.RecordOption {
	return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(r.name, OutcomeKey.String(o.String())))}
}

// objectAttributes are the attributes naming key's object.
func objectAttributes(key ports.Key) []attribute.KeyValue {
	if key.Namespace == "" {
		return []attribute.KeyValue{ObjectNameKey.String(key.Name)}
	}
	return []attribute.KeyValue{NamespaceKey.String(key.Namespace), ObjectNameKey.String(key.Name)}
}

// ReconcileStarted starts the reconcile's root span and returns ctx
// carrying it, and carrying, for klog.FromContext and logr.FromContext,
// the reconcile's logger: Logger's, with k8s.namespace.name (namespaced
// objects only) and loam.kube.object.name on every record, each record in
// the span's context. The span keeps nothing of a span ctx may already
// carry.
func (r *Recorder) ReconcileStarted(ctx context.Context, key ports.Key) context.Context {
	attrs := objectAttributes(key)
	if s, ok := ports.ShardFromContext(ctx); ok {
		attrs = append(attrs, ShardKey.Int(s))
	}
	ctx, span := r.tracer.Start(ctx, r.spanName,
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrs...))
	ctx = logr.NewContext(ctx, r.reconcileLogger(key, span.SpanContext()))
	r.cr.started(ctx)
	return ctx
}

// ReconcileCaused sets, on the reconcile's span in ctx, the related objects
// whose changes queued it, and how many more changes were dropped when
// there were any. A span that isn't recording gets nothing, so an
// unsampled reconcile spells out no cause.
func (r *Recorder) ReconcileCaused(ctx context.Context, causes []ports.Cause, dropped int) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	changes := make([]string, len(causes))
	for i, c := range causes {
		changes[i] = c.String()
	}
	span.SetAttributes(RelatedChangesKey.StringSlice(changes))
	if dropped > 0 {
		span.SetAttributes(RelatedDroppedKey.Int(dropped))
	}
}

// ScenarioStripped adds the event loam.fit.strip to the reconcile's span
// in ctx: with no attributes when err is nil, an object that isn't
// trusted, and with error.type and error.message when err says why the
// annotation couldn't be read.
func (r *Recorder) ScenarioStripped(ctx context.Context, err error) {
	span := trace.SpanFromContext(ctx)
	if err == nil {
		span.AddEvent(fault.StripEvent)
		return
	}
	span.AddEvent(fault.StripEvent, trace.WithAttributes(
		errorTypeKey.String(fault.ErrorType(err)),
		errorMessageKey.String(err.Error()),
	))
}

// ReconcileEnded records how the reconcile in ctx ended: on its span, in a
// record for a failure, a timeout or a panic, and in reconcile.duration;
// then it ends the span.
func (r *Recorder) ReconcileEnded(ctx context.Context, key ports.Key, report ports.Report) {
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		span.SetAttributes(OutcomeKey.String(report.Outcome.String()))
	}
	switch report.Outcome {
	case ports.OutcomeError:
		r.failed(ctx, span, key, report.Err)
	case ports.OutcomeTimeout:
		r.timedOut(ctx, span, key, report)
	case ports.OutcomePanic:
		r.panicked(ctx, span, key, report.Panic)
	}

	attrs, ok := r.outcomes[report.Outcome]
	if !ok {
		attrs = r.outcomeAttributes(report.Outcome)
	}
	r.reconcileDuration.Record(ctx, report.Duration.Seconds(), attrs...)
	r.cr.ended(ctx, report)
	span.End()
}

// failed records a failed reconcile: the error on its span and a WARN
// record.
func (r *Recorder) failed(ctx context.Context, span trace.Span, key ports.Key, err error) {
	rec := r.record(log.SeverityWarn, reconcileFailedBody, key)
	r.emitError(ctx, span, rec, err, "reconcile failed with no error")
}

// timedOut records a reconcile that ran past its timeout as a failed one
// is, with a WARN record of its own, "reconcile timed out", that names the
// timeout: the timeout is a setting to revisit, or a call to bound, where
// a failure is an error to read.
func (r *Recorder) timedOut(ctx context.Context, span trace.Span, key ports.Key, report ports.Report) {
	timeout := TimeoutKey.String(report.Timeout.String())
	span.SetAttributes(timeout)
	rec := r.record(log.SeverityWarn, reconcileTimedOutBody, key)
	rec.AddAttributes(timeout)
	r.emitError(ctx, span, rec, report.Err, "reconcile timed out after "+report.Timeout.String())
}

// emitError records err on span, setting its status to Error, and emits
// rec with err as its error and exception.message; orNone is the message
// when err is nil.
func (r *Recorder) emitError(ctx context.Context, span trace.Span, rec log.Record, err error, orNone string) {
	message := orNone
	if err != nil {
		span.RecordError(err)
		message = err.Error()
		rec.SetErr(err)
	}
	span.SetStatus(codes.Error, message)
	rec.AddAttributes(exceptionMessageKey.String(message))
	r.logger.Emit(ctx, rec)
}

// panicked records a panic: an exception event on the span and an ERROR
// record, both with the panic's type, message and stack.
func (r *Recorder) panicked(ctx context.Context, span trace.Span, key ports.Key, p *ports.Panic) {
	exception, message := exceptionAttributes(p)
	span.AddEvent(exceptionEventName, trace.WithAttributes(exception...))
	span.SetStatus(codes.Error, "panic: "+message)

	rec := r.record(log.SeverityError, reconcilePanickedBody, key)
	rec.AddAttributes(exception...)
	r.logger.Emit(ctx, rec)
}

// exceptionAttributes returns what a panic's span event and record say of
// it: its value's type, its message and its stack, and the message alone.
func exceptionAttributes(p *ports.Panic) (attrs []attribute.KeyValue, message string) {
	if p == nil {
		p = &ports.Panic{}
	}
	message = fmt.Sprint(p.Value)
	return []attribute.KeyValue{
		exceptionTypeKey.String(fmt.Sprintf("%T", p.Value)),
		exceptionMessageKey.String(message),
		exceptionStackKey.String(string(p.Stack)),
	}, message
}

// MappingPanicked records, as an ERROR record "mapping panicked", a panic
// an informer recovered from the end user's mapping or index function:
// what names the function, cause the related object it was called with,
// when known, and the panic's type, message and stack are as a reconcile
// panic's. No reconcile runs, so it is a record and no span.
func (r *Recorder) MappingPanicked(ctx context.Context, what string, cause ports.Cause, p *ports.Panic) {
	rec := r.newRecord(log.SeverityError, mappingPanickedBody)
	rec.AddAttributes(MappingKey.String(what))
	if cause.Resource != "" {
		rec.AddAttributes(RelatedResourceKey.String(cause.Resource))
	}
	if cause.Key != (ports.Key{}) {
		rec.AddAttributes(objectAttributes(cause.Key)...)
	}
	exception, _ := exceptionAttributes(p)
	rec.AddAttributes(exception...)
	r.logger.Emit(ctx, rec)
}

// ShardChanged records a sharded controller's replica acquiring,
// releasing or losing shard, of count: an INFO record "shard acquired" or
// "shard released", or an ERROR record "shard lost", since another
// replica may reconcile the shard's objects already and the process
// exits. Each names the shard and the count. It records the change on
// shard.held, shards.held and shard.changes too.
func (r *Recorder) ShardChanged(ctx context.Context, change ports.ShardChange, shard, count int) {
	r.shards.changed(ctx, change, shard)
	sev, body := log.SeverityInfo, shardAcquiredBody
	switch change {
	case ports.ShardReleased:
		body = shardReleasedBody
	case ports.ShardLost:
		sev, body = log.SeverityError, shardLostBody
	}
	rec := r.newRecord(sev, body)
	rec.AddAttributes(ShardKey.Int(shard), ShardsKey.Int(count))
	r.logger.Emit(ctx, rec)
}

// HandOffStuck records, as an ERROR record "reconcile stuck in a
// hand-off", a pass over key that ignored its Lease's hand-off, a shard's
// at a rebalance or a stop or an unsharded controller's at a stop: the
// object's name and namespace, the shard and the count (0 of 0 when the
// controller is unsharded), how long it has run
// (loam.kube.controller.reconcile.running, as a Go duration reads), and in
// exception.message what it costs: the replica keeps the Lease and
// reconciles none of the objects it guards until the pass returns, or the
// liveness probe fails and the kubelet restarts the pod.
func (r *Recorder) HandOffStuck(ctx context.Context, key ports.Key, shard, count int, running time.Duration) {
	rec := r.newRecord(log.SeverityError, handOffStuckBody)
	rec.AddAttributes(objectAttributes(key)...)
	lease := "the controller"
	if count > 0 {
		lease = fmt.Sprintf("shard %d of %d", shard, count)
	}
	rec.AddAttributes(ShardKey.Int(shard), ShardsKey.Int(count), runningKey.String(running.String()),
		exceptionMessageKey.String(fmt.Sprintf(
			"the reconcile of %s has run %v and ignored its cancel at DrainTimeout: %s keeps its Lease, "+
				"and none of its objects is reconciled, until it returns; the controller's liveness check fails meanwhile", key, running, lease)))
	r.logger.Emit(ctx, rec)
}

// LeaderElectionUnfenced records, as a WARN record "leadership is not
// fenced", Lease timings that let two replicas reconcile at once: a
// leader cut off from the API server stops at most RetryPeriod +
// RenewDeadline after its last renewal, and a standby may take the Lease
// as early as the Lease's whole seconds after the first renewal in the
// last one's second (settings.FenceMargin). The record names the three
// durations and says why in exception.message.
func (r *Recorder) LeaderElectionUnfenced(ctx context.Context, leaseDuration, renewDeadline, retryPeriod time.Duration) {
	rec := r.newRecord(log.SeverityWarn, unfencedBody)
	rec.AddAttributes(
		leaseDurationKey.String(leaseDuration.String()),
		renewDeadlineKey.String(renewDeadline.String()),
		retryPeriodKey.String(retryPeriod.String()),
		exceptionMessageKey.String(fmt.Sprintf(
			"LeaderElection.LeaseDuration %v, which the Lease counts as %v from up to %v before the last renewal, "+
				"is not longer than RenewDeadline %v + RetryPeriod %v: "+
				"a leader cut off from the API server may still be reconciling when a standby takes the Lease",
			leaseDuration, settings.LeaseSeconds(leaseDuration), settings.SameSecond(retryPeriod), renewDeadline, retryPeriod)),
	)
	r.logger.Emit(ctx, rec)
}

// record returns a record of sev about key's reconcile.
func (r *Recorder) record(sev log.Severity, body string, key ports.Key) log.Record {
	rec := r.newRecord(sev, body)
	rec.AddAttributes(objectAttributes(key)...)
	return rec
}

// newRecord returns a record of sev with body, naming the controller.
func (r *Recorder) newRecord(sev log.Severity, body string) log.Record {
	var rec log.Record
	rec.SetTimestamp(time.Now())
	rec.SetSeverity(sev)
	rec.SetSeverityText(sev.String())
	rec.SetBody(attribute.StringValue(body))
	rec.AddAttributes(r.name)
	return rec
}
