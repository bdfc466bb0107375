package fault

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	"github.com/loam-dev/loam/app/fault/fit"
)

// The span events an Injector records.
const (
	// EvaluationEvent is recorded for every evaluation of a point in a
	// context that carries a scenario.
	EvaluationEvent = "loam.fit.evaluation"
	// StripEvent is recorded for every strip that removed a scenario.
	StripEvent = "loam.fit.strip"
)

// The attributes of EvaluationEvent.
const (
	PointKey   = attribute.Key("loam.fit.point")
	MatchedKey = attribute.Key("loam.fit.matched")
	RuleKey    = attribute.Key("loam.fit.rule")
	AbortKey   = attribute.Key("loam.fit.abort")
	DelayKey   = attribute.Key("loam.fit.delay")
	// StatusKey (int) is the status the point is answered with
	// (fit.Fault.Status), only when it is answered with one.
	StatusKey = attribute.Key("loam.fit.status")
)

// The attributes of the StripEvent of an expired scenario.
const (
	ExpiredKey = attribute.Key("loam.fit.expired")
	EndsKey    = attribute.Key("loam.fit.ends")
)

// ExperimentKey is the scenario's ID (fit.Scenario.ID), on every event and
// record of a scenario that has one.
const ExperimentKey = attribute.Key("loam.fit.experiment")

// InjectedBody is the body of the record of each injected fault.
const InjectedBody = "fault injected"

// The error attributes OpenTelemetry's semantic conventions name.
const (
	errorTypeKey    = attribute.Key("error.type")
	errorMessageKey = attribute.Key("error.message")
)

// withExperiment returns attrs with the experiment's ID, when it has one.
func withExperiment(attrs []attribute.KeyValue, id string) []attribute.KeyValue {
	if id == "" {
		return attrs
	}
	return append(attrs, ExperimentKey.String(id))
}

// withStatus returns attrs with f's status, when it has one.
func withStatus(attrs []attribute.KeyValue, f fit.Fault) []attribute.KeyValue {
	if f.Status == 0 {
		return attrs
	}
	return append(attrs, StatusKey.Int(f.Status))
}

// record emits the record of a fault point met in ctx.
func (i *Injector) record(ctx context.Context, point string, f fit.Fault, id string) {
	var r log.Record
	r.SetTimestamp(i.now())
	r.SetSeverity(log.SeverityInfo)
	r.SetSeverityText(log.SeverityInfo.String())
	r.SetBody(attribute.StringValue(InjectedBody))
	r.AddAttributes(withExperiment(withStatus([]attribute.KeyValue{
		PointKey.String(point), AbortKey.Bool(f.Abort), DelayKey.Float64(f.Delay.Seconds()),
	}, f), id)...)
	i.logger.Emit(ctx, r)
}

// LiftedEvent is recorded when a delay a point met ends before its time
// because failure injection was turned off or the scenario ended: the
// call then goes on unfaulted.
const LiftedEvent = "loam.fit.lifted"

// LiftedBody is the body of the INFO record of a lifted delay.
const LiftedBody = "injected delay lifted: the call goes on unfaulted"

// The attributes of LiftedEvent, besides PointKey, DelayKey (the delay
// the point met) and ExperimentKey.
const (
	// ReasonKey (string) says why the delay was lifted: LiftedOff or
	// LiftedExpired.
	ReasonKey = attribute.Key("loam.fit.reason")
	// WaitedKey (double, seconds) is how long the delay had lasted.
	WaitedKey = attribute.Key("loam.fit.waited")
)

// The values of ReasonKey.
const (
	// LiftedOff: failure injection was turned off.
	LiftedOff = "off"
	// LiftedExpired: the scenario reached its end (fit.Scenario.Ends).
	LiftedExpired = "expired"
)
