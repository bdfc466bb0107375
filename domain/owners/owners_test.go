package owners_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/domain/owners"
	"github.com/loam-dev/loam/ports"
)

func ref(apiVersion, kind, name string, controller *bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: controller}
}

func TestOwner_Key(t *testing.T) {
	yes, no := new(true), new(false)
	memcached := owners.Owner{Group: "cache.example.com", Kind: "Memcached", Namespaced: true}
	namespace := owners.Owner{Group: "", Kind: "Namespace", Namespaced: false}

	for _, tc := range []struct {
		name      string
		owner     owners.Owner
		namespace string
		refs      []metav1.OwnerReference
		want      ports.Key
		found     bool
	}{
		{"the controller reference", memcached, "ns", []metav1.OwnerReference{ref("cache.example.com/v1alpha1", "Memcached", "m", yes)}, ports.Key{Namespace: "ns", Name: "m"}, true},
		{"another version of the group", memcached, "ns", []metav1.OwnerReference{ref("cache.example.com/v2", "Memcached", "m", yes)}, ports.Key{Namespace: "ns", Name: "m"}, true},
		{"after references that aren't the controller", memcached, "ns", []metav1.OwnerReference{
			ref("cache.example.com/v1alpha1", "Memcached", "other", nil),
			ref("cache.example.com/v1alpha1", "Memcached", "other", no),
			ref("cache.example.com/v1alpha1", "Memcached", "m", yes),
		}, ports.Key{Namespace: "ns", Name: "m"}, true},
		{"no owner reference", memcached, "ns", nil, ports.Key{}, false},
		{"controller unset", memcached, "ns", []metav1.OwnerReference{ref("cache.example.com/v1alpha1", "Memcached", "m", nil)}, ports.Key{}, false},
		{"controller false", memcached, "ns", []metav1.OwnerReference{ref("cache.example.com/v1alpha1", "Memcached", "m", no)}, ports.Key{}, false},
		{"another group", memcached, "ns", []metav1.OwnerReference{ref("other.example.com/v1alpha1", "Memcached", "m", yes)}, ports.Key{}, false},
		{"another kind", memcached, "ns", []metav1.OwnerReference{ref("cache.example.com/v1alpha1", "Redis", "m", yes)}, ports.Key{}, false},
		{"the core group for a grouped kind", memcached, "ns", []metav1.OwnerReference{ref("v1", "Memcached", "m", yes)}, ports.Key{}, false},
		{"an apiVersion that doesn't parse", memcached, "ns", []metav1.OwnerReference{ref("a/b/c", "Memcached", "m", yes)}, ports.Key{}, false},
		{"no name", memcached, "ns", []metav1.OwnerReference{ref("cache.example.com/v1alpha1", "Memcached", "", yes)}, ports.Key{}, false},
		{"a namespaced owner of a cluster-scoped resource", memcached, "", []metav1.OwnerReference{ref("cache.example.com/v1alpha1", "Memcached", "m", yes)}, ports.Key{}, false},
		{"a cluster-scoped owner of a namespaced resource", namespace, "team-a", []metav1.OwnerReference{ref("v1", "Namespace", "team-a", yes)}, ports.Key{Name: "team-a"}, true},
		{"a cluster-scoped owner of a cluster-scoped resource", namespace, "", []metav1.OwnerReference{ref("v1", "Namespace", "team-a", yes)}, ports.Key{Name: "team-a"}, true},
		{"a grouped reference to a core kind", namespace, "team-a", []metav1.OwnerReference{ref("apps/v1", "Namespace", "team-a", yes)}, ports.Key{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := tc.owner.Key(tc.namespace, tc.refs)
			require.Equal(t, tc.found, found)
			require.Equal(t, tc.want, got)
			// Controller agrees, and names the controlling object's uid.
			key, uid, found := tc.owner.Controller(tc.namespace, tc.refs)
			require.Equal(t, tc.found, found)
			require.Equal(t, tc.want, key)
			if found {
				require.Equal(t, types.UID("uid-"+tc.want.Name), uid)
			} else {
				require.Empty(t, uid)
			}
		})
	}
}
