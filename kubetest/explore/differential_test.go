package explore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/explore"
	"github.com/loam-dev/loam/kubetest/internal/generate"
)

// differentialSearches searches, with no invariant, for the planted bugs
// that only the invariant found before the differential oracles (issue
// #47), each from its quick seed (explore_test.go): ignoring updates and
// acting on a stale view, found by the fresh creates; and losing work on
// a crash, found by the replay without faults, with the fresh creates
// off (on, they find it first, at the step).
func differentialSearches(t *testing.T, c *kubetest.Cluster) {
	for _, tc := range []struct {
		name    string
		bug     bug
		quick   search
		noFresh bool
		// found checks the minimal failing sequence's failure.
		found func(t *testing.T, f *explore.Failure)
	}{{
		name: "ignores updates", bug: ignoresUpdates,
		// create explore-0 of size 2, update it to size 3.
		quick: search{seed: 23, steps: 2},
		found: func(t *testing.T, f *explore.Failure) {
			require.EqualError(t, f.Err, `after step 2, update explore-0 {"image":"memcached:","size":3}: `+
				`the Memcached explore-0 and a fresh Memcached of the same spec, explore-0-fresh, differ: `+
				`the Deployment it controls, at spec.replicas: 2 (explore-0's explore-0), 3 (the fresh explore-0-fresh's explore-0-fresh)`)
			require.Len(t, f.Steps, 2)
		},
	}, {
		name: "acts on a stale view", bug: staleView,
		// create explore-0, the view stale from write 1.
		quick: search{seed: 25, steps: 1},
		// Its Deployments' names are volatile (volatileFor).
		found: func(t *testing.T, f *explore.Failure) {
			require.Regexp(t, `^after step 1, create explore-0 .*: the Memcached explore-0 and a fresh Memcached of the same spec, explore-0-fresh, differ: `+
				`the Deployment objects it controls: 2 \(explore-0: explore-0-\d+, explore-0-\d+\), 1 \(the fresh explore-0-fresh: explore-0-fresh-\d+\)$`, f.Err.Error())
			require.Equal(t, 1, f.Steps[0].StaleFrom, "the second Deployment needs the stale view")
		},
	}, {
		name: "loses work on a crash", bug: losesWork, noFresh: true,
		// create explore-0, crashing after write 2.
		quick: search{seed: 9, steps: 1},
		found: func(t *testing.T, f *explore.Failure) {
			// No Deployment with the crash, one without. TestExplore's
			// cluster makes no Pod, so neither Memcached's Available
			// follows a Deployment's (both pending, the status the
			// same): the Deployments, compared next, say so.
			require.EqualError(t, f.Err, `the sequence ends elsewhere with its faults than without them: the Memcached explore-0: `+
				`the Deployment objects it controls: 0 (with the faults), 1 (without: explore-0)`)
			require.Equal(t, 2, f.Steps[0].CrashAfter, "the loss needs the crash")
		},
	}} {
		t.Run(tc.name+" is found with no invariant", func(t *testing.T) {
			t.Parallel()
			cfg := config(tc.bug, tc.quick.seed)
			cfg.Invariants, cfg.Steps, cfg.Duration = nil, tc.quick.steps, budget
			cfg.NoFreshCreates = tc.noFresh
			start := time.Now()
			f, err := explore.Find(t, c, cfg)
			require.NoError(t, err)
			require.NotNil(t, f, "seed %d: the planted bug went unfound", cfg.Seed)
			t.Logf("found in %v: %v", time.Since(start).Round(100*time.Millisecond), f)
			require.Equal(t, generate.Create, f.Steps[0].Op)
			tc.found(t, f)
		})
	}

	t.Run("a Volatile entry that doesn't parse is refused with the other mistakes", func(t *testing.T) {
		t.Parallel()
		cfg := config(correct, 1)
		cfg.Steps = -1
		cfg.Volatile = []string{"Deployment.spec.replicas", "deployment", "Memcached.spec.size", "Deployment.spec..x", "Memcached.status.conditions[*].message"}
		_, err := explore.Find(t, c, cfg)
		require.EqualError(t, err, "explore.Config.Steps -1: want 0 (the default) or more\n"+
			`explore.Config.Volatile[1] "deployment": "deployment" is not a kind: want a kind, such as Deployment, then a path, such as .spec.replicas`+"\n"+
			`explore.Config.Volatile[2] "Memcached.spec.size": the oracles compare a Memcached by its status alone: start the path at .status`+"\n"+
			`explore.Config.Volatile[3] "Deployment.spec..x": "..x": want .field, [*] or ['key'] after Deployment.spec`)
	})
}

// volatileFor returns the Config.Volatile of b's operator: staleView
// names each Deployment by the time it made it, as an operator that
// names its children by revision does, so their names differ from one
// object to the next, and say nothing.
func volatileFor(b bug) []string {
	if b == staleView || b == trustsFirstView {
		return []string{"Deployment.metadata.name"}
	}
	return nil
}
