package memcached

import (
	"context"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/kube"
)

// Deployments is Kubernetes' own Deployment kind, which Budget reconciles.
var Deployments = kube.Kind[appsv1.Deployment]{
	GVR:   appsv1.SchemeGroupVersion.WithResource("deployments"),
	Kind:  "Deployment",
	Scope: kube.Namespaced,
}

// Budget is the operator's second controller: a KindReconciler of the
// Deployments that Memcacheds control, which applies a PodDisruptionBudget
// that the Deployment controls, so a drain evicts a Memcached's pods one at
// a time. Other Deployments are left alone.
type Budget struct{ Kube kubernetes.Interface }

// Reconcile applies d's PodDisruptionBudget when a Memcached controls d.
// It returns the apply's error, which retries d.
func (r Budget) Reconcile(ctx context.Context, d appsv1.Deployment) (time.Duration, error) {
	if !memcachedChild(&d) || d.Spec.Selector == nil {
		return 0, nil
	}
	_, err := r.Kube.PolicyV1().PodDisruptionBudgets(d.Namespace).Apply(ctx,
		policyv1ac.PodDisruptionBudget(d.Name, d.Namespace).
			WithOwnerReferences(metav1ac.OwnerReference().
				WithAPIVersion("apps/v1").WithKind("Deployment").WithName(d.Name).WithUID(d.UID).
				WithController(true)).
			WithSpec(policyv1ac.PodDisruptionBudgetSpec().
				WithMaxUnavailable(intstr.FromInt32(1)).
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(d.Spec.Selector.MatchLabels))),
		metav1.ApplyOptions{FieldManager: "memcached-budget", Force: true},
	)
	return 0, err
}

// MemcachedMetadata is the Memcacheds' metadata alone, which Budget
// reads its Deployments' owners from.
var MemcachedMetadata = kube.Kind[metav1.PartialObjectMetadata]{
	GVR:   Memcached.GVR(),
	Kind:  Memcached.Kind,
	Scope: kube.Namespaced,
}

// memcachedChild reports whether a Memcached controls obj.
func memcachedChild(obj metav1.Object) bool {
	owner := metav1.GetControllerOf(obj)
	return owner != nil && owner.Kind == Memcached.Kind && strings.HasPrefix(owner.APIVersion, Memcached.Group+"/")
}

// Namespaces is Kubernetes' own Namespace kind, which DefaultDeny
// reconciles.
var Namespaces = kube.Kind[corev1.Namespace]{
	GVR:   corev1.SchemeGroupVersion.WithResource("namespaces"),
	Kind:  "Namespace",
	Scope: kube.Cluster,
}

// DefaultDeny is a KindReconciler of Namespaces: it applies a NetworkPolicy
// in each Namespace that selects every pod and allows them no ingress, so a
// Namespace's pods take traffic only from the policies its owner adds. The
// Namespace controls the policy, so a hand-made change to it is undone.
type DefaultDeny struct{ Kube kubernetes.Interface }

// Reconcile applies ns's policy, and returns the apply's error.
func (r DefaultDeny) Reconcile(ctx context.Context, ns corev1.Namespace) (time.Duration, error) {
	_, err := r.Kube.NetworkingV1().NetworkPolicies(ns.Name).Apply(ctx, policy(ns), metav1.ApplyOptions{FieldManager: "default-deny", Force: true})
	return 0, err
}

// policy is the NetworkPolicy DefaultDeny applies in ns.
func policy(ns corev1.Namespace) *networkingv1ac.NetworkPolicyApplyConfiguration {
	return networkingv1ac.NetworkPolicy("default-deny", ns.Name).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion("v1").WithKind("Namespace").WithName(ns.Name).WithUID(ns.UID).
			WithController(true)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector()).
			WithPolicyTypes(networkingv1.PolicyTypeIngress))
}
