package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
)

// TestClient_reaches_a_real_API_server_with_every_client_go_client builds
// a clientset, a dynamic and a metadata client from one kube.Client's
// Config, dialled through the real network as an App on app.OSHost is,
// and uses each to list, watch and apply.
func TestClient_reaches_a_real_API_server_with_every_client_go_client(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	tel := apptest.NewTelemetry()
	client, err := kube.NewClient(&app.Setup{Host: app.OSHost(), Telemetry: tel.Telemetry}, c.Connection())
	require.NoError(t, err)
	ctx := t.Context()

	kc, err := kubernetes.NewForConfig(client.Config())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(client.Config())
	require.NoError(t, err)
	meta, err := metadata.NewForConfig(client.Config())
	require.NoError(t, err)
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

	// The watches start before the writes, so each must see them.
	typed, err := kc.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer typed.Stop()
	metaWatch, err := meta.Resource(configMaps).Namespace(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer metaWatch.Stop()

	// A server-side apply through the clientset…
	cm, err := kc.CoreV1().ConfigMaps(ns).Apply(ctx,
		corev1ac.ConfigMap("typed", ns).WithData(map[string]string{"size": "1"}),
		metav1.ApplyOptions{FieldManager: "loam-e2e", Force: true})
	require.NoError(t, err)
	require.Equal(t, "1", cm.Data["size"])

	// …and one through the dynamic client.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "dynamic", "namespace": ns},
		"data":     map[string]any{"size": "2"},
	}}
	applied, err := dyn.Resource(configMaps).Namespace(ns).Apply(ctx, "dynamic", u, metav1.ApplyOptions{FieldManager: "loam-e2e", Force: true})
	require.NoError(t, err)
	require.Equal(t, "loam-e2e", applied.GetManagedFields()[0].Manager)

	seen := func(w watch.Interface, name string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				require.True(t, ok, "the watch ended before %s was seen", name)
				if status, isStatus := ev.Object.(*metav1.Status); isStatus {
					// An ERROR event: say what the API server said.
					t.Fatalf("the watch ended with an error before %s was seen: %s %d %s: %s", name, ev.Type, status.Code, status.Reason, status.Message)
				}
				obj, err := metaAccessor(ev.Object)
				require.NoError(t, err)
				if obj.GetName() == name {
					return
				}
			case <-deadline:
				t.Fatalf("the watch never saw %s", name)
			}
		}
	}
	seen(typed, "dynamic")
	seen(metaWatch, "typed")

	list, err := meta.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, item := range list.Items {
		names = append(names, item.Name)
	}
	require.Contains(t, names, "typed")
	require.Contains(t, names, "dynamic")

	dynList, err := dyn.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(dynList.Items), 2)

	// Every request but the watches has a span.
	require.NotEmpty(t, tel.SpansNamed("PATCH"), "each apply is traced")
	for _, s := range tel.Spans() {
		for _, kv := range s.Attributes {
			if kv.Key == "url.full" {
				require.NotContains(t, kv.Value.AsString(), "watch=true", "a watch has no span")
			}
		}
	}
}

func metaAccessor(obj any) (metav1.Object, error) {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return o, nil
	case *metav1.PartialObjectMetadata:
		return o, nil
	}
	return nil, fmt.Errorf("unexpected watch object %T", obj)
}
