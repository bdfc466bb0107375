package explore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kubetest/internal/generate"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
)

// TestQuickSeeds pins the first sequences of the seeds make test
// searches for TestExplore's planted bugs from (explore_test.go's
// search): each holds its bug and no fault but the one it needs. A
// change to the generator or to the schedule that moves them fails
// here, in a second, rather than as a search that finds nothing in 90 s:
// pick new seeds then, with the sequences this prints.
func TestQuickSeeds(t *testing.T) {
	crd, err := memcached.Resource("explore.loam.dev").CRD()
	require.NoError(t, err)
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	names := []string{"explore-0", "explore-1"}
	for _, tc := range []struct {
		bug    string
		seed   uint64
		steps  int
		errors bool
		lost   bool
		// kubelet turns the kubelet's faults on.
		kubelet bool
		want    []string
		// old turns old lists on.
		old bool
	}{
		{"ignores updates", 23, 2, false, false, false, []string{`create explore-0 {"size":2}`, `update explore-0 {"image":"memcached:","size":3}`}, false},
		{"not idempotent", 1, 1, false, false, false, []string{`create explore-0 {"size":1}`}, false},
		{"loops", 1, 1, false, false, false, []string{`create explore-0 {"size":1}`}, false},
		{"loses work", 9, 1, false, false, false, []string{`create explore-0 {"size":1}, crashing the operator right after its write 2`}, false},
		{"a finalizer that needs its child", 53, 2, false, false, false, []string{`create explore-0 {"image":"memcached:","size":3}`, `delete explore-0, crashing the operator right after its write 1`}, false},
		{"a stale view", 25, 1, false, false, false, []string{`create explore-0 {"image":"memcached:","size":3}, the operator's view stale from its write 1`}, false},
		{"drops an error", 18, 1, true, false, false, []string{`create explore-1 {"size":2}, failing the operator's request 2 for it as if the API server were unreachable`}, false},
		{"forgets an update when events are skipped", 191, 2, false, true, false, []string{`create explore-1 {"image":"memcached:","size":1}`, `update explore-1 {"image":"memcached:","size":2}, the operator's watches losing events from its write 1`}, false},
		{"reports Available early", 23, 1, false, false, true, []string{`create explore-0 {"size":2}, the kubelet's Pods NeverReady from then on`}, false},
		{"trusts a fresh replica's first view", 9, 1, false, false, false, []string{`create explore-0 {"size":1}, the operator's lists served old from its write 1, crashing the operator right after its write 2`}, true},
	} {
		t.Run(tc.bug, func(t *testing.T) {
			changes, err := generate.New(tc.seed).Steps(&spec, names, tc.steps)
			require.NoError(t, err)
			var faults Faults
			if tc.errors {
				faults.ScenarioAnnotation = "explore.loam.dev/scenario"
			}
			faults.LostEvents = tc.lost
			faults.Kubelet = tc.kubelet
			faults.OldLists = tc.old
			var got []string
			for _, s := range schedule(tc.seed, 0, changes, faults) {
				got = append(got, s.String())
			}
			require.Equal(t, tc.want, got, "seed %d, %d steps", tc.seed, tc.steps)
		})
	}
}
