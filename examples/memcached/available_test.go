package memcached

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Deployment whose controller hasn't yet seen its latest spec still
// reports the availability of the spec before, such as the Deployment of
// one replica that a Memcached scaled to three has just been applied as:
// the Memcached's Available is Unknown, pending, until the Deployment
// controller has caught up, never the old spec's True.
func TestAvailable_waits_for_the_Deployment_controller_to_see_the_spec(t *testing.T) {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "default", Generation: 2},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 1, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
				Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.",
			}},
		},
	}
	c := available(d, 3)
	require.Equal(t, metav1.ConditionUnknown, c.Status, "the old spec's availability says nothing of the new one's")
	require.Equal(t, "DeploymentPending", c.Reason)
	require.Equal(t, "waiting for the Deployment controller to observe the Deployment's latest spec", c.Message)
	require.Equal(t, int64(3), c.ObservedGeneration)

	d.Status.ObservedGeneration = 2
	c = available(d, 3)
	require.Equal(t, metav1.ConditionTrue, c.Status, "caught up: its own condition")
	require.Equal(t, "MinimumReplicasAvailable", c.Reason)
}
