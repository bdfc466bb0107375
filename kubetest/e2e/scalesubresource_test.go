package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	kubectlscale "k8s.io/kubectl/pkg/scale"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// A Resource with a Scale has the scale subresource: kubectl scale sets
// its spec's replicas through /scale, with kubectl's own code; an
// autoscaler's GET of /scale reads the replicas and the label selector
// the controller reported, and its PUT sets the replicas, within the
// schema's bounds; and each change of the spec reconciles the object.
type (
	scaledSpec struct {
		Replicas int32 `json:"replicas"`
	}
	scaledStatus struct {
		Replicas int32  `json:"replicas,omitempty"`
		Selector string `json:"selector,omitempty"`
	}
)

var (
	scaledSpecRules   scaledSpec
	scaledStatusRules scaledStatus
)

// scaledResource is a scalable resource in group.
func scaledResource(group string) kube.Resource[scaledSpec, scaledStatus] {
	return kube.Resource[scaledSpec, scaledStatus]{
		Group: group, Version: "v1", Kind: "Pool", Plural: "pools", Scope: kube.Namespaced,
		Rules: []kube.TypeRules{
			kube.Rules(&scaledSpecRules, kube.Field(&scaledSpecRules.Replicas).Minimum(0).Maximum(10)),
			kube.Rules(&scaledStatusRules),
		},
		Scale: kube.Scale(&scaledSpecRules.Replicas, &scaledStatusRules.Replicas).Selector(&scaledStatusRules.Selector),
	}
}

func TestScale_kubectl_scale_and_an_autoscaler_set_the_replicas_and_the_controller_reconciles(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := scaledResource(ns + ".scale.e2e.loam.dev")
	crd, err := r.CRD()
	require.NoError(t, err)
	require.NoError(t, c.InstallCRDs(t.Context(), crd))
	pools := adminClients(t, c).dynamic.Resource(r.GVR()).Namespace(ns)
	_, err = pools.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": r.Group + "/v1", "kind": "Pool",
		"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"replicas": int64(1)},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// The Reconciler reports as many replicas as the spec asks for, and
	// the selector of the pods they would be.
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("pool-controller", ns, "pod-0")
		settings.Namespace = ns
		return kube.NewController(s, client, settings, r,
			kube.ReconcilerFunc[scaledSpec, scaledStatus](func(_ context.Context, p kube.Object[scaledSpec, scaledStatus]) (kube.Result[scaledStatus], error) {
				return kube.Result[scaledStatus]{Status: &scaledStatus{Replicas: p.Spec.Replicas, Selector: "pool=" + p.Name}}, nil
			}))
	})
	// replicas returns the Pool's spec and status replicas.
	replicas := func() (int64, int64) {
		u, err := pools.Get(t.Context(), "web", metav1.GetOptions{})
		require.NoError(t, err)
		spec, _, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
		require.NoError(t, err)
		status, _, err := unstructured.NestedInt64(u.Object, "status", "replicas")
		require.NoError(t, err)
		return spec, status
	}
	reconciledTo := func(want int64) {
		t.Helper()
		wait.For(t, time.Minute, func() bool {
			spec, status := replicas()
			return spec == want && status == want
		}, "the Pool is never reconciled to its replicas", a)
	}
	reconciledTo(1)

	// kubectl and an autoscaler find the Scale's kind through discovery,
	// which lists pools/scale once the CRD is served.
	cfg := c.RESTConfig()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	wait.For(t, 30*time.Second, func() bool {
		l, err := dc.ServerResourcesForGroupVersion(r.Group + "/v1")
		return err == nil && slices.ContainsFunc(l.APIResources, func(res metav1.APIResource) bool { return res.Name == "pools/scale" })
	}, "discovery never lists pools/scale")
	cached := memory.NewMemCacheClient(dc)
	scales, err := scale.NewForConfig(cfg, restmapper.NewDeferredDiscoveryRESTMapper(cached),
		dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(cached))
	require.NoError(t, err)

	// kubectl scale pool/web --replicas=3: a merge patch of /scale.
	_, size, err := kubectlscale.NewScaler(scales).ScaleSimple(ns, "web", nil, 3, r.GVR(), false)
	require.NoError(t, err, "kubectl scale --replicas=3")
	require.EqualValues(t, 3, size, "the replicas kubectl scale reads back")
	reconciledTo(3)

	// An autoscaler's GET of /scale: the spec's replicas, and the
	// status's replicas and selector, as the controller reported them.
	gr := r.GVR().GroupResource()
	s, err := scales.Scales(ns).Get(t.Context(), gr, "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "web", s.Name)
	require.EqualValues(t, 3, s.Spec.Replicas, "the Scale's spec.replicas")
	require.EqualValues(t, 3, s.Status.Replicas, "the Scale's status.replicas")
	require.Equal(t, "pool=web", s.Status.Selector, "the Scale's status.selector")

	// Its PUT: the schema's bounds hold through /scale, and a change
	// within them reconciles the Pool.
	s.Spec.Replicas = 11
	_, err = scales.Scales(ns).Update(t.Context(), gr, s, metav1.UpdateOptions{})
	require.True(t, apierrors.IsInvalid(err), "a PUT of 11 replicas: %v", err)
	require.ErrorContains(t, err, "spec.replicas in body should be less than or equal to 10")
	s.Spec.Replicas = 5
	_, err = scales.Scales(ns).Update(t.Context(), gr, s, metav1.UpdateOptions{})
	require.NoError(t, err, "a PUT of 5 replicas")
	reconciledTo(5)
	s, err = scales.Scales(ns).Get(t.Context(), gr, "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.EqualValues(t, 5, s.Status.Replicas, "the Scale's status.replicas after the reconcile")

	require.Empty(t, a.Telemetry().ExceptionMessages("reconcile failed"))
	require.Equal(t, 0, a.Stop())
}
