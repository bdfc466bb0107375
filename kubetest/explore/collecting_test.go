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
	}{
		{"nothing written", nil, []unstructured.Unstructured{memcached}, ""},
		{"owner alive", []unstructured.Unstructured{
			obj("apps/v1", "Deployment", "d", "d-uid", owner("cache.example.com/v1", "Memcached", "m", "m-uid")),
		}, []unstructured.Unstructured{memcached}, ""},
		// The case CI met: the last Memcached deleted, so no object of the
		// explored kind is left to say what that kind is.
		{"owner of the explored kind gone, none left", []unstructured.Unstructured{
			obj("policy/v1", "PodDisruptionBudget", "p", "p-uid", owner("cache.example.com/v1", "Memcached", "m", "m-uid")),
		}, nil, "policy/v1 p: its owner Memcached m is gone, and the garbage collector is still to delete it"},
		{"owner named at another version", []unstructured.Unstructured{
			obj("apps/v1", "Deployment", "d", "d-uid", owner("cache.example.com/v1beta1", "Memcached", "m", "gone-uid")),
		}, []unstructured.Unstructured{memcached}, "apps/v1 d: its owner Memcached m is gone, and the garbage collector is still to delete it"},
		{"owner of a written kind gone", []unstructured.Unstructured{
			obj("apps/v1", "Deployment", "d", "d-uid"),
			obj("apps/v1", "ReplicaSet", "r", "r-uid", owner("apps/v1", "Deployment", "old", "old-uid")),
		}, nil, "apps/v1 r: its owner Deployment old is gone, and the garbage collector is still to delete it"},
		{"owner of a kind nobody wrote", []unstructured.Unstructured{
			obj("v1", "ConfigMap", "c", "c-uid", owner("v1", "Node", "n", "n-uid")),
		}, nil, ""},
		{"being deleted", []unstructured.Unstructured{deleting}, nil, "apps/v1 d: still being deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			written := map[string]*unstructured.Unstructured{}
			for i := range tc.written {
				u := &tc.written[i]
				written[u.GetAPIVersion()+" "+u.GetName()] = u
			}
			require.Equal(t, tc.want, collecting(explored, written, tc.owners))
		})
	}
}
