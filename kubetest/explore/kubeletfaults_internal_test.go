package explore

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/internal/generate"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
)

// TestSchedule_kubelet checks that kubelet faults come from a stream of
// their own: turning them on changes no other fault of any seed, and
// off, none is set.
func TestSchedule_kubelet(t *testing.T) {
	crd, err := memcached.Resource("explore.loam.dev").CRD()
	require.NoError(t, err)
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	seen := map[string]bool{}
	for seed := range uint64(20) {
		changes, err := generate.New(seed).Steps(&spec, []string{"explore-0", "explore-1"}, 8)
		require.NoError(t, err)
		off := schedule(seed, 0, changes, Faults{ScenarioAnnotation: "a"})
		on := schedule(seed, 0, changes, Faults{ScenarioAnnotation: "a", Kubelet: true})
		for i := range on {
			require.Empty(t, off[i].Kubelet, "off, none")
			seen[on[i].Kubelet] = true
			on[i].Kubelet = ""
		}
		require.Equal(t, off, on, "seed %d: the other faults stay as they were", seed)
	}
	for _, k := range append([]string{""}, kubeletFaults...) {
		require.True(t, seen[k], "%q drawn", k)
	}
}

func TestKubelet_kept(t *testing.T) {
	steps := []Step{
		{Step: generate.Step{Op: generate.Create, Name: "a", Spec: map[string]any{}}, Kubelet: "NeverReady"},
		{Step: generate.Step{Op: generate.Delete, Name: "a"}, Kubelet: "Healthy"},
		{Step: generate.Step{Op: generate.Delete, Name: "a"}},
	}
	raw, err := encodeSteps(steps)
	require.NoError(t, err)
	require.JSONEq(t, `{"op":"create","name":"a","spec":{},"kubelet":"NeverReady"}`, string(raw[0]))
	require.JSONEq(t, `{"op":"delete","name":"a"}`, string(raw[2]), "no kubelet fault, as kept files had before them")
	back, err := decodeSteps(raw)
	require.NoError(t, err)
	require.Equal(t, steps, back)

	_, err = decodeSteps([]json.RawMessage{
		json.RawMessage(`{"op":"delete","name":"a","kubelet":"Sleepy"}`),
		json.RawMessage(`{"op":"delete","name":"a","kubelet":"PartlyReady=-1"}`),
	})
	require.EqualError(t, err, "step 1: kubelet \"Sleepy\": want Healthy, NeverReady, CrashLoop or PartlyReady=n\n"+
		"step 2: kubelet \"PartlyReady=-1\": want Healthy, NeverReady, CrashLoop or PartlyReady=n")

	require.NoError(t, keptKubeletMistake("f", steps, ""))
	require.EqualError(t, keptKubeletMistake("f", steps, "kubetest.WithFakeKubelet(kubelet.Config{})"),
		"kept sequence f: step 1 sets the kubelet's fault NeverReady, which needs a cluster started with kubetest.WithFakeKubelet(kubelet.Config{})")
}

// TestKubelet_needs_the_fake_kubelet checks that kubelet faults on a
// cluster without the fake kubelet and the workload controllers are a
// mistake that names the options to add.
func TestKubelet_needs_the_fake_kubelet(t *testing.T) {
	bare := &kubetest.Cluster{}
	require.NoError(t, kubeletMistakes(bare, Faults{}))
	require.EqualError(t, kubeletMistakes(bare, Faults{Kubelet: true}),
		"explore.Config.Faults.Kubelet: the cluster runs no fake kubelet to fail Pods with: start it with kubetest.WithFakeKubelet(kubelet.Config{}) and kubetest.WithWorkloadControllers()")
}

// TestKubelet_is_the_worlds checks that a kubelet fault is no fault of
// the operator's, for the replay without faults, that it is reported,
// and that the shrinking drops one the failure doesn't need.
func TestKubelet_is_the_worlds(t *testing.T) {
	s := Step{Step: generate.Step{Op: generate.Create, Name: "explore-0", Spec: map[string]any{"size": int64(3)}}, Kubelet: "PartlyReady=1"}
	require.False(t, faulted([]Step{s}), "no replay without faults for the kubelet's alone")
	require.Equal(t, `create explore-0 {"size":3}, the kubelet's Pods PartlyReady=1 from then on`, s.String())

	needs := []Step{s, {Step: s.Step, Kubelet: "CrashLoop", CrashAfter: 1}}
	shrunk := withoutFaults(needs, func(steps []Step) bool { return steps[0].Kubelet != "" })
	require.Equal(t, []Step{s, {Step: s.Step}}, shrunk, "the first step's kubelet fault is needed, the second's faults aren't")
}
