// Package memcached is the spec's Memcached custom resource as kubetest's
// own suites reconcile it: the end-to-end tests, each in an API group of
// its own, and the scale harness. It is the module's one definition of a
// Memcached: its types and Resource, the object a test creates, and the
// Deployment the spec's Reconciler applies. The example operator has its
// own copy in the examples module, which this module doesn't depend on.
package memcached

import (
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

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

// New returns the Memcached ns/name of r, of size, as a test creates it
// with a dynamic client: its image is left to the CRD's default.
func New(r kube.Resource[Spec, Status], ns, name string, size int32) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": r.Group + "/" + r.Version,
		"kind":       r.Kind,
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec":       map[string]any{"size": int64(size)},
	}}
}

// Deployment returns what the spec's Reconciler applies for m: a
// Deployment of m's name and size, running m's image, that m controls.
func Deployment(m Object) *appsv1ac.DeploymentApplyConfiguration {
	labels := map[string]string{"app": "memcached", "memcached": m.Name}
	return appsv1ac.Deployment(m.Name, m.Namespace).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(m.APIVersion).WithKind(m.Kind).WithName(m.Name).WithUID(m.UID).
			WithController(true).WithBlockOwnerDeletion(true)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(m.Spec.Size).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().WithContainers(
					corev1ac.Container().WithName("memcached").WithImage(m.Spec.Image)))))
}
