package webhook

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	domain "github.com/loam-dev/loam/domain/webhook"
	"github.com/loam-dev/loam/ports"
)

// ScopeName is the instrumentation scope of the Server's spans, records
// and instruments: the controllers' scope, so that one view shows both.
const ScopeName = ports.ScopeName

// The names of the Server's instruments.
const (
	ReviewDurationName = "loam.kube.webhook.review.duration"
	ReviewsActiveName  = "loam.kube.webhook.reviews.active"
)

// The attributes of the Server's spans, records and data points.
const (
	// NamespaceKey is the reviewed object's namespace, when it has one.
	NamespaceKey = attribute.Key("k8s.namespace.name")
	// ObjectNameKey is the reviewed object's name, when it has one.
	ObjectNameKey = attribute.Key("loam.kube.object.name")
	// ObjectKindKey is the reviewed object's kind, such as Memcached.
	ObjectKindKey = attribute.Key("loam.kube.object.kind")
	// ObjectAPIVersionKey is the reviewed object's apiVersion, such as
	// cache.example.com/v1alpha1 or v1.
	ObjectAPIVersionKey = attribute.Key("loam.kube.object.api_version")
	// OperationKey is an admission's operation, such as CREATE.
	OperationKey = attribute.Key("loam.kube.webhook.operation")
	// NameKey is the Route's Name; on every data point.
	NameKey = attribute.Key("loam.kube.webhook.name")
	// TypeKey is the Route's Type: validating, mutating or conversion; on
	// every data point.
	TypeKey = attribute.Key("loam.kube.webhook.type")
	// OutcomeKey is how the review ended: allowed, denied, error or
	// panic; on review.duration's data points. A conversion that
	// succeeds is allowed, one that fails is error, and so is every
	// request the Server refuses before it reaches domain/webhook.
	OutcomeKey = attribute.Key("loam.kube.webhook.review.outcome")
	// UIDKey is the review's uid, which the API server's audit log has
	// too.
	UIDKey = attribute.Key("loam.kube.webhook.review.uid")

	exceptionTypeKey    = attribute.Key("exception.type")
	exceptionMessageKey = attribute.Key("exception.message")
	exceptionStackKey   = attribute.Key("exception.stacktrace")
)

// reviewAttributes returns the attributes naming what o reviewed.
func reviewAttributes(o domain.Outcome) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	add := func(k attribute.Key, v string) {
		if v != "" {
			attrs = append(attrs, k.String(v))
		}
	}
	add(NamespaceKey, o.Namespace)
	add(ObjectNameKey, o.Name)
	add(ObjectKindKey, o.Kind)
	apiVersion := o.Version
	if o.Group != "" {
		apiVersion = o.Group + "/" + o.Version
	}
	add(ObjectAPIVersionKey, apiVersion)
	add(OperationKey, o.Operation)
	add(UIDKey, o.UID)
	attrs = append(attrs, OutcomeKey.String(string(o.Result)))
	return attrs
}

// emit emits a record of severity with body and attrs.
func (s *Server) emit(ctx context.Context, severity log.Severity, body string, attrs []attribute.KeyValue) {
	var r log.Record
	r.SetTimestamp(time.Now())
	r.SetSeverity(severity)
	r.SetSeverityText(severity.String())
	r.SetBody(attribute.StringValue(body))
	r.AddAttributes(attrs...)
	s.logger.Emit(ctx, r)
}
