package explore

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseVolatile(t *testing.T) {
	for _, tc := range []struct {
		entry string
		want  volatile
	}{
		{"Deployment", volatile{kind: "Deployment"}},
		{"Deployment.spec.replicas", volatile{kind: "Deployment", path: []string{"spec", "replicas"}}},
		{"Deployment.metadata.annotations['example.com/at']", volatile{kind: "Deployment", path: []string{"metadata", "annotations", "example.com/at"}}},
		{"Memcached.status.conditions[*].message", volatile{kind: "Memcached", path: []string{"status", "conditions", every, "message"}}},
		{"Memcached.status.conditions[*]", volatile{kind: "Memcached", path: []string{"status", "conditions"}}},
	} {
		t.Run(tc.entry, func(t *testing.T) {
			got, err := parseVolatile([]string{tc.entry}, "Memcached")
			require.NoError(t, err)
			require.Equal(t, []volatile{tc.want}, got)
		})
	}
	_, err := parseVolatile([]string{"", "Deployment[*]", "Deployment.spec[*][*]", "Memcached", "Deployment.spec['x"}, "Memcached")
	require.EqualError(t, err, `explore.Config.Volatile[0] "": "" is not a kind: want a kind, such as Deployment, then a path, such as .spec.replicas`+"\n"+
		`explore.Config.Volatile[1] "Deployment[*]": [*] after Deployment: it follows a field that holds a list`+"\n"+
		`explore.Config.Volatile[2] "Deployment.spec[*][*]": [*] after Deployment.spec[*]: it follows a field that holds a list`+"\n"+
		`explore.Config.Volatile[3] "Memcached": the oracles compare a Memcached by its status alone: start the path at .status`+"\n"+
		`explore.Config.Volatile[4] "Deployment.spec['x": "['x": want .field, [*] or ['key'] after Deployment.spec`)
}

// memcachedAt returns a Memcached name in ns, of uid, at generation,
// whose status observes it.
func memcachedAt(name, ns, uid string, generation int64, reason string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "explore.loam.dev/v1alpha1", "kind": "Memcached",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": uid, "generation": generation},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Ready", "status": "True", "reason": reason, "message": name + " in " + ns,
			"observedGeneration": generation, "lastTransitionTime": "2026-12-07T17:00:0" + uid + "Z",
		}}},
	}}
}

// child returns a kind named name in ns, controlled by owner, with
// replicas, as an operator writes it.
func child(kind, name, ns, uid string, owner *unstructured.Unstructured, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": kind,
		"metadata": map[string]any{
			"name": name, "namespace": ns, "uid": uid, "resourceVersion": uid, "generation": int64(len(uid)),
			"creationTimestamp": "2026-12-07T17:00:00Z", "managedFields": []any{map[string]any{"manager": uid}},
			"labels": map[string]any{"memcached": owner.GetName()},
			"ownerReferences": []any{map[string]any{
				"apiVersion": owner.GetAPIVersion(), "kind": owner.GetKind(), "name": owner.GetName(), "uid": string(owner.GetUID()), "controller": true,
			}},
		},
		"spec":   map[string]any{"replicas": replicas},
		"status": map[string]any{"replicas": int64(len(uid))},
	}}
}

func TestCompare(t *testing.T) {
	// The namespace holds the stepped object's name, as a replay's may.
	const ns = "testexplore-0abc"
	stepped := memcachedAt("explore-0", ns, "1", 3, "Applied")
	fresh := memcachedAt("explore-0-fresh", ns, "2", 1, "Applied")
	deployment := child("Deployment", "explore-0", ns, "11", stepped, 2)
	written := map[string]*unstructured.Unstructured{
		"a": deployment,
		"b": child("Deployment", "explore-0-fresh", ns, "21", fresh, 2),
		// Grandchildren, through the Deployments.
		"c": child("PodDisruptionBudget", "explore-0", ns, "12", deployment, 1),
		"d": child("PodDisruptionBudget", "explore-0-fresh", ns, "22", written2(fresh, ns), 1),
		// Not controlled: an owner's reference alone.
		"e": func() *unstructured.Unstructured {
			u := child("ConfigMap", "shared", ns, "13", stepped, 0)
			refs := u.GetOwnerReferences()
			refs[0].Controller = nil
			u.SetOwnerReferences(refs)
			return u
		}(),
	}
	a, b := outcomeOf(stepped, written, nil), outcomeOf(fresh, written, nil)
	require.Nil(t, compare(a, b, nil), "the same spec, made twice: names, uids, versions, times and generations apart")
	require.Equal(t, map[string]any{"conditions": []any{map[string]any{
		"type": "Ready", "status": "True", "reason": "Applied", "message": "$(NAME) in $(NAMESPACE)",
	}}}, a.status)
	require.Len(t, a.owned["PodDisruptionBudget"], 1, "a grandchild is owned")
	require.NotContains(t, a.owned, "ConfigMap", "an owner's reference that doesn't control owns nothing")
	require.Equal(t, map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{
			"name": "$(NAME)", "labels": map[string]any{"memcached": "$(NAME)"},
			"ownerReferences": []any{map[string]any{"apiVersion": "explore.loam.dev/v1alpha1", "kind": "Memcached", "name": "$(NAME)", "controller": true}},
		},
		"spec": map[string]any{"replicas": int64(2)},
	}, a.owned["Deployment"][0].obj)

	// A field apart.
	written["b"] = child("Deployment", "explore-0-fresh", ns, "21", fresh, 3)
	b = outcomeOf(fresh, written, nil)
	d := compare(a, b, nil)
	require.NotNil(t, d)
	require.Equal(t, "the Deployment it controls, at spec.replicas: 2 (explore-0's explore-0), 3 (the fresh's explore-0-fresh)", d.describe("explore-0", "the fresh"))
	vs, err := parseVolatile([]string{"Deployment.spec.replicas"}, "Memcached")
	require.NoError(t, err)
	require.Nil(t, compare(outcomeOf(stepped, written, vs), outcomeOf(fresh, written, vs), vs), "volatile")

	// A status apart.
	other := memcachedAt("explore-0-fresh", ns, "2", 1, "Pending")
	d = compare(a, outcomeOf(other, written, nil), nil)
	require.Equal(t, `status.conditions[0].reason: "Applied" (a), "Pending" (b)`, d.describe("a", "b"))
	vs, err = parseVolatile([]string{"Memcached.status.conditions[*].reason", "Deployment.spec"}, "Memcached")
	require.NoError(t, err)
	require.Nil(t, compare(outcomeOf(stepped, written, vs), outcomeOf(other, written, vs), vs), "volatile")

	// A child more.
	written["f"] = child("Deployment", "explore-0-x", ns, "14", stepped, 2)
	a = outcomeOf(stepped, written, nil)
	d = compare(a, b, nil)
	require.Equal(t, "the Deployment objects it controls: 2 (a: explore-0, explore-0-x), 1 (b: explore-0-fresh)", d.describe("a", "b"))
	vs, err = parseVolatile([]string{"Deployment"}, "Memcached")
	require.NoError(t, err)
	d = compare(outcomeOf(stepped, written, vs), outcomeOf(fresh, written, vs), vs)
	require.Equal(t, "the Deployment it controls, at spec.replicas: 2 (a's explore-0), 3 (b's explore-0-fresh)", d.describe("a", "b"),
		"a volatile kind's objects that both sides have are compared")
	delete(written, "b")
	delete(written, "d")
	require.Nil(t, compare(outcomeOf(stepped, written, vs), outcomeOf(fresh, written, vs), append(vs, volatile{kind: "PodDisruptionBudget"})),
		"which objects of a volatile kind there are is volatile")
}

