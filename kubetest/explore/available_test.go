package explore_test

import (
	"cmp"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/explore"
	"github.com/loam-dev/loam/kubetest/internal/corpus"
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

// TestExploreWithPods explores on a cluster whose Deployments' Pods come
// alive (startCluster's pods): the correct operator, under every fault
// the kubelet's included, so that the health oracle is seen to raise no
// false alarm, and make explore's long exploration; its replay of the
// sequence that found availableEarly; and the search for availableEarly,
// which only the kubelet's faults show.
func TestExploreWithPods(t *testing.T) {
	c := startCluster(t, true)

	t.Run("a correct operator explores clean", func(t *testing.T) {
		cfg := config(correct, 1)
		cfg.Faults.ScenarioAnnotation = scenarioAnnotation
		// The kubelet's faults, which the health oracle checks the
		// operator's Available condition under: make test replays the
		// sequence kept here, written by hand through each of them, the
		// only test that the health oracle raises no false alarm;
		// TestExplore explores sequence 0 of seed 1 without them, on
		// its cluster, where a step waits for no Pod. make explore
		// explores here, with every fault.
		cfg.Faults.Kubelet = true
		if *duration == 0 {
			cfg.KeptOnly, cfg.Sequences = true, 0
			cfg.NoUnfaultedReplays = true
			t.Parallel()
			explore.Run(t, c, cfg)
			return
		}
		// make explore's exploration restarts the API server too, so it
		// runs alone, before the search and the replays. A cluster of
		// its own beside them would add to the work the searches run
		// beside, which hides forgetsSkipped (startCluster).
		cfg.Sequences = 1
		cfg.Duration = *duration
		cfg.Faults.Restarts, cfg.Faults.LostEvents, cfg.Faults.OldLists, cfg.Faults.Down = true, true, true, true
		explore.Run(t, c, cfg)
	})

	correctReplays(t, c, "a correct operator passes the sequences that found the planted bugs", "reports Available early")
	// The false alarm kept in a subtest of its own, not in the
	// exploration's corpus: replayed beside the exploration's sequence
	// rather than before it, the two in parallel, as the cluster's
	// longest subtest was the two one after the other.
	correctReplays(t, c, "a correct operator passes the sequences that raised false alarms", "a Deployment revision")

	for _, tc := range plantedBugs() {
		if tc.kubelet {
			searchFor(t, c, tc)
		}
	}
}

// correctReplays replays, with the correct operator on c, the sequences
// kept in the corpora of the subtests found of the subtest name.
func correctReplays(t *testing.T, c *kubetest.Cluster, name string, found ...string) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		// Each sequence, kept in its subtest's corpus, restarts nothing,
		// so the replays run beside the searches, each on its own.
		t.Parallel()
		for _, found := range found {
			t.Run(found, func(t *testing.T) {
				t.Parallel()
				require.False(t, keptRestarts(t, corpus.Dir(t)), "a sequence kept here runs beside the searches: it mustn't restart the API server")
				cfg := config(correct, 0)
				cfg.KeptOnly = true
				cfg.Sequences = 0
				cfg.Faults.ScenarioAnnotation = scenarioAnnotation
				// A second replay of each without its faults would
				// double make test's share (issue #41); the correct
				// operator's exploration, and make explore, compare
				// faulted and unfaulted ends.
				cfg.NoUnfaultedReplays = *duration == 0
				explore.Run(t, c, cfg)
			})
		}
	})
}
