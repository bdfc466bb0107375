package kube

import (
	"context"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	faultscenario "github.com/loam-dev/loam/adapters/scenario"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/domain/names"
	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/domain/scenario"
	"github.com/loam-dev/loam/ports"
)

// TrustScenario carries the failure scenario that an object's annotation
// holds into each of the object's reconciles, when trust trusts the object.
// The annotation's value is W3C baggage that carries a scenario as the
// App's Decoder, fault.Settings.Decoder, reads it, such as jsonscenario's
// member. Only the Decoder's members join the reconcile's context: any
// other member of the annotation is dropped. The reconcile's Reconciler, a
// Finalize's f, the controller's own writes, and every request and
// injection point they reach see the scenario. The Client carries it on to
// the reconciled object's children: it sets the annotation on every child
// the reconcile applies.
//
// trust is asked only about an object whose annotation carries a scenario,
// and only when the App has failure injection. It is handed its own copy of
// the object as the cache holds it, an *unstructured.Unstructured whatever
// the Controller's type, and may be called by several workers at once. It
// is set in code, not sourced. A panic in trust is recovered and recorded
// as a panic in the Reconciler is, and the object isn't retried: nothing
// else runs, so no finalizer and no status is applied. Without
// TrustScenario, no reconcile carries a scenario.
//
// The annotation is read as the reconcile's span starts, before the
// controller adds or removes its finalizer, calls a Finalize's f, or
// decodes the object for the Reconciler. A reconcile that a change to an
// owned resource triggered reconciles the owner, so it carries the
// owner's scenario. The annotation is read one of four ways:
//
//   - no annotation, or none of the Decoder's members in it: no scenario,
//     and nothing is recorded;
//   - a value that isn't W3C baggage, or whose scenario the Decoder can't
//     read: no scenario, and the reconcile's span gets a loam.fit.strip
//     event with error.type and error.message. The reconcile goes on;
//   - a scenario on an object trust doesn't trust: no scenario, and a
//     loam.fit.strip event with no attributes;
//   - a scenario on a trusted object: the Decoder's members join the
//     reconcile's context.
//
// Adding the annotation starts an experiment and removing it ends one, at
// once: either changes the object, which reconciles it.
//
// NewController and NewKindController report an annotation that isn't a
// valid annotation key, a nil trust, and a second TrustScenario.
func TrustScenario(annotation string, trust func(obj metav1.Object) bool) Part {
	return Part{kind: partTrustScenario, annotation: annotation, trust: trust}
}

// TrustOwnerScenario is TrustScenario for a controller of children, such
// as the Deployments a Memcached controls: it trusts a child's annotation
// only when it says what its controller owner's says now, and only where
// the owner's own controller would trust the owner with it. A child is
// trusted when:
//
//   - its controller owner reference names an object of owners' kind and
//     group that owners holds, by its namespace, name and uid;
//   - every baggage member of the child's annotation is in the owner's
//     annotation with the same value — the members the Client carried on
//     to the child, which are the owner's that the Decoder owns;
//   - the Controller's Watches(owners, MapFunc(f)) maps the owner to the
//     child: f(owner) holds the child's key, so the owner's value copied
//     onto another child, even one whose controller reference was set to
//     the owner, is trusted in nothing (a Watches by ByIndex names every
//     child its index holds, and adds nothing here);
//   - trust, the owners' own controller's rule, as its TrustScenario has
//     it, trusts the owner: an owner outside the namespace its controller
//     takes scenarios in vouches for no child. trust is handed its own
//     copy of the owner as owners holds it, an *unstructured.Unstructured.
//
// So whoever can write the child, but not its owner, can't put the child
// under a scenario, and once the owner's experiment ends, its children's
// does.
//
// owners is read from the Controller's own cache: the Controller must
// also Watch it (Watches(owners, …)), so that an owner's change, its
// annotation's included, reconciles its children; NewController and
// NewKindController report a TrustOwnerScenario whose Cache it doesn't
// Watch, a nil Cache and a nil trust, with TrustScenario's own mistakes.
// A Cache of metav1.PartialObjectMetadata is enough. An owner not in the
// cache, or one that can't be read, is trusted in nothing.
func TrustOwnerScenario[T any](annotation string, owners *Cache[T], trust func(owner metav1.Object) bool) Part {
	p := Part{kind: partTrustScenario, annotation: annotation, byOwner: true, ownerTrust: trust}
	if owners == nil {
		return p
	}
	p.cache = owners
	if trust != nil {
		p.owners = func(m Mapping) func(metav1.Object) bool { return ownersOf(owners, annotation, trust, m).Trusts }
	}
	return p
}

