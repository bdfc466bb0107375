package kube

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Object is one object of a Resource[Spec, Status]: its type, its metadata,
// its spec and its status, as the API server serves them. It is a plain
// struct, with no DeepCopy, no scheme and no runtime.Object: the
// controller decodes each object it reads into a new one, which is the
// Reconciler's own.
type Object[Spec, Status any] struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   Spec   `json:"spec"`
	Status Status `json:"status,omitempty"`
}