// written2 returns the fresh Deployment of TestCompare, as its
// PodDisruptionBudget's owner.
func written2(fresh *unstructured.Unstructured, ns string) *unstructured.Unstructured {
	return child("Deployment", "explore-0-fresh", ns, "21", fresh, 2)
}

func TestOutcomeOf_generateName(t *testing.T) {
	parent := memcachedAt("explore-1", "ns", "1", 1, "Applied")
	u := child("Secret", "explore-1-token-x7k2p", "ns", "5", parent, 0)
	u.SetGenerateName("explore-1-token-")
	got := outcomeOf(parent, map[string]*unstructured.Unstructured{"s": u}, nil)
	require.Equal(t, "$(NAME)-token-", got.owned["Secret"][0].key, "a generated name is compared by what it was generated from")
}

func TestExplorerOutcome_scenario(t *testing.T) {
	parent := memcachedAt("explore-0", "ns", "1", 1, "Applied")
	a := child("Deployment", "explore-0", "ns", "2", parent, 1)
	a.SetAnnotations(map[string]string{"explore.loam.dev/scenario": "loam.explore={}"})
	b := child("Deployment", "explore-0-b", "ns", "3", parent, 1)
	b.SetAnnotations(map[string]string{"explore.loam.dev/scenario": "loam.explore={}", "kept": "yes"})
	e := &explorer{annotation: "explore.loam.dev/scenario"}
	got := e.outcome(parent, map[string]*unstructured.Unstructured{"a": a, "b": b})
	require.NotContains(t, got.owned["Deployment"][0].obj["metadata"], "annotations", "the scenario loam carries on to children is the explorer's")
	require.Equal(t, map[string]any{"kept": "yes"}, got.owned["Deployment"][1].obj["metadata"].(map[string]any)["annotations"])
}

func TestReplaceWord(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{"explore-0", "N"},
		{"explore-0-cache", "N-cache"},
		{"memcached=explore-0,explore-0", "memcached=N,N"},
		{"testexplore-0kozf3", "testexplore-0kozf3"},
		{"explore-01", "explore-01"},
		{"annotations", "annotations"},
	} {
		require.Equal(t, tc.want, replaceWord(tc.s, "explore-0", "N"), tc.s)
	}
	require.Equal(t, "annotations", replaceWord("annotations", "ns", "N"))
}

// TestOutcomeOf_revision checks that a Deployment's revision, which the
// Deployment controller counts up at each rollout, isn't compared: a
// stepped Deployment rolled out twice and a fresh one of the same spec
// are alike (a false alarm of the fresh create's once the explorer ran
// the workload controllers).
func TestOutcomeOf_revision(t *testing.T) {
	stepped := memcachedAt("explore-0", "ns", "1", 1, "Applied")
	fresh := memcachedAt("explore-0-fresh", "ns", "2", 1, "Applied")
	a := child("Deployment", "explore-0", "ns", "3", stepped, 2)
	a.SetAnnotations(map[string]string{revisionAnnotation: "2"})
	b := child("Deployment", "explore-0-fresh", "ns", "4", fresh, 2)
	b.SetAnnotations(map[string]string{revisionAnnotation: "1", "kept": "yes"})
	got := compare(outcomeOf(stepped, map[string]*unstructured.Unstructured{"a": a}, nil), outcomeOf(fresh, map[string]*unstructured.Unstructured{"b": b}, nil), nil)
	require.NotNil(t, got, "the other annotations are compared")
	require.Equal(t, "metadata.annotations", got.path)
	b.SetAnnotations(map[string]string{revisionAnnotation: "1"})
	require.Nil(t, compare(outcomeOf(stepped, map[string]*unstructured.Unstructured{"a": a}, nil), outcomeOf(fresh, map[string]*unstructured.Unstructured{"b": b}, nil), nil))
}
