package explore

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kubetest/internal/corpus"
	"github.com/loam-dev/loam/kubetest/internal/generate"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
)

// keptExplorer returns an explorer of the test's Memcached, ready to read kept
// sequences, as explore_test.go's config makes it: six steps over two
// objects, with faults.
func keptExplorer(t *testing.T, faults Faults) *explorer {
	t.Helper()
	crd, err := memcached.Resource("explore.loam.dev").CRD()
	require.NoError(t, err)
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	return &explorer{specSchema: &spec, names: []string{"explore-0", "explore-1"}, steps: 6, faults: faults, annotation: faults.ScenarioAnnotation}
}

func TestSteps_encode_and_decode(t *testing.T) {
	steps := []Step{
		{Step: generate.Step{Op: generate.Create, Name: "a", Spec: map[string]any{"size": int64(2), "ratio": 0.5, "tags": []any{"x", int64(3)}, "on": true}}, CrashAfter: 2, StaleFrom: 1},
		{Step: generate.Step{Op: generate.Update, Name: "a", Spec: map[string]any{}}, LoseFrom: 2, RestartAfter: 3, FailAt: 4, FailWith: 503},
		{Step: generate.Step{Op: generate.Delete, Name: "a"}, FailAt: 1},
	}
	raw, err := encodeSteps(steps)
	require.NoError(t, err)
	require.JSONEq(t, `{"op":"create","name":"a","spec":{"on":true,"ratio":0.5,"size":2,"tags":["x",3]},"crashAfter":2,"staleFrom":1}`, string(raw[0]))
	require.JSONEq(t, `{"op":"update","name":"a","spec":{},"loseFrom":2,"restartAfter":3,"failAt":4,"failWith":503}`, string(raw[1]))
	require.JSONEq(t, `{"op":"delete","name":"a","failAt":1}`, string(raw[2]), "a fault that isn't there isn't written")
	back, err := decodeSteps(raw)
	require.NoError(t, err)
	require.Equal(t, steps, back, "whole numbers come back as int64, as the generator makes them")

	_, err = decodeSteps([]json.RawMessage{
		json.RawMessage(`{"op":"make","name":"a"}`),
		json.RawMessage(`{"op":"update","crashAfter":-1,"loseFrom":-2,"failWith":500}`),
		json.RawMessage(`{"op":"delete","name":"a","later":1}`),
	})
	require.EqualError(t, err, "step 1: op \"make\": want create, update or delete\n"+
		"step 2: no name; no spec, which a create or an update needs; crashAfter -1: want 0 (none) or more; loseFrom -2: want 0 (none) or more; failWith 500 without failAt\n"+
		"step 3: json: unknown field \"later\"")
}

// TestKept_first_form_migrates checks that a kept sequence of the first
// form, "seed S sequence N", replays the sequence it always did, that
// Run's migration rewrites it with those steps, and that the rewritten
// file replays them whatever the Config then is.
func TestKept_first_form_migrates(t *testing.T) {
	all := Faults{ScenarioAnnotation: "explore.loam.dev/scenario"}
	e := keptExplorer(t, all)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "seed-5-sequence-2"), []byte("# why it was kept\nseed 5 sequence 2\n"), 0o644))
	want, err := e.sequence(5, 2)
	require.NoError(t, err)

	got, err := e.readKept(dir, true)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, want, got[0].steps, "regenerated from its seed with the Config, as before")
	require.NoError(t, got[0].migrate(t, e))

	files, err := corpus.Read(dir)
	require.NoError(t, err)
	require.Len(t, files, 1)
	require.False(t, files[0].Seeded, "rewritten with its steps")
	require.Equal(t, "why it was kept", files[0].Comments[0])

	// Another Config, of other counts and faults, replays the same.
	other := keptExplorer(t, Faults{NoCrashes: true, NoStaleViews: true, ScenarioAnnotation: "explore.loam.dev/scenario"})
	other.steps, other.names = 2, []string{"x"}
	again, err := other.readKept(dir, true)
	require.NoError(t, err)
	require.Len(t, again, 1)
	require.Equal(t, want, again[0].steps)
	require.Nil(t, again[0].seeded, "nothing to migrate")

	// Without the means to fail a request, a kept failed request is a
	// mistake.
	none := keptExplorer(t, Faults{})
	_, err = none.readKept(dir, true)
	require.ErrorContains(t, err, "which needs explore.Config.Faults.ScenarioAnnotation")
}

