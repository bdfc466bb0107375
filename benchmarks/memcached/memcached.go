// Package memcached is the custom resource the comparison's controllers
// reconcile, and the work one reconcile does. The limit, the
// controller-runtime Reconciler and the loam Reconciler all build their
// writes from it, so each sends the same ConfigMap and the same status for
// the same object.
//
// It imports apimachinery and client-go's apply configurations only, never
// loam or controller-runtime: each controller's process links its own
// framework and nothing of the other's.
package memcached

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The resource's names. Its group is the comparison's own, so that its
// requests are told apart in the API server's metrics.
const (
	Group   = "bench.loam.dev"
	Version = "v1alpha1"
	Kind    = "Memcached"
	Plural  = "memcacheds"
)

// GroupVersion is the resource's API group and version.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// GVR names the resource to client-go's clients.
var GVR = GroupVersion.WithResource(Plural)

// Spec is what a Memcached asks for.
type Spec struct {
	Size int32 `json:"size"`
}

// Status is what its controller reports: the generation it last acted on,
// and a Ready condition.
type Status struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// Memcached is one object as a typed Go struct, the way controller-runtime
// and client-go's informers handle objects: a runtime.Object registered in
// a Scheme. loam's Reconciler gets the same fields as a
// kube.Object[Spec, Status] instead.
type Memcached struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   Spec   `json:"spec"`
	Status Status `json:"status,omitzero"`
}

// MemcachedList is a list of Memcacheds, as the API server returns one.
type MemcachedList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Memcached `json:"items"`
}

// DeepCopyInto copies m into out, sharing nothing that either may change.
func (m *Memcached) DeepCopyInto(out *Memcached) {
	*out = *m
	m.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	// A Condition holds strings, numbers and a time: copied by value.
	out.Status.Conditions = slices.Clone(m.Status.Conditions)
}

// DeepCopy returns a copy of m that shares nothing that either may change.
func (m *Memcached) DeepCopy() *Memcached {
	if m == nil {
		return nil
	}
	out := new(Memcached)
	m.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (m *Memcached) DeepCopyObject() runtime.Object { return m.DeepCopy() }

// DeepCopyInto copies l into out, sharing nothing that either may change.
func (l *MemcachedList) DeepCopyInto(out *MemcachedList) {
	out.TypeMeta = l.TypeMeta
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Memcached, len(l.Items))
	for i := range l.Items {
		l.Items[i].DeepCopyInto(&out.Items[i])
	}
}

// DeepCopyObject implements runtime.Object.
func (l *MemcachedList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := new(MemcachedList)
	l.DeepCopyInto(out)
	return out
}

// AddToScheme registers Memcached and MemcachedList in s, as a
// kubebuilder project's api package does.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Memcached{}, &MemcachedList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
