package explore

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/internal/generate"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
)

// spec2 is the test's second version's spec: size renamed replicas.
type spec2 struct {
	Replicas int32  `json:"replicas"`
	Image    string `json:"image,omitempty"`
}

// v2 returns the test's Memcached at version v2, of spec2, in group.
func v2(group string) kube.Resource[spec2, memcached.Status] {
	var s spec2
	return kube.Resource[spec2, memcached.Status]{
		Group: group, Version: "v2", Kind: "Memcached", Plural: "memcacheds", Scope: kube.Namespaced,
		Rules: []kube.TypeRules{kube.Rules(&s, kube.Field(&s.Replicas).Minimum(1))},
	}
}

func toSpec2(s memcached.Spec) (spec2, error) {
	return spec2{Replicas: s.Size, Image: s.Image}, nil
}

// A step's version and whether it is made while the operator is down are
// kept with it, and a kept file of before them still reads, every step
// in the explored version and none made while the operator is down.
func TestKept_steps_keep_their_version_and_down(t *testing.T) {
	steps := []Step{
		{Step: generate.Step{Op: generate.Create, Name: "a", Spec: map[string]any{"size": int64(2)}, Version: "v2"}, Down: true},
		{Step: generate.Step{Op: generate.Update, Name: "a", Spec: map[string]any{"size": int64(1)}}, CrashAfter: 1},
	}
	raw, err := encodeSteps(steps)
	require.NoError(t, err)
	require.JSONEq(t, `{"op":"create","name":"a","spec":{"size":2},"version":"v2","down":true}`, string(raw[0]))
	require.JSONEq(t, `{"op":"update","name":"a","spec":{"size":1},"crashAfter":1}`, string(raw[1]), "neither is written when it isn't there")
	back, err := decodeSteps(raw)
	require.NoError(t, err)
	require.Equal(t, steps, back)

	old, err := decodeSteps([]json.RawMessage{json.RawMessage(`{"op":"create","name":"a","spec":{"size":2},"staleFrom":1}`)})
	require.NoError(t, err)
	require.Equal(t, []Step{{Step: generate.Step{Op: generate.Create, Name: "a", Spec: map[string]any{"size": int64(2)}}, StaleFrom: 1}}, old)
}

// A kept sequence that writes in a version the Config doesn't name is a
// mistake, reported with the others.
func TestKept_a_version_the_Config_does_not_name_is_a_mistake(t *testing.T) {
	e := keptExplorer(t, Faults{})
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "by-hand"), []byte(`{"op":"create","name":"explore-0","spec":{"size":1},"version":"v2"}`+"\n"), 0o644))
	_, err := e.readKept(dir, false)
	require.ErrorContains(t, err, "step 1 is written in v2, which no explore.Config.Versions names")

	e.otherVersions = map[string]version{"v2": {}}
	kept, err := e.readKept(dir, false)
	require.NoError(t, err)
	require.Equal(t, "v2", kept[0].steps[0].Version)
}

// Versions and steps made while the operator is down are drawn from
// streams of their own: turning them on leaves every other draw of the
// seed as it was, and the same seed draws the same ones.
func TestExtend_draws_versions_and_downs_apart(t *testing.T) {
	e := keptExplorer(t, Faults{ScenarioAnnotation: "explore.loam.dev/scenario"})
	before, err := e.sequence(3, 1)
	require.NoError(t, err)
	e.versionNames = []string{"v2"}
	e.faults.Down = true
	after, err := e.sequence(3, 1)
	require.NoError(t, err)
	again, err := e.sequence(3, 1)
	require.NoError(t, err)
	require.Equal(t, after, again, "the same seed, the same sequence")
	var versions, downs int
	for i := range after {
		if after[i].Version != "" {
			versions++
		}
		if after[i].Down {
			downs++
		}
		stripped := after[i]
		stripped.Version, stripped.Down = "", false
		require.Equal(t, before[i], stripped, "step %d: its change and faults are as they were", i+1)
	}
	require.NotZero(t, versions, "some of the six steps are written in v2")
	require.NotEqual(t, len(after), versions, "and some in the explored version")
	t.Logf("%d of %d steps in v2, %d made while the operator is down", versions, len(after), downs)

	for n := range 20 {
		s, err := e.sequence(uint64(n), 0)
		require.NoError(t, err)
		for _, step := range s {
			if step.Down {
				return
			}
		}
	}
	t.Fatal("no step made while the operator is down in 20 sequences of six steps, at odds of 1 in 4")
}

