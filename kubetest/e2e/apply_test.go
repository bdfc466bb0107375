package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loam-dev/loam/adapters/apply"
	"github.com/loam-dev/loam/ports"
)

// TestApplyWriter_against_the_API_server checks the controller's own
// writes where only a real API server has the semantics: server-side
// apply's field managers, forcing, sets of finalizers shared by two
// managers, and the uid an apply names.
func TestApplyWriter_against_the_API_server(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	client, err := apply.NewClient(c.RESTConfig())
	require.NoError(t, err)
	w, err := apply.New(apply.Config{Client: client, GVR: r.GVR(), Kind: r.Kind, FieldManager: "memcached-controller"})
	require.NoError(t, err)
	objects := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	key := func(name string) ports.Key { return ports.Key{Namespace: ns, Name: name} }

	t.Run("the status is forced over another manager's", func(t *testing.T) {
		u := newMemcached(t, admin.dynamic, r, ns, "forced", 1)
		other := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
			"metadata": map[string]any{"name": "forced", "namespace": ns},
			"status":   map[string]any{"readyReplicas": int64(7)},
		}}
		_, err := objects.ApplyStatus(t.Context(), "forced", other, metav1.ApplyOptions{FieldManager: "someone-else"})
		require.NoError(t, err)

		stored, err := w.ApplyStatus(t.Context(), key("forced"), u.GetUID(), []byte(`{"readyReplicas":1}`))
		require.NoError(t, err)
		require.JSONEq(t, `{"readyReplicas":1}`, string(stored), "the status as the API server stored it")
		m, _ := getMemcached(t, admin.dynamic, r, ns, "forced")
		require.Equal(t, int32(1), m.Status.ReadyReplicas)
	})

	t.Run("an object deleted since is never created again", func(t *testing.T) {
		u := newMemcached(t, admin.dynamic, r, ns, "gone", 1)
		require.NoError(t, objects.Delete(t.Context(), "gone", metav1.DeleteOptions{}))

		err := w.ApplyFinalizer(t.Context(), key("gone"), u.GetUID(), finalizer, true)
		require.True(t, apierrors.IsConflict(err), "%v", err)
		require.ErrorContains(t, err, "uid mismatch")
		_, err = w.ApplyStatus(t.Context(), key("gone"), u.GetUID(), []byte(`{"readyReplicas":1}`))
		require.Error(t, err)
		// Removing the finalizer, as a reconcile from a cache that hasn't
		// seen the deletion does, succeeds: it went with the object.
		require.NoError(t, w.ApplyFinalizer(t.Context(), key("gone"), u.GetUID(), finalizer, false))
		_, found := getMemcached(t, admin.dynamic, r, ns, "gone")
		require.False(t, found)
	})

	t.Run("a finalizer never reaches an object created again under the name", func(t *testing.T) {
		old := newMemcached(t, admin.dynamic, r, ns, "again", 1)
		require.NoError(t, objects.Delete(t.Context(), "again", metav1.DeleteOptions{}))
		newMemcached(t, admin.dynamic, r, ns, "again", 2)

		err := w.ApplyFinalizer(t.Context(), key("again"), old.GetUID(), finalizer, true)
		require.True(t, apierrors.IsInvalid(err), "%v", err)
		m, _ := getMemcached(t, admin.dynamic, r, ns, "again")
		require.Empty(t, m.Finalizers)
	})

	t.Run("the finalizer is added, and removed unless another manager holds it", func(t *testing.T) {
		u := newMemcached(t, admin.dynamic, r, ns, "held", 1)
		require.NoError(t, w.ApplyFinalizer(t.Context(), key("held"), u.GetUID(), finalizer, true))
		m, _ := getMemcached(t, admin.dynamic, r, ns, "held")
		require.Equal(t, []string{finalizer}, m.Finalizers)

		require.NoError(t, w.ApplyFinalizer(t.Context(), key("held"), u.GetUID(), finalizer, false))
		m, _ = getMemcached(t, admin.dynamic, r, ns, "held")
		require.Empty(t, m.Finalizers)

		require.NoError(t, w.ApplyFinalizer(t.Context(), key("held"), u.GetUID(), finalizer, true))
		require.NoError(t, applyFinalizer(t, admin.dynamic, r, u, "someone-else", finalizer))
		err := w.ApplyFinalizer(t.Context(), key("held"), u.GetUID(), finalizer, false)
		var held *ports.FinalizerHeldError
		require.ErrorAs(t, err, &held)
		require.Equal(t, []string{"someone-else"}, held.Managers)
		require.EqualError(t, err, `finalizer "cache.example.com/finalizer" is also set by field manager "someone-else", and stays until it is removed there`)
	})
}
