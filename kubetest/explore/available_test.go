package explore_test

import (
	"cmp"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// availability is the Memcached's Available condition, as the Memcached
// example's: its Deployment d's own, once the Deployment controller has
// observed d's latest spec, and Unknown until then or while there is no
// d. early plants availableEarly: True as soon as d exists.
func availability(d *appsv1.Deployment, generation int64, early bool) metav1.Condition {
	c := metav1.Condition{Type: "Available", Status: metav1.ConditionUnknown, Reason: "DeploymentPending", ObservedGeneration: generation}
	switch {
	case d == nil:
	case early:
		c.Status, c.Reason = metav1.ConditionTrue, "DeploymentExists"
	case d.Status.ObservedGeneration >= d.Generation:
		for _, dc := range d.Status.Conditions {
			if dc.Type == appsv1.DeploymentAvailable {
				c.Status, c.Reason = metav1.ConditionStatus(dc.Status), cmp.Or(dc.Reason, c.Reason)
			}
		}
	}
	return c
}