// A step made while the operator is down names it, and its version, in
// a report; the minimal sequence keeps it only when the failure needs it.
func TestStep_down_and_version_in_reports_and_shrinking(t *testing.T) {
	s := Step{Step: generate.Step{Op: generate.Update, Name: "explore-0", Spec: map[string]any{"size": int64(2)}, Version: "v2"}, Down: true, CrashAfter: 1}
	require.Equal(t, `update explore-0 {"size":2} in v2, made while the operator is down, crashing the operator right after its write 1`, s.String())
	require.Equal(t, "delete explore-0 in v2", Step{Step: generate.Step{Op: generate.Delete, Name: "explore-0", Version: "v2"}}.String())

	needsDown := func(steps []Step) bool { return steps[0].Down }
	require.True(t, withoutFaults([]Step{s}, needsDown)[0].Down, "a failure that needs it keeps it")
	require.False(t, withoutFaults([]Step{s}, func([]Step) bool { return true })[0].Down, "one that doesn't drops it")
	require.True(t, faulted([]Step{{Down: true}}), "a sequence with a step made while the operator is down is replayed without it")
}

// The tally says how many changes were made in another version, and how
// many steps while the operator was down, refused then and made after.
func TestTally_counts_versions_and_downs(t *testing.T) {
	var c tally
	create := Step{Step: generate.Step{Op: generate.Create, Name: "a", Spec: map[string]any{"size": int64(1)}, Version: "v2"}, Down: true}
	c.step(create, made{down: true, downRefused: "Internal error occurred: failed calling webhook"})
	c.step(Step{Step: generate.Step{Op: generate.Update, Name: "a", Version: "v2"}}, made{refused: "invalid"})
	c.step(Step{Step: generate.Step{Op: generate.Update, Name: "a"}, Down: true}, made{down: true})
	require.Equal(t, `3 steps (1 refused by the API server, 0 wasted), 0 reconciles (0 succeeded), 1 changes made in another version, `+
		`2 steps made while the operator was down, 1 changes refused while it was down and made once it was back (the first: create a {"size":1} in v2: Internal error occurred: failed calling webhook)`, c.String())
	require.Equal(t, "3 steps (0 refused by the API server, 0 wasted), 0 reconciles (0 succeeded)", tally{steps: 3}.String(), "without either, as before")
}

// Every mistake in Versions is reported, each named by its index.
func TestVersionsOf_reports_every_mistake(t *testing.T) {
	r := memcached.Resource("explore.loam.dev")
	other := v2("other.loam.dev")
	same := v2("explore.loam.dev")
	same.Version = "v1alpha1"
	bad := v2("explore.loam.dev")
	bad.Plural = "Memcacheds!"
	cfg := Config[memcached.Spec, memcached.Status]{Resource: r, Versions: []Version[memcached.Spec]{
		{},
		VersionOf(other, toSpec2),
		VersionOf(same, toSpec2),
		VersionOf(v2("explore.loam.dev"), toSpec2),
		VersionOf(v2("explore.loam.dev"), toSpec2),
		VersionOf(bad, toSpec2),
	}}
	versions, names, err := versionsOf(cfg, nil)
	require.Error(t, err)
	msg := err.Error()
	require.Equal(t, 5, strings.Count(msg, "explore.Config.Versions["), "%v", err)
	require.Contains(t, msg, "explore.Config.Versions[0] has no conversion")
	require.Contains(t, msg, "explore.Config.Versions[1]: Memcached other.loam.dev/v2, Resource=memcacheds is not a version of Memcached")
	require.Contains(t, msg, "explore.Config.Versions[2]: v1alpha1 is the explored version")
	require.Contains(t, msg, "explore.Config.Versions[4]: v2 is given twice")
	require.Contains(t, msg, "explore.Config.Versions[5]: ")
	require.Equal(t, []string{"v2"}, names)

	spec, err := versions["v2"].convert(map[string]any{"size": int64(3), "image": "memcached:1"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"replicas": int64(3), "image": "memcached:1"}, spec, "converted as the user's function says")

	failing := Config[memcached.Spec, memcached.Status]{Resource: r, Versions: []Version[memcached.Spec]{
		VersionOf(v2("explore.loam.dev"), func(memcached.Spec) (spec2, error) { return spec2{}, errors.New("no") }),
	}}
	versions, _, err = versionsOf(failing, nil)
	require.NoError(t, err)
	_, err = versions["v2"].convert(map[string]any{"size": int64(3)})
	require.EqualError(t, err, "no")
}