// ownersOf returns TrustOwnerScenario's rule over owners, read from the
// Controller's cache of them once a Watches has bound it (until then, no
// owner is cached), with trust, the owners' controller's rule, and m, the
// Watches' mapping, naming each owner's children.
func ownersOf[T any](owners *Cache[T], annotation string, trust func(metav1.Object) bool, m Mapping) scenario.Owners {
	o := scenario.Owners{
		Group: owners.gvr.Group, Kind: owners.kind, Namespaced: owners.scope != Cluster, Annotation: annotation,
		Get: func(namespace, name string) ([]byte, bool, error) {
			b := owners.binding()
			if b == nil {
				return nil, false, nil
			}
			return b.store.Get(Key{Namespace: namespace, Name: name})
		},
		Trust: trust,
	}
	if m.kind == mappingFunc && m.fn != nil {
		o.Names = func(owner, child metav1.Object) bool {
			return slices.Contains(m.fn(owner), Key{Namespace: child.GetNamespace(), Name: child.GetName()})
		}
	}
	return o
}

// scenarioTrust is what a Controller's TrustScenario says: the annotation
// to read, and whom to believe.
type scenarioTrust struct {
	annotation string
	trust      func(metav1.Object) bool
}

// trustMistakes returns what is wrong with a TrustScenario part.
func (p Part) trustMistakes() []string {
	var mistakes []string
	if err := names.CheckAnnotation(p.annotation); err != nil {
		mistakes = append(mistakes, "the annotation "+err.Error())
	}
	switch {
	case p.byOwner:
		if p.cache == nil {
			mistakes = append(mistakes, "the Cache of owners is nil")
		}
		if p.ownerTrust == nil {
			mistakes = append(mistakes, "the owners' trust is nil: pass the rule their own controller's TrustScenario trusts them by")
		}
	case p.trust == nil:
		mistakes = append(mistakes, "trust is nil: a controller that takes scenarios decides whose to take")
	}
	// The Cache's own mistakes are the Watches' to report, which a
	// TrustOwnerScenario needs anyway.
	return mistakes
}

// hooks returns what the adapter of the failure injector reads of t: nil
// without a TrustScenario.
func (t *scenarioTrust) hooks() *faultscenario.Trust {
	if t == nil {
		return nil
	}
	return &faultscenario.Trust{Annotation: t.annotation, Trust: t.trust}
}

// scenarioUntil returns when the scenario a reconcile carries ends, as
// faultscenario.Until does: nil when no reconcile carries one.
func scenarioUntil(t *scenarioTrust, faults *fault.Injector) func(context.Context) (time.Time, bool) {
	return faultscenario.Until(t.hooks(), faults)
}

// scenarioCarried reports whether a reconcile carries a scenario, as
// faultscenario.Carried does: nil when no reconcile carries one.
func scenarioCarried(t *scenarioTrust, faults *fault.Injector) func(context.Context) bool {
	return faultscenario.Carried(t.hooks(), faults)
}

// scenarioLifts has lift called each time failure injection is turned
// off, as faultscenario.Lifts does: nil when no reconcile carries a
// scenario.
func scenarioLifts(t *scenarioTrust, faults *fault.Injector) func(lift func()) (stop func()) {
	return faultscenario.Lifts(t.hooks(), faults)
}

// scenarioPrepare returns the step that reads each reconciled object's
// scenario before anything else of the reconcile runs, as
// faultscenario.Prepare does: nil when t is nil (the Controller has no
// TrustScenario) or faults is inert (its App has no failure injection).
func scenarioPrepare(t *scenarioTrust, faults *fault.Injector, rec ports.Recorder) reconcile.Prepare {
	return faultscenario.Prepare(t.hooks(), faults, rec)
}
