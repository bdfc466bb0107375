package explore_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/explore"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
)

// refusing is the Memcached resource in a group of its own, with a CEL
// rule by which the API server refuses every spec: a rule the generator
// doesn't solve, at its worst.
var refusing = func() kube.Resource[memcached.Spec, memcached.Status] {
	r := memcached.Resource("refusing.explore.loam.dev")
	r.Rules[0] = r.Rules[0].Validation("self.size < 1", "refuses every spec")
	return r
}()

// exploresNothing explores refusesEverySpec, issue #47's empty run: the
// API server refuses every spec, so no Memcached is ever made and the
// operator, whose every reconcile would panic, never reconciles. Such a
// run found nothing wrong, and must say that it explored nothing.
func exploresNothing(t *testing.T, c *kubetest.Cluster) {
	cfg := config(refusesEverySpec, 1)
	cfg.Resource, cfg.Invariants, cfg.Sequences, cfg.Steps = refusing, nil, 1, 2
	f, err := explore.Find(t, c, cfg)
	require.Nil(t, f, "nothing happened to fail")
	require.ErrorIs(t, err, explore.ErrEmpty)
	// Sequence 0 of seed 1 creates explore-0 and explore-1: both
	// refused.
	require.ErrorContains(t, err, `2 of 2 steps refused by the API server, 0 more wasted (the first refused: create explore-0 {"size":1}: `+
		`Memcached.refusing.explore.loam.dev "explore-0" is invalid: spec: Invalid value: refuses every spec)`)
	require.ErrorContains(t, err, "; and no reconcile succeeded, of 0")
}

// keptMistakes checks that the kept sequences' mistakes, and the seed
// objects', are reported with the rest of the Config's, in one error.
func keptMistakes(t *testing.T, c *kubetest.Cluster) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"fails-a-request": `{"op":"create","name":"explore-0","spec":{"size":1},"failAt":2,"failWith":500}` + "\n",
		"no-op":           `{"name":"explore-0"}` + "\n",
		"not-json":        "{\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	cfg := config(correct, 1)
	cfg.Corpus, cfg.LoopRate = dir, -1
	cfg.ConfigMaps = []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "flags", Namespace: "default"}}}
	cfg.References = map[string]string{"image": "Secret"}
	_, err := explore.Find(t, c, cfg)
	require.EqualError(t, err, "explore.Config.LoopRate -1: want 0 (the default) or more\n"+
		"explore.Config.ConfigMaps[0] flags: namespace \"default\": leave it empty, each replay has a namespace of its own\n"+
		"explore.Config.References[\"image\"]: no Secret to name: give the Config's Secrets\n"+
		"kept sequence "+filepath.Join(dir, "not-json")+": line 1: \"{\": a step that isn't JSON\n"+
		"kept sequence "+filepath.Join(dir, "fails-a-request")+": step 1 fails the operator's request 2, which needs explore.Config.Faults.ScenarioAnnotation\n"+
		"kept sequence "+filepath.Join(dir, "no-op")+": step 1: op \"\": want create, update or delete")
}
