package kube_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/loam-dev/loam/kube"
)

// shop is an Owner in the namespace "shop".
var shop = kube.Owner{APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached", Name: "shop", UID: "uid-shop", Namespace: "shop"}

func TestOwner_ControllerReference(t *testing.T) {
	want := metav1.OwnerReference{
		APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached", Name: "shop", UID: "uid-shop",
		Controller: new(true), BlockOwnerDeletion: new(true),
	}
	clusterOwner := kube.Owner{APIVersion: "v1", Kind: "Namespace", Name: "shop", UID: "uid-ns"}
	for _, tc := range []struct {
		name      string
		owner     kube.Owner
		namespace string
		want      *metav1.OwnerReference
		mistakes  []string
	}{
		{name: "same namespace", owner: shop, namespace: "shop", want: &want},
		{name: "a cluster-scoped owner of a namespaced object", owner: clusterOwner, namespace: "shop",
			want: &metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: "shop", UID: "uid-ns", Controller: new(true), BlockOwnerDeletion: new(true)}},
		{name: "another namespace", owner: shop, namespace: "other",
			mistakes: []string{`the Owner Memcached "shop" is in the namespace "shop", and the object in "other"`}},
		{name: "a cluster-scoped child of a namespaced owner", owner: shop, namespace: "",
			mistakes: []string{`the Owner Memcached "shop" is in the namespace "shop", and the object is cluster-scoped`}},
		{name: "zero", owner: kube.Owner{}, namespace: "shop", mistakes: []string{"the Owner is zero"}},
		{name: "every field missing at once", owner: kube.Owner{APIVersion: "a/b/c", Namespace: "x"}, namespace: "shop",
			mistakes: []string{"the Owner's APIVersion: unexpected GroupVersion string: a/b/c", "the Owner has no Kind", "the Owner has no Name", "the Owner has no UID", `is in the namespace "x", and the object in "shop"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, err := tc.owner.ControllerReference(tc.namespace)
			ac, acErr := tc.owner.ApplyConfiguration(tc.namespace)
			if tc.want != nil {
				require.NoError(t, err)
				require.NoError(t, acErr)
				require.Equal(t, *tc.want, ref)
				require.Equal(t, metav1ac.OwnerReference().
					WithAPIVersion(tc.want.APIVersion).WithKind(tc.want.Kind).WithName(tc.want.Name).WithUID(tc.want.UID).
					WithController(true).WithBlockOwnerDeletion(true), ac)
				return
			}
			for _, e := range []error{err, acErr} {
				require.Error(t, e)
				for _, m := range tc.mistakes {
					require.ErrorContains(t, e, m)
				}
				require.Len(t, e.(interface{ Unwrap() []error }).Unwrap(), len(tc.mistakes), "one error per mistake: %v", e)
			}
			require.Zero(t, ref)
			require.Nil(t, ac)
		})
	}
}

func TestSetControllerReference(t *testing.T) {
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "settings", UID: "uid-cm"}
	for _, tc := range []struct {
		name     string
		refs     []metav1.OwnerReference
		ns       string
		owner    kube.Owner
		want     []metav1.OwnerReference
		mistakes []string
	}{
		{name: "none before", ns: "shop", owner: shop, want: []metav1.OwnerReference{ref(shop)}},
		{name: "beside another owner", ns: "shop", owner: shop, refs: []metav1.OwnerReference{other},
			want: []metav1.OwnerReference{other, ref(shop)}},
		{name: "again: the reference is replaced, not doubled", ns: "shop", owner: shop,
			refs: []metav1.OwnerReference{{APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached", Name: "shop", UID: "uid-shop"}, other},
			want: []metav1.OwnerReference{ref(shop), other}},
		{name: "a stale controller reference to an earlier object of the owner's name, and one of another version: replaced by one", ns: "shop", owner: shop,
			refs: []metav1.OwnerReference{
				other,
				{APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached", Name: "shop", UID: "uid-of-a-deleted-shop", Controller: new(true), BlockOwnerDeletion: new(true)},
				{APIVersion: "cache.example.com/v1beta1", Kind: "Memcached", Name: "shop", UID: "uid-shop"},
			},
			want: []metav1.OwnerReference{other, ref(shop)}},
		{name: "a controller of the same kind and another name", ns: "shop", owner: shop,
			refs:     []metav1.OwnerReference{{APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached", Name: "other", UID: "uid-other", Controller: new(true)}},
			mistakes: []string{`its ownerReferences[0] makes cache.example.com/v1alpha1 Memcached "other" its controller already`}},
		{name: "a second controller", ns: "shop", owner: shop,
			refs:     []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web", Controller: new(true)}},
			mistakes: []string{`its ownerReferences[0] makes apps/v1 Deployment "web" its controller already`}},
		{name: "cross-namespace", ns: "other", owner: shop, refs: []metav1.OwnerReference{other},
			mistakes: []string{`and the object in "other"`}},
		{name: "a cluster-scoped child of a namespaced owner", ns: "", owner: shop,
			mistakes: []string{"and the object is cluster-scoped"}},
		{name: "every mistake at once", ns: "other", owner: kube.Owner{Kind: "Memcached", Namespace: "shop"},
			refs:     []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web", Controller: new(true)}},
			mistakes: []string{"no APIVersion", "no Name", "no UID", `and the object in "other"`, "controller already"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: tc.ns, OwnerReferences: tc.refs}}
			before := obj.DeepCopy()
			err := kube.SetControllerReference(obj, tc.owner)
			if tc.mistakes == nil {
				require.NoError(t, err)
				require.Equal(t, tc.want, obj.OwnerReferences)
				return
			}
			require.Error(t, err)
			require.ErrorContains(t, err, fmt.Sprintf(`kube: SetControllerReference of *v1.ConfigMap %q`, kube.Key{Namespace: tc.ns, Name: "cache"}))
			for _, m := range tc.mistakes {
				require.ErrorContains(t, err, m)
			}
			require.Len(t, err.(interface{ Unwrap() []error }).Unwrap(), len(tc.mistakes), "one error per mistake: %v", err)
			require.Equal(t, before, obj, "a refused call changes nothing")
			var owned *kube.AlreadyOwnedError
			if slices.ContainsFunc(tc.mistakes, func(m string) bool { return strings.Contains(m, "controller already") }) {
				require.ErrorAs(t, err, &owned, "a Reconciler tells an object another controls from its own mistake")
				require.Equal(t, kube.AlreadyOwnedError{Object: kube.Key{Namespace: tc.ns, Name: "cache"}, Index: 0, Owner: tc.refs[0]}, *owned)
			} else {
				require.False(t, errors.As(err, &owned), "no other controller: %v", err)
			}
		})
	}
	require.ErrorContains(t, kube.SetControllerReference(nil, shop), "the object is nil")
	require.ErrorContains(t, kube.SetControllerReference((*appsv1.Deployment)(nil), shop), "the object is nil")
}

func ref(o kube.Owner) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID, Controller: new(true), BlockOwnerDeletion: new(true)}
}

// An Owner made from a Resource's object as the controller of a
// Deployment applied with client-go's typed apply configurations.
func ExampleOwner_ApplyConfiguration() {
	shops := kube.Resource[struct{}, struct{}]{Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached", Plural: "memcacheds", Scope: kube.Namespaced}
	m := kube.Object[struct{}, struct{}]{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "shop", UID: "6f1c"}}

	owner, err := shops.Owner(m).ApplyConfiguration(m.Namespace)
	if err != nil {
		fmt.Println(err)
		return
	}
	d := appsv1ac.Deployment("shop-memcached", m.Namespace).WithOwnerReferences(owner)
	// kc.AppsV1().Deployments(m.Namespace).Apply(ctx, d, metav1.ApplyOptions{FieldManager: "memcached", Force: true})
	r := d.OwnerReferences[0]
	fmt.Println(*r.APIVersion, *r.Kind, *r.Name, *r.UID, *r.Controller, *r.BlockOwnerDeletion)
	// Output: cache.example.com/v1alpha1 Memcached shop 6f1c true true
}
