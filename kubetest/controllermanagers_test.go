package kubetest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// TestControllerManagersSideBySide starts two clusters, each with its
// controller manager and workload controllers, at once in one process.
// client-go reserves the name of a controller manager's informers in the
// whole process, and kube-controller-manager names them all alike, so
// the second used to fail to start ("is already registered") until the
// first stopped. Each cluster's Deployment controller makes ReplicaSets
// for its own Deployments, each garbage collector deletes its own
// cluster's dependents, and the second cluster's controllers go on after
// the first cluster stops. TestMain's leak checks see both stop cleanly.
func TestControllerManagersSideBySide(t *testing.T) {
	var (
		clusters [2]*kubetest.Cluster
		errs     [2]error
		wg       sync.WaitGroup
	)
	for i := range clusters {
		wg.Go(func() {
			clusters[i], errs[i] = kubetest.Run(t.Context(), append(logOptions(t.Output()), kubetest.WithWorkloadControllers())...)
		})
	}
	wg.Wait()
	for _, c := range clusters {
		if c == nil {
			continue
		}
		rememberAddress(c)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(background(), time.Minute)
			defer cancel()
			require.NoError(t, c.Stop(ctx))
		})
	}
	require.NoError(t, errors.Join(errs[:]...), "two clusters with controller managers start at once")
	first, second := clusters[0], clusters[1]

	firstCS, secondCS := clientset(t, first.RESTConfig()), clientset(t, second.RESTConfig())
	firstNS, secondNS := first.Namespace(t), second.Namespace(t)
	createDeployment(t, firstCS, firstNS, "web", 1, nil)
	createDeployment(t, secondCS, secondNS, "web", 2, nil)
	// Each Deployment controller answers its own cluster's Deployment,
	// at its own size.
	waitForReplicaSet(t, firstCS, firstNS, "web", 1)
	secondRS := waitForReplicaSet(t, secondCS, secondNS, "web", 2)

	// The first cluster's garbage collector deletes the ReplicaSet of the
	// first cluster's Deployment; the second cluster's, whose Deployment
	// is still there, stays.
	deleteDeployment(t, firstCS, firstNS, "web")
	waitForNoReplicaSet(t, firstCS, firstNS)
	rs, err := secondCS.AppsV1().ReplicaSets(secondNS).Get(t.Context(), secondRS.Name, metav1.GetOptions{})
	require.NoError(t, err, "the second cluster's ReplicaSet went with the first cluster's")
	require.Equal(t, secondRS.UID, rs.UID)

	// The first cluster stops; the second's controllers go on.
	stopCtx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	require.NoError(t, first.Stop(stopCtx))
	scale(t, secondCS, secondNS, "web", 3)
	waitForReplicaSet(t, secondCS, secondNS, "web", 3)
	deleteDeployment(t, secondCS, secondNS, "web")
	waitForNoReplicaSet(t, secondCS, secondNS)
}

// waitForReplicaSet waits until the namespace has one ReplicaSet, of
// replicas, controlled by the Deployment name, and returns it.
func waitForReplicaSet(t *testing.T, cs kubernetes.Interface, ns, name string, replicas int32) *appsv1.ReplicaSet {
	t.Helper()
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	var got []appsv1.ReplicaSet
	wait.For(t, waitFor, func() bool {
		l, err := cs.AppsV1().ReplicaSets(ns).List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		got = l.Items
		return len(got) == 1 && controlledBy(&got[0], d.UID) && got[0].Spec.Replicas != nil && *got[0].Spec.Replicas == replicas
	}, fmt.Sprintf("the Deployment %s/%s never had one ReplicaSet of %d", ns, name, replicas),
		wait.LastSeen(func() string { return fmt.Sprintf("%d ReplicaSets: %+v", len(got), got) }))
	return &got[0]
}

// controlledBy reports whether the Deployment of uid controls rs.
func controlledBy(rs *appsv1.ReplicaSet, uid types.UID) bool {
	owner := metav1.GetControllerOf(rs)
	return owner != nil && owner.UID == uid
}

// deleteDeployment deletes the Deployment name and leaves its ReplicaSets
// to the garbage collector.
func deleteDeployment(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	policy := metav1.DeletePropagationBackground
	require.NoError(t, cs.AppsV1().Deployments(ns).Delete(t.Context(), name, metav1.DeleteOptions{PropagationPolicy: &policy}))
}

// waitForNoReplicaSet waits until the garbage collector has deleted every
// ReplicaSet of the namespace.
func waitForNoReplicaSet(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	wait.For(t, waitFor, func() bool {
		l, err := cs.AppsV1().ReplicaSets(ns).List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		return len(l.Items) == 0
	}, "the garbage collector never deleted the ReplicaSets of "+ns)
}
