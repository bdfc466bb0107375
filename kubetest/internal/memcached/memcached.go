// Package memcached is the spec's Memcached custom resource as kubetest's
// own suites reconcile it: the end-to-end tests, each in an API group of
// its own, and the scale harness. The example operator has its own copy in
// the examples module, which this module doesn't depend on.
package memcached

import (
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/kube"
)

// Spec is what a Memcached asks for.
type Spec struct {
	Size  int32  `json:"size"`
	Image string `json:"image"`
}

// Status is what its controller reports.
type Status struct {
	ReadyReplicas int32              `json:"readyReplicas,omitempty"`
	Conditions    []metav1.Condition `json:"conditions,omitempty"`
}

// Object is one Memcached.
type Object = kube.Object[Spec, Status]

// Resource returns the Memcached resource in group, version v1alpha1,
// namespaced, with the spec's validation rules.
func Resource(group string) kube.Resource[Spec, Status] {
	var (
		spec   Spec
		status Status
	)
	return kube.Resource[Spec, Status]{
		Group:   group,
		Version: "v1alpha1",
		Kind:    "Memcached",
		Plural:  "memcacheds",
		Scope:   kube.Namespaced,
		Rules: []kube.TypeRules{
			kube.Rules(&spec,
				kube.Field(&spec.Size).Minimum(1).Maximum(3).Description("How many memcached pods run."),
				kube.Field(&spec.Image).Pattern(regexp.MustCompile(`^memcached:`)).Default("memcached:1.6.26-alpine3.19"),
			),
			kube.Rules(&status, kube.Field(&status.Conditions).ListMap("type")),
		},
	}
}
