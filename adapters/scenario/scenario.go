// Package scenario plugs an App's failure injection into a controller's
// runtime, for a controller that takes scenarios (kube.TrustScenario): the
// step that reads each reconciled object's scenario as domain/scenario
// decides, and the hooks that reconcile an object again once the
// scenario it failed under no longer applies. They are closures over the
// App's fault.Injector, which the domain can't import.
package scenario

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/baggage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	domain "github.com/loam-dev/loam/domain/scenario"
	"github.com/loam-dev/loam/internal/reconciled"
	"github.com/loam-dev/loam/ports"
)

// Trust is what a controller's TrustScenario says: the annotation to
// read, and whom to believe.
type Trust struct {
	// Annotation holds each object's scenario.
	Annotation string
	// Trust reports whether an object's scenario is to be believed. It is
	// handed a copy of its own of the cached object.
	Trust func(metav1.Object) bool
}

// takes reports whether a controller that trusts t takes scenarios at all:
// not without a TrustScenario, nor in an App without failure injection.
func takes(t *Trust, faults *fault.Injector) bool {
	return t != nil && faults.Enabled()
}

// Until returns when the scenario a reconcile carries ends, so that the
// object is reconciled again once its experiment is over: nil when no
// reconcile carries one.
func Until(t *Trust, faults *fault.Injector) func(context.Context) (time.Time, bool) {
	if !takes(t, faults) {
		return nil
	}
	return func(ctx context.Context) (time.Time, bool) { return faults.Ends(baggage.FromContext(ctx)) }
}

// Carried reports whether a reconcile carries a scenario, so that an
// object whose reconcile failed under one is reconciled at once when
// failure injection is turned off (Lifts): nil when no reconcile carries
// one. It reads the context's baggage whether the switch is on or off,
// unlike fault.Injector.Carries: a pass that carried a scenario when it
// began, and ends after the switch turned off, is lifted too.
func Carried(t *Trust, faults *fault.Injector) func(context.Context) bool {
	if !takes(t, faults) {
		return nil
	}
	dec := faults.Decoder()
	return func(ctx context.Context) bool { return fit.Carries(baggage.FromContext(ctx), dec) }
}

// Lifts has lift called each time failure injection is turned off, so
// the objects whose reconciles failed under a scenario are reconciled at
// once, not at their retry, until the function it returns is called: nil
// when no reconcile carries a scenario.
func Lifts(t *Trust, faults *fault.Injector) func(lift func()) (stop func()) {
	if !takes(t, faults) {
		return nil
	}
	return func(lift func()) func() {
		return faults.OnChange(func(on bool) {
			if !on {
				lift()
			}
		})
	}
}

// Prepare returns the step that reads each reconciled object's scenario
// before anything else of the reconcile runs, as t says and
// domain/scenario.Decide rules, reporting what it strips to rec. While
// failure injection is off, it reads nothing: no annotation is decoded,
// trust isn't asked, and the reconcile carries no scenario. It
// returns nil, so that nothing is read at all, when t is nil (the
// controller has no TrustScenario) or faults is inert (its App has no
// failure injection).
func Prepare(t *Trust, faults *fault.Injector, rec ports.Recorder) func(context.Context, ports.Object) context.Context {
	if !takes(t, faults) {
		return nil
	}
	return func(ctx context.Context, obj ports.Object) context.Context {
		if !faults.On() {
			return ctx
		}
		outcome := domain.Decide(obj.Annotations[t.Annotation], faults.ScenarioFromBaggage, func() (bool, error) {
			// Decoded from the cache's JSON, so trust has a copy of its
			// own and can't change the cache's object. The error names
			// kube, where the end user meets TrustScenario.
			var content map[string]any
			if err := utiljson.Unmarshal(obj.JSON, &content); err != nil {
				return false, fmt.Errorf("kube: decoding the cached object (uid %s) for TrustScenario's trust: %w", obj.UID, err)
			}
			return t.Trust(&unstructured.Unstructured{Object: content}), nil
		})
		switch outcome.Verdict {
		case domain.Unreadable:
			rec.ScenarioStripped(ctx, outcome.Err)
		case domain.Untrusted:
			rec.ScenarioStripped(ctx, nil)
		case domain.Trusted:
			// Marked as the reconcile of obj, so the Client carries the
			// scenario on to obj's children in t's annotation.
			ctx = baggage.ContextWithBaggage(ctx, domain.Join(baggage.FromContext(ctx), outcome.Scenario))
			ctx = reconciled.WithObject(ctx, obj.UID, t.Annotation, outcome.Scenario)
		case domain.Absent:
		}
		return ctx
	}
}
