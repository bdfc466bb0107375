// Package reconciled marks a reconcile's context with the object it
// reconciles and the failure scenario the object's annotation carries, so
// the Client's transport can carry the scenario on to the children the
// reconcile applies. The controller sets the mark; the transport reads it.
// It is internal: no end user can forge a mark.
package reconciled

import (
	"context"

	"go.opentelemetry.io/otel/baggage"
	"k8s.io/apimachinery/pkg/types"
)

// Object is the mark of a reconcile that carries a scenario.
type Object struct {
	// UID is the reconciled object's: a child names it in its controller
	// owner reference.
	UID types.UID
	// Annotation is the key of the annotation that carries a scenario, as
	// TrustScenario names it; a child's apply gets it.
	Annotation string
	// Scenario is the baggage the reconcile took from the object's
	// annotation: the Decoder's members.
	Scenario baggage.Baggage
}

// key is the context key of the mark.
type key struct{}

// WithObject returns a copy of ctx marked as the reconcile of the object
// with uid, whose annotation holds scenario. Contexts made from it keep the
// mark.
func WithObject(ctx context.Context, uid types.UID, annotation string, scenario baggage.Baggage) context.Context {
	return context.WithValue(ctx, key{}, &Object{UID: uid, Annotation: annotation, Scenario: scenario})
}

// FromContext returns the mark of ctx, and false when ctx has none: when it
// isn't a reconcile's, or its reconcile carries no scenario.
func FromContext(ctx context.Context) (Object, bool) {
	o, ok := ctx.Value(key{}).(*Object)
	if !ok || o == nil {
		return Object{}, false
	}
	return *o, true
}