// TestKept_corpora checks that the test's kept sequences, rewritten with
// their steps, are the sequences their first form named, with the Config
// the test replays them with: explore_test.go's config, transient errors
// on.
func TestKept_corpora(t *testing.T) {
	e := keptExplorer(t, Faults{ScenarioAnnotation: "explore.loam.dev/scenario"})
	root := filepath.Join("testdata", "explore", "TestExplore", "a_correct_operator_passes_the_sequences_that_found_the_planted_bugs")
	for dir, named := range map[string]struct {
		seed     uint64
		sequence int
	}{"ignores_updates": {2, 0}, "loses_work": {5, 2}, "a_finalizer_that_needs_its_child": {4, 14}} {
		t.Run(dir, func(t *testing.T) {
			kept, err := e.readKept(filepath.Join(root, dir), false)
			require.NoError(t, err)
			require.Len(t, kept, 1)
			require.Equal(t, filepath.Join(root, dir, corpus.Name(named.seed, named.sequence)), kept[0].path)
			want, err := e.sequence(named.seed, named.sequence)
			require.NoError(t, err)
			require.Equal(t, want, kept[0].steps)
		})
	}
}

// TestKept_before_lost_events checks that a kept sequence written before
// lost events, whose steps have no loseFrom, reads as it did, losing
// nothing, and that one written since replays its lost events whatever
// the Config.
func TestKept_before_lost_events(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "seed-3-sequence-1"), []byte("# kept before lost events\n"+
		`{"op":"create","name":"explore-0","spec":{"size":2},"staleFrom":1}`+"\n"+
		`{"op":"update","name":"explore-0","spec":{"size":3},"crashAfter":2}`+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "seed-4-sequence-0"), []byte("# kept since\n"+
		`{"op":"update","name":"explore-0","spec":{"size":1},"loseFrom":1}`+"\n"), 0o644))
	kept, err := keptExplorer(t, Faults{}).readKept(dir, true)
	require.NoError(t, err)
	require.Len(t, kept, 2)
	require.Equal(t, []Step{
		{Step: generate.Step{Op: generate.Create, Name: "explore-0", Spec: map[string]any{"size": int64(2)}}, StaleFrom: 1},
		{Step: generate.Step{Op: generate.Update, Name: "explore-0", Spec: map[string]any{"size": int64(3)}}, CrashAfter: 2},
	}, kept[0].steps)
	require.Equal(t, []Step{
		{Step: generate.Step{Op: generate.Update, Name: "explore-0", Spec: map[string]any{"size": int64(1)}}, LoseFrom: 1},
	}, kept[1].steps, "lost events replay with Faults.LostEvents off")
	require.Equal(t, "update explore-0 {\"size\":1}, the operator's watches losing events from its write 1", kept[1].steps[0].String())
}

func TestKeep(t *testing.T) {
	dir := t.TempDir()
	steps := []Step{{Step: generate.Step{Op: generate.Create, Name: "explore-0", Spec: map[string]any{"size": int64(2)}}, CrashAfter: 2}}
	f := &Failure{Seed: 9, Sequence: 3, Steps: steps, Of: 6, Err: os.ErrInvalid, Test: "TestX"}
	path, err := keep(dir, f)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "seed-9-sequence-3"), path)
	e := keptExplorer(t, Faults{})
	kept, err := e.readKept(dir, false)
	require.NoError(t, err)
	require.Len(t, kept, 1)
	require.Equal(t, steps, kept[0].steps, "the minimal sequence, its faults with it")
	files, err := corpus.Read(dir)
	require.NoError(t, err)
	require.Contains(t, files[0].Comments, "sequence 3 of seed 9 fails: invalid argument", "the failure's report says why")

	// A kept sequence that fails again stays as it was.
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	again, err := keep(t.TempDir(), &Failure{Kept: path, Steps: steps[:0], Err: os.ErrInvalid})
	require.NoError(t, err)
	require.Equal(t, path, again)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

func TestFailure_Error(t *testing.T) {
	steps := []Step{
		{Step: generate.Step{Op: generate.Create, Name: "explore-0", Spec: map[string]any{"size": int64(0)}}},
		{Step: generate.Step{Op: generate.Create, Name: "explore-1", Spec: map[string]any{"size": int64(1)}}, CrashAfter: 1},
	}
	f := &Failure{Seed: 4, Sequence: 1, Steps: steps, Of: 5, Refused: []string{"spec.size: Invalid value: 0", ""}, Err: os.ErrInvalid, Test: "TestX/a b"}
	require.Equal(t, "sequence 1 of seed 4 fails: invalid argument\nminimal sequence (2 of 5 steps):\n"+
		"  1. create explore-0 {\"size\":0} (refused by the API server: spec.size: Invalid value: 0)\n"+
		"  2. create explore-1 {\"size\":1}, crashing the operator right after its write 1\n"+
		"replay: go test -run '^TestX/a b$' (Seed 4)", f.Error())
	f.Kept, f.Refused = "testdata/explore/TestX/seed-4-sequence-1", nil
	require.Equal(t, "kept sequence testdata/explore/TestX/seed-4-sequence-1 fails: invalid argument\nminimal sequence (2 of 5 steps):\n"+
		"  1. create explore-0 {\"size\":0}\n"+
		"  2. create explore-1 {\"size\":1}, crashing the operator right after its write 1\n"+
		"replay: go test -run '^TestX/a b$' (kept sequences replay first)", f.Error())
}
