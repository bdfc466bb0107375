package scenario

import (
	"encoding/json"

	"go.opentelemetry.io/otel/baggage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Owners is TrustOwnerScenario's rule: a child's scenario is trusted only
// when it says what its controller owner's says now. It names the kind of
// the owners, and reads them through Get, the cache of owners.
type Owners struct {
	// Group and Kind are the owners' API group and kind, which the
	// child's controller owner reference must name.
	Group, Kind string
	// Namespaced says whether the owners are namespaced, so that an owner
	// is read in its child's namespace; a cluster-scoped owner is read by
	// name alone.
	Namespaced bool
	// Annotation is the annotation that holds the owner's and the child's
	// scenario.
	Annotation string
	// Get returns the cached owner named name in namespace ("" for a
	// cluster-scoped one) as the JSON of its object, found false when it
	// isn't cached, or an error when it can't be read.
	Get func(namespace, name string) (doc []byte, found bool, err error)
	// Trust is the owners' own controller's rule, its TrustScenario's
	// trust: an owner it wouldn't trust with a scenario vouches for no
	// child either. It is handed a copy of the owner of its own, decoded
	// from Get's JSON. Nil trusts no owner.
	Trust func(owner metav1.Object) bool
	// Names, when not nil, reports whether owner names child as one of
	// its children, as the mapping from owners to the children their
	// changes reconcile does: a child it doesn't name is trusted in
	// nothing, even with the owner's value copied onto it and its
	// controller reference set to the owner by whoever can write it.
	Names func(owner, child metav1.Object) bool
}

// Trusts reports whether child's scenario is what its controller owner
// says now, and whether the owner's own controller would trust the owner
// with it: child's controller owner reference names an object of o's
// group and kind that Get holds, by its namespace, name and uid; the
// owner's annotation holds every member of the child's (OwnerSays); Names,
// when set, names child as the owner's; and Trust trusts the owner. An
// owner not cached, or one that can't be read or decoded, is trusted in
// nothing: Trusts returns false.
func (o Owners) Trusts(child metav1.Object) bool {
	ref := metav1.GetControllerOf(child)
	if ref == nil || ref.Kind != o.Kind {
		return false
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != o.Group {
		return false
	}
	namespace := child.GetNamespace()
	if !o.Namespaced {
		namespace = ""
	}
	doc, found, err := o.Get(namespace, ref.Name)
	if err != nil || !found {
		return false
	}
	var content map[string]any
	if err := json.Unmarshal(doc, &content); err != nil {
		return false
	}
	owner := &unstructured.Unstructured{Object: content}
	if owner.GetUID() != ref.UID || !OwnerSays(child.GetAnnotations()[o.Annotation], owner.GetAnnotations()[o.Annotation]) {
		return false
	}
	if o.Names != nil && !o.Names(owner, child) {
		return false
	}
	// Asked last, so the end user's rule meets only owners that vouch
	// for this child, and about a copy the checks above didn't read.
	return o.Trust != nil && o.Trust(owner.DeepCopy())
}

// OwnerSays reports whether the scenario a child's annotation holds,
// child, is what its owner's, owner, says: every member of the W3C
// baggage child is in owner with the same value, and child has at least
// one. Either that isn't baggage says nothing: OwnerSays returns false.
func OwnerSays(child, owner string) bool {
	c, err := baggage.Parse(child)
	if err != nil || c.Len() == 0 {
		return false
	}
	o, err := baggage.Parse(owner)
	if err != nil {
		return false
	}
	for _, m := range c.Members() {
		if om := o.Member(m.Key()); om.Key() == "" || om.Value() != m.Value() {
			return false
		}
	}
	return true
}
