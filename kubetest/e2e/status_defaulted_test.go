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

// A status whose schema defaults a field the Reconciler never sets: the
// API server stores the status with the default, so it never compares
// equal to the one the Reconciler returns, and without the controller's
// memory of what the server stored, every pass of the object would send
// a status apply that changes nothing.
type (
	defaultedSpec struct {
		Value string `json:"value,omitempty"`
	}
	defaultedStatus struct {
		Value string `json:"value,omitempty"`
		// Phase is defaulted by the schema; the Reconciler leaves it out.
		Phase string `json:"phase,omitempty"`
	}
)

var defaultedStatusRules defaultedStatus

func TestController_a_status_the_API_server_defaults_is_applied_once(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := kube.Resource[defaultedSpec, defaultedStatus]{
		Group: ns + ".defaulted.e2e.loam.dev", Version: "v1", Kind: "Defaulted", Plural: "defaulteds", Scope: kube.Namespaced,
		Rules: []kube.TypeRules{kube.Rules(&defaultedStatusRules, kube.Field(&defaultedStatusRules.Phase).Default("Pending"))},
	}
	crd, err := r.CRD()
	require.NoError(t, err)
	require.NoError(t, c.InstallCRDs(t.Context(), crd))
	objects := adminClients(t, c).dynamic.Resource(r.GVR()).Namespace(ns)
	_, err = objects.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": r.Group + "/v1", "kind": "Defaulted",
		"metadata": map[string]any{"name": "d"}, "spec": map[string]any{"value": "x"},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	w, conn := startWire(t, c)
	a := startController(t, conn, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("defaulted-controller", ns, "pod-0")
		settings.Namespace = ns
		return kube.NewController(s, client, settings, r,
			kube.ReconcilerFunc[defaultedSpec, defaultedStatus](func(_ context.Context, d kube.Object[defaultedSpec, defaultedStatus]) (kube.Result[defaultedStatus], error) {
				return kube.Result[defaultedStatus]{Status: &defaultedStatus{Value: d.Spec.Value}}, nil
			}))
	})
	passes := func() int { return len(a.Telemetry().SpansNamed("reconcile Defaulted")) }
	applies := func() int { return len(w.patchesOf("/" + r.Plural + "/d/status")) }
	stored := func() map[string]any {
		u, err := objects.Get(t.Context(), "d", metav1.GetOptions{})
		require.NoError(t, err)
		s, _, _ := unstructured.NestedMap(u.Object, "status")
		return s
	}

	// The first pass applies the status; its change queues the second,
	// which finds the status as the server stored it, with the default.
	wait.For(t, time.Minute, func() bool { return passes() >= 2 }, "the object was never reconciled twice", a)
	require.Equal(t, map[string]any{"value": "x", "phase": "Pending"}, stored(), "the API server defaulted the phase")
	require.Equal(t, 1, applies(), "the second pass, whose status the server defaulted, sends nothing")

	// A change that isn't the status's queues a third pass, which sends
	// nothing either.
	_, err = objects.Patch(t.Context(), "d", types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	wait.For(t, 30*time.Second, func() bool { return passes() >= 3 }, "the label's change was never reconciled", a)
	require.Equal(t, 1, applies(), "a pass of a settled object sends nothing")

	// A status asked for anew is applied, once.
	_, err = objects.Patch(t.Context(), "d", types.MergePatchType, []byte(`{"spec":{"value":"y"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	wait.For(t, 30*time.Second, func() bool { return stored()["value"] == "y" }, "the new status was never applied", a)
	wait.For(t, 30*time.Second, func() bool { return passes() >= 5 }, "the status's change was never reconciled", a)
	require.Equal(t, 2, applies(), "the new status is applied once: its second pass sends nothing")

	// Another field manager writes the controller's field of the status:
	// the object no longer holds what the server stored for the
	// controller, which applies its status again, once, and settles.
	_, err = objects.Patch(t.Context(), "d", types.MergePatchType, []byte(`{"status":{"value":"z"}}`), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	wait.For(t, 30*time.Second, func() bool { return passes() >= 7 && stored()["value"] == "y" }, "the status another manager wrote was never applied again", a)
	require.Equal(t, map[string]any{"value": "y", "phase": "Pending"}, stored())
	require.Equal(t, 3, applies(), "the status is applied again once: its second pass sends nothing")
	require.Empty(t, a.Telemetry().ExceptionMessages("reconcile failed"))
	require.Equal(t, 0, a.Stop())
}
