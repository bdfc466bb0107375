package scenario_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/domain/scenario"
)

const (
	scenarioA = "acme.fault=%7B%22rules%22:[]%7D"
	scenarioB = "acme.fault=%7B%22rules%22:[%7B%22point%22:%22*%22%7D]%7D"
)

func TestOwnerSays(t *testing.T) {
	for _, tc := range []struct {
		name         string
		child, owner string
		want         bool
	}{
		{"the same scenario", scenarioA, scenarioA, true},
		{"the owner has other members too", scenarioA, "tenant=x," + scenarioA, true},
		{"another scenario", scenarioA, scenarioB, false},
		{"the owner has none", scenarioA, "", false},
		{"the owner's isn't baggage", scenarioA, "not baggage,,", false},
		{"the child has none", "", scenarioA, false},
		{"the child's isn't baggage", "not baggage,,", scenarioA, false},
		{"a member the owner lacks", scenarioA + ",tenant=x", scenarioA, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, scenario.OwnerSays(tc.child, tc.owner))
		})
	}
}

// child returns a Deployment in ns whose controller owner is ref, nil for
// none, and whose annotation holds value.
func child(ns string, ref *metav1.OwnerReference, value string) metav1.Object {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace(ns)
	u.SetName("m")
	u.SetAnnotations(map[string]string{annotation: value})
	if ref != nil {
		u.SetOwnerReferences([]metav1.OwnerReference{*ref})
	}
	return u
}

func controllerRef(apiVersion, kind, name, uid string) *metav1.OwnerReference {
	yes := true
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes}
}

func TestOwners_Trusts_a_child_that_says_what_its_cached_owner_says(t *testing.T) {
	owner := `{"metadata":{"namespace":"ns","name":"m","uid":"u1","annotations":{"` + annotation + `":"` + scenarioA + `"}}}`
	memcached := controllerRef("cache.example.com/v1alpha1", "Memcached", "m", "u1")
	notController := *memcached
	notController.Controller = nil
	for _, tc := range []struct {
		name       string
		child      metav1.Object
		namespaced bool
		cached     map[string]string // by namespace/name
		err        error
		want       bool
	}{
		{"the owner says it", child("ns", memcached, scenarioA), true, map[string]string{"ns/m": owner}, nil, true},
		{"the owner says another", child("ns", memcached, scenarioB), true, map[string]string{"ns/m": owner}, nil, false},
		{"a cluster-scoped owner, read by name", child("ns", memcached, scenarioA), false, map[string]string{"/m": owner}, nil, true},
		{"no controller owner", child("ns", nil, scenarioA), true, map[string]string{"ns/m": owner}, nil, false},
		{"an owner that isn't the controller", child("ns", &notController, scenarioA), true, map[string]string{"ns/m": owner}, nil, false},
		{"another kind", child("ns", controllerRef("cache.example.com/v1alpha1", "Other", "m", "u1"), scenarioA), true, map[string]string{"ns/m": owner}, nil, false},
		{"another group", child("ns", controllerRef("other.example.com/v1alpha1", "Memcached", "m", "u1"), scenarioA), true, map[string]string{"ns/m": owner}, nil, false},
		{"a bad apiVersion", child("ns", controllerRef("a/b/c", "Memcached", "m", "u1"), scenarioA), true, map[string]string{"ns/m": owner}, nil, false},
		{"another uid: a new owner of the same name", child("ns", controllerRef("cache.example.com/v1alpha1", "Memcached", "m", "u2"), scenarioA), true, map[string]string{"ns/m": owner}, nil, false},
		{"an owner not cached", child("ns", memcached, scenarioA), true, nil, nil, false},
		{"an owner in another namespace", child("other", memcached, scenarioA), true, map[string]string{"ns/m": owner}, nil, false},
		{"a cache that fails", child("ns", memcached, scenarioA), true, map[string]string{"ns/m": owner}, errors.New("boom"), false},
		{"an owner that doesn't decode", child("ns", memcached, scenarioA), true, map[string]string{"ns/m": "{"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := scenario.Owners{
				Group: "cache.example.com", Kind: "Memcached", Namespaced: tc.namespaced, Annotation: annotation,
				Get: func(namespace, name string) ([]byte, bool, error) {
					doc, found := tc.cached[namespace+"/"+name]
					return []byte(doc), found, tc.err
				},
				Trust: func(metav1.Object) bool { return true },
			}
			require.Equal(t, tc.want, o.Trusts(tc.child))
		})
	}
}

// The owner vouches for a child only where its own controller would trust
// the owner itself (Trust), and only for a child it names (Names): a
// child of an owner outside staging, or another child the owner's value
// was copied onto, is trusted in nothing.
func TestOwners_Trusts_only_what_the_owner_s_controller_would(t *testing.T) {
	ownerIn := func(ns string) string {
		return `{"metadata":{"namespace":"` + ns + `","name":"m","uid":"u1","annotations":{"` + annotation + `":"` + scenarioA + `"}}}`
	}
	memcached := controllerRef("cache.example.com/v1alpha1", "Memcached", "m", "u1")
	copied := child("staging", memcached, scenarioA)
	copied.SetName("copy")
	staging := func(owner metav1.Object) bool { return owner.GetNamespace() == "staging" }
	sameName := func(owner, child metav1.Object) bool { return child.GetName() == owner.GetName() }
	for _, tc := range []struct {
		name  string
		child metav1.Object
		owner string
		want  bool
		asked []string // the owners Trust is asked about
	}{
		{"an owner in staging, its child", child("staging", memcached, scenarioA), ownerIn("staging"), true, []string{"staging/m"}},
		{"an owner outside staging", child("prod", memcached, scenarioA), ownerIn("prod"), false, []string{"prod/m"}},
		{"the owner's value copied onto another child", copied, ownerIn("staging"), false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			o := scenario.Owners{
				Group: "cache.example.com", Kind: "Memcached", Namespaced: true, Annotation: annotation,
				Get: func(namespace, name string) ([]byte, bool, error) { return []byte(tc.owner), true, nil },
				Trust: func(owner metav1.Object) bool {
					asked = append(asked, owner.GetNamespace()+"/"+owner.GetName())
					return staging(owner)
				},
				Names: sameName,
			}
			require.Equal(t, tc.want, o.Trusts(tc.child))
			require.Equal(t, tc.asked, asked, "the owner's own rule is asked about the owner, once it vouches for the child")
		})
	}
}
