package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// poolStatus is a status as the spec's types are written: no field has
// omitempty, so each is required, and the Reconciler below leaves all but
// one nil or zero, which encoding/json writes as null.
type (
	poolSpec struct {
		Size int32 `json:"size"`
	}
	poolStatus struct {
		ObservedGeneration int64             `json:"observedGeneration"`
		Nodes              []string          `json:"nodes"`
		Labels             map[string]string `json:"labels"`
		Leader             *string           `json:"leader"`
		LastSync           metav1.Time       `json:"lastSync"`
	}
	poolObject = kube.Object[poolSpec, poolStatus]
)

// poolNullFields are poolStatus's fields that the Reconciler leaves null.
var poolNullFields = []string{"labels", "lastSync", "leader", "nodes"}

func poolResource(group string) kube.Resource[poolSpec, poolStatus] {
	return kube.Resource[poolSpec, poolStatus]{Group: group, Version: "v1", Kind: "Pool", Plural: "pools", Scope: kube.Namespaced}
}

// observedOnly reports the generation it saw, and nothing else: every
// other field of its status is nil or zero.
func observedOnly(_ context.Context, p poolObject) (kube.Result[poolStatus], error) {
	return kube.Result[poolStatus]{Status: &poolStatus{ObservedGeneration: p.Generation}}, nil
}

// startPool installs crd in the test's namespace ns, creates a Pool there
// and starts a Controller of r whose Reconciler is observedOnly.
func startPool(t *testing.T, ns string, r kube.Resource[poolSpec, poolStatus], crd *apiextensionsv1.CustomResourceDefinition) (dynamic.ResourceInterface, *controllerApp) {
	t.Helper()
	c := cluster.Cluster(t)
	installCRD(t, c, crd)
	pools := adminClients(t, c).dynamic.Resource(r.GVR()).Namespace(ns)
	_, err := pools.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": r.Group + "/" + r.Version, "kind": r.Kind,
		"metadata": map[string]any{"name": "pool"},
		"spec":     map[string]any{"size": int64(1)},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("pool-controller", ns, "pod-a")
		settings.Namespace = ns
		return kube.NewController(s, client, settings, r, kube.ReconcilerFunc[poolSpec, poolStatus](observedOnly))
	})
	return pools, a
}

// The fix: a required field that encoding/json may write as null is
// nullable in the CRD, so the status a Reconciler returns with nil fields
// is applied, and the API server keeps each null.
func TestController_applies_a_status_whose_required_fields_are_nil(t *testing.T) {
	t.Parallel()
	ns := cluster.Cluster(t).Namespace(t)
	r := poolResource(ns + ".nullable.e2e.loam.dev")
	crd, err := r.CRD()
	require.NoError(t, err)
	schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	require.ElementsMatch(t, append([]string{"observedGeneration"}, poolNullFields...), schema.Required, "every field stays required")
	for _, f := range poolNullFields {
		require.True(t, schema.Properties[f].Nullable, "status.%s is nullable", f)
	}
	pools, a := startPool(t, ns, r, crd)

	var got *unstructured.Unstructured
	wait.For(t, time.Minute, func() bool {
		u, err := pools.Get(t.Context(), "pool", metav1.GetOptions{})
		require.NoError(t, err)
		got = u
		g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		return g == 1
	}, "the status with nil fields is never applied", a)

	status, ok := got.Object["status"].(map[string]any)
	require.True(t, ok, "a status object: %v", got.Object["status"])
	for _, f := range poolNullFields {
		v, kept := status[f]
		require.True(t, kept, "status.%s is kept, not pruned", f)
		require.Nil(t, v, "status.%s is null", f)
	}
	raw, err := got.MarshalJSON()
	require.NoError(t, err)
	var back poolObject
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, poolStatus{ObservedGeneration: 1}, back.Status, "each null reads back as a nil")
	require.Empty(t, a.Telemetry().ExceptionMessages("reconcile failed"))
	require.Equal(t, 0, a.Stop())
}

// What the fix prevents: the same CRD without nullable, as loam reflected
// it before, makes the API server refuse every status apply, naming the
// field but not the Go type.
func TestController_a_null_in_a_required_field_that_isn_t_nullable_is_refused(t *testing.T) {
	t.Parallel()
	ns := cluster.Cluster(t).Namespace(t)
	r := poolResource(ns + ".nullable.e2e.loam.dev")
	crd, err := r.CRD()
	require.NoError(t, err)
	schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	for _, f := range poolNullFields {
		p := schema.Properties[f]
		p.Nullable = false
		schema.Properties[f] = p
	}
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"] = schema
	_, a := startPool(t, ns, r, crd)

	wait.For(t, time.Minute, func() bool {
		for _, m := range a.Telemetry().ExceptionMessages("reconcile failed") {
			if strings.Contains(m, "status.nodes") {
				return true
			}
		}
		return false
	}, "the status apply isn't refused for its null status.nodes", a)
	require.Equal(t, 0, a.Stop())
}
