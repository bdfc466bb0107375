package main

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loam-dev/loam/examples/memcached"
)

// reconcileThree creates the demo's Memcacheds, and shows what the
// operator made of them.
func (d *demo) reconcileThree(ctx context.Context) error {
	d.say("")
	d.say("Creating three Memcacheds in %s: %s.", namespace, names())
	for _, c := range caches {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": memcached.Memcached.Group + "/" + memcached.Memcached.Version,
			"kind":       memcached.Memcached.Kind,
			"metadata":   map[string]any{"name": c.name, "namespace": namespace},
			"spec":       map[string]any{"size": c.size},
		}}
		if _, err := d.memcacheds.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, c := range caches {
		if err := d.waitFor(ctx, c.name+"'s Deployment and PodDisruptionBudget", func(s state) bool {
			return s.replicas == c.size && s.pdb && s.available != nil
		}, c.name); err != nil {
			return err
		}
	}
	d.say("The operator applied a Deployment for each (Memcached controller) and a PodDisruptionBudget")
	d.say("for each Deployment (Budget). No kubelet runs here, so no pod starts:")
	if err := d.table(ctx); err != nil {
		return err
	}

	d.say("")
	d.say("Playing the Deployment controller: writing each Deployment's status as if its pods were ready.")
	for _, c := range caches {
		if err := d.deploymentReady(ctx, c.name); err != nil {
			return err
		}
	}
	for _, c := range caches {
		if err := d.waitFor(ctx, c.name+"'s status to follow its Deployment's", func(s state) bool {
			return s.ready == c.size && s.available != nil && s.available.Status == metav1.ConditionTrue
		}, c.name); err != nil {
			return err
		}
	}
	d.say("Each Memcached's status follows its Deployment's through Owns, with no polling:")
	return d.table(ctx)
}

// deploymentReady plays the Deployment controller for the Deployment name:
// its replicas are all ready and available.
func (d *demo) deploymentReady(ctx context.Context, name string) error {
	deployments := d.kube.AppsV1().Deployments(namespace)
	dep, err := deployments.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	n := *dep.Spec.Replicas
	dep.Status = appsv1.DeploymentStatus{
		ObservedGeneration: dep.Generation,
		Replicas:           n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
		Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
			Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.",
			LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
	}
	_, err = deployments.UpdateStatus(ctx, dep, metav1.UpdateOptions{})
	return err
}
