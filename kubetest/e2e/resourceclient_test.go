package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
)

// A ResourceClient creates, reads, updates, lists and deletes a
// Resource's objects as the test's own types, against the API server.
func TestResourceClient_creates_gets_updates_lists_and_deletes_typed_objects(t *testing.T) {
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	r := installMemcached(t, c, ns)
	mc, err := kube.NewResourceClient(r, c.RESTConfig())
	require.NoError(t, err)

	created, err := mc.Create(ctx, memcachedObject{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns, Labels: map[string]string{"tier": "web"}},
		Spec:       memcachedSpec{Size: 3, Image: "memcached:1.6"},
	})
	require.NoError(t, err)
	require.Equal(t, memcachedSpec{Size: 3, Image: "memcached:1.6"}, created.Spec)
	require.NotEmpty(t, created.UID)
	require.Equal(t, r.Group+"/v1alpha1", created.APIVersion)
	_, err = mc.Create(ctx, memcachedObject{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns}, Spec: memcachedSpec{Size: 1, Image: "memcached:1.6"}})
	require.NoError(t, err)

	got, err := mc.Get(ctx, ns, "shop")
	require.NoError(t, err)
	require.Equal(t, created.UID, got.UID)

	// The schema's maximum refuses 5: the error is the API server's own,
	// naming the field, not client-go's generic one.
	tooMany := got
	tooMany.Spec.Size = 5
	_, err = mc.Update(ctx, tooMany)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	require.ErrorContains(t, err, "spec.size")

	got.Spec.Size = 2
	updated, err := mc.Update(ctx, got)
	require.NoError(t, err)
	require.Equal(t, int32(2), updated.Spec.Size)

	updated.Status.ReadyReplicas = 2
	withStatus, err := mc.UpdateStatus(ctx, updated)
	require.NoError(t, err)
	require.Equal(t, int32(2), withStatus.Status.ReadyReplicas)
	require.Equal(t, int32(2), withStatus.Spec.Size)

	// got's resourceVersion is two writes old: the update conflicts.
	_, err = mc.Update(ctx, got)
	require.True(t, apierrors.IsConflict(err), "%v", err)
	require.ErrorContains(t, err, `kube: update Memcached.`+r.Group+` "`+ns+`/shop": `)

	web, err := mc.List(ctx, ns, labels.SelectorFromSet(labels.Set{"tier": "web"}))
	require.NoError(t, err)
	require.Len(t, web, 1)
	require.Equal(t, "shop", web[0].Name)
	require.Equal(t, int32(2), web[0].Status.ReadyReplicas)
	all, err := mc.List(ctx, "", nil)
	require.NoError(t, err)
	require.Len(t, all, 2)

	require.NoError(t, mc.Delete(ctx, ns, "shop"))
	_, err = mc.Get(ctx, ns, "shop")
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	require.ErrorContains(t, err, `kube: get Memcached.`+r.Group+` "`+ns+`/shop": `)
	err = mc.Delete(ctx, ns, "shop")
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = mc.Create(ctx, memcachedObject{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns}, Spec: memcachedSpec{Size: 1, Image: "memcached:1.6"}})
	require.True(t, apierrors.IsAlreadyExists(err), "%v", err)
}

// A ResourceClient made from a kube.Client's Config sends its requests
// through loam's transport, which traces them (and injects the App's
// failures, when it has any).
func TestResourceClient_through_a_Client_goes_through_its_transport(t *testing.T) {
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	tel := apptest.NewTelemetry()
	client, err := kube.NewClient(&app.Setup{Host: app.Host{Network: app.OSHost().Network}, Telemetry: tel.Telemetry}, c.Connection())
	require.NoError(t, err)
	mc, err := kube.NewResourceClient(r, client.Config())
	require.NoError(t, err)
	_, err = mc.Get(t.Context(), ns, "none")
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	require.NotEmpty(t, tel.Spans(), "the request was traced by the Client's transport")
}
