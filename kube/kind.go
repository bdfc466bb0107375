package kube

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind is one of Kubernetes' own kinds, or any kind whose Go type T is
// defined elsewhere, such as corev1.Namespace: a controller reconciles its
// objects, decoded into client-go's own struct. A Kind has no CRD and no
// Rules, since its definition is the API server's, and its status belongs
// to whoever defines it.
type Kind[T any] struct {
	// GVR names the resource, such as
	// corev1.SchemeGroupVersion.WithResource("namespaces"). Its Group is ""
	// for the core group.
	GVR schema.GroupVersionResource
	// Kind names the resource's objects, such as Namespace.
	Kind string
	// Scope is Namespaced or Cluster.
	Scope Scope
}

// gvrMistakes returns an error for each name gvr lacks that a resource
// is reached by: its Version and its Resource.
func gvrMistakes(gvr schema.GroupVersionResource) []error {
	var errs []error
	if gvr.Version == "" {
		errs = append(errs, errors.New("the GVR has no Version"))
	}
	if gvr.Resource == "" {
		errs = append(errs, errors.New("the GVR has no Resource"))
	}
	return errs
}

// mistakes returns an error for each mistake in k: a GVR without a
// Version or a Resource, a missing Kind, a Scope that is neither
// Namespaced nor Cluster, and a T whose pointer isn't a metav1.Object.
func (k Kind[T]) mistakes() []error {
	errs := gvrMistakes(k.GVR)
	if k.Kind == "" {
		errs = append(errs, errors.New("the Kind is missing"))
	}
	errs = append(errs, k.Scope.mistakes()...)
	if _, ok := any(new(T)).(metav1.Object); !ok {
		errs = append(errs, fmt.Errorf("%T is no metav1.Object, so its objects have no metadata to reconcile by", new(T)))
	}
	return errs
}
