package explore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func TestCollecting(t *testing.T) {
	explored := schema.GroupKind{Group: "cache.example.com", Kind: "Memcached"}
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	obj := func(apiVersion, kind, name string, uid types.UID, owners ...metav1.OwnerReference) unstructured.Unstructured {
		var u unstructured.Unstructured
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName(name)
		u.SetUID(uid)
		u.SetOwnerReferences(owners)
		return u
	}
	owner := func(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid}
	}
	memcached := obj("cache.example.com/v1", "Memcached", "m", "m-uid")
	deleting := obj("apps/v1", "Deployment", "d", "d-uid")
	deleting.SetDeletionTimestamp(&metav1.Time{Time: time.Unix(1, 0)})
	for _, tc := range []struct {
		name    string
		written []unstructured.Unstructured
		owners  []unstructured.Unstructured
		want    string
		// earlier are kinds the operator wrote earlier in the replay.
		earlier []schema.GroupKind
	}{
		{"nothing written", nil, []unstructured.Unstructured{memcached}, "", nil},
		{"owner alive", []unstructured.Unstructured{
			obj("apps/v1", "Deployment", "d", "d-uid", owner("cache.example.com/v1", "Memcached", "m", "m-uid")),
		}, []unstructured.Unstructured{memcached}, "", nil},
		// The case CI met: the last Memcached deleted, so no object of the
		// explored kind is left to say what that kind is.
		{"owner of the explored kind gone, none left", []unstructured.Unstructured{
			obj("policy/v1", "PodDisruptionBudget", "p", "p-uid", owner("cache.example.com/v1", "Memcached", "m", "m-uid")),
		}, nil, "policy/v1 p: its owner Memcached m is gone, and the garbage collector is still to delete it", nil},
		{"owner named at another version", []unstructured.Unstructured{
			obj("apps/v1", "Deployment", "d", "d-uid", owner("cache.example.com/v1beta1", "Memcached", "m", "gone-uid")),
		}, []unstructured.Unstructured{memcached}, "apps/v1 d: its owner Memcached m is gone, and the garbage collector is still to delete it", nil},
		{"owner of a written kind gone", []unstructured.Unstructured{
			obj("apps/v1", "Deployment", "d", "d-uid"),
			obj("apps/v1", "ReplicaSet", "r", "r-uid", owner("apps/v1", "Deployment", "old", "old-uid")),
		}, nil, "apps/v1 r: its owner Deployment old is gone, and the garbage collector is still to delete it", nil},
		// The case the Memcached example's ten-minute run met: a
		// PodDisruptionBudget owned by a Deployment, the last of which
		// is gone.
		{"owner of a kind written earlier gone, none left", []unstructured.Unstructured{
			obj("policy/v1", "PodDisruptionBudget", "p", "p-uid", owner("apps/v1", "Deployment", "d", "d-uid")),
		}, nil, "policy/v1 p: its owner Deployment d is gone, and the garbage collector is still to delete it", []schema.GroupKind{deployment}},
		{"owner of a kind nobody wrote", []unstructured.Unstructured{
			obj("v1", "ConfigMap", "c", "c-uid", owner("v1", "Node", "n", "n-uid")),
		}, nil, "", nil},
		{"being deleted", []unstructured.Unstructured{deleting}, nil, "apps/v1 d: still being deleted", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			written := map[string]*unstructured.Unstructured{}
			for i := range tc.written {
				u := &tc.written[i]
				written[u.GetAPIVersion()+" "+u.GetName()] = u
			}
			w := &writes{}
			for _, k := range tc.earlier {
				w.kinds(k, nil)
			}
			require.Equal(t, tc.want, collecting(w.kinds(explored, written), written, tc.owners))
		})
	}
}

// TestWritesCollecting follows the checks of a replay as the Memcached
// example's sequence 8 of seed 1 met them: a check that reads the
// operator's Deployment and the PodDisruptionBudget it owns, then,
// after the last Memcached and its Deployment are deleted, one that
// reads the budget alone, its owner gone and no Deployment left to say
// what kind that owner was. The collector is still to delete it: the
// second check must wait, not take the collector's delete for the
// operator's write.
func TestWritesCollecting(t *testing.T) {
	explored := schema.GroupKind{Group: "cache.example.com", Kind: "Memcached"}
	deployment := &unstructured.Unstructured{}
	deployment.SetAPIVersion("apps/v1")
	deployment.SetKind("Deployment")
	deployment.SetName("d")
	deployment.SetUID("d-uid")
	budget := &unstructured.Unstructured{}
	budget.SetAPIVersion("policy/v1")
	budget.SetKind("PodDisruptionBudget")
	budget.SetName("p")
	budget.SetUID("p-uid")
	budget.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "d-uid"}})

	w := &writes{}
	require.Empty(t, w.collecting(explored, map[string]*unstructured.Unstructured{"apps/v1 d": deployment, "policy/v1 p": budget}, nil), "the owner is alive")
	require.Equal(t, "policy/v1 p: its owner Deployment d is gone, and the garbage collector is still to delete it",
		w.collecting(explored, map[string]*unstructured.Unstructured{"policy/v1 p": budget}, nil),
		"a kind the operator wrote stays known after its last object is gone")
}
