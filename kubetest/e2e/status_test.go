package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// A status whose every field is omitempty, returned zero after it had a
// field: the apply of `{}` removes every field the controller owned, the
// API server stores the status as null, and the CRD's status schema, an
// object that isn't nullable, refuses it. Every retry fails the same way.
type (
	echoSpec struct {
		Value string `json:"value,omitempty"`
	}
	echoStatus struct {
		Value string `json:"value,omitempty"`
	}
)

func TestController_a_status_that_returns_to_zero_is_applied(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := kube.Resource[echoSpec, echoStatus]{Group: ns + ".echo.e2e.loam.dev", Version: "v1", Kind: "Echo", Plural: "echoes", Scope: kube.Namespaced}
	crd, err := r.CRD()
	require.NoError(t, err)
	require.NoError(t, c.InstallCRDs(t.Context(), crd))
	echoes := adminClients(t, c).dynamic.Resource(r.GVR()).Namespace(ns)
	_, err = echoes.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": r.Group + "/v1", "kind": "Echo",
		"metadata": map[string]any{"name": "echo"}, "spec": map[string]any{"value": "x"},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("echo-controller", ns, "pod-0")
		settings.Namespace = ns
		return kube.NewController(s, client, settings, r,
			kube.ReconcilerFunc[echoSpec, echoStatus](func(_ context.Context, m kube.Object[echoSpec, echoStatus]) (kube.Result[echoStatus], error) {
				return kube.Result[echoStatus]{Status: &echoStatus{Value: m.Spec.Value}}, nil
			}))
	})
	statusValue := func() (string, bool) {
		u, err := echoes.Get(t.Context(), "echo", metav1.GetOptions{})
		require.NoError(t, err)
		v, found, _ := unstructured.NestedString(u.Object, "status", "value")
		return v, found
	}
	wait.For(t, time.Minute, func() bool { v, _ := statusValue(); return v == "x" }, "status.value never x", a)

	_, err = echoes.Patch(t.Context(), "echo", types.MergePatchType, []byte(`{"spec":{"value":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	wait.For(t, 30*time.Second, func() bool { _, found := statusValue(); return !found }, "status.value is never removed", a)
	require.Empty(t, a.Telemetry().ExceptionMessages("reconcile failed"))
	require.Equal(t, 0, a.Stop())
}
