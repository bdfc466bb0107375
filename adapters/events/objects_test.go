package events_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/loam-dev/loam/adapters/events"
	"github.com/loam-dev/loam/ports"
)

func TestObjects_names_the_object(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset()
		ev, err := events.NewObjects(events.Config{Client: cs.EventsV1(), Controller: "memcached-controller", Instance: "pod-0", Logger: logr.Discard()}, "cache.example.com/v1alpha1", "Memcached")
		require.NoError(t, err)
		ev.Start()
		obj := ports.Object{UID: "u1", JSON: []byte(`{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"namespace":"ns","name":"m","uid":"u1","resourceVersion":"42"}}`)}
		ev.Record(t.Context(), obj, ports.EventRecord{Type: "Warning", Reason: "ReconcileFailed", Action: "Reconcile", Note: "boom"})
		synctest.Wait()
		time.Sleep(time.Second)
		require.NoError(t, ev.Close(t.Context()))

		list, err := cs.EventsV1().Events("ns").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, 1)
		e := list.Items[0]
		require.Equal(t, "cache.example.com/v1alpha1", e.Regarding.APIVersion)
		require.Equal(t, "Memcached", e.Regarding.Kind)
		require.Equal(t, "ns", e.Regarding.Namespace)
		require.Equal(t, "m", e.Regarding.Name)
		require.Equal(t, "u1", string(e.Regarding.UID))
		require.Equal(t, "42", e.Regarding.ResourceVersion)
		require.Equal(t, "memcached-controller", e.ReportingController)
		require.Equal(t, "pod-0", e.ReportingInstance)
		require.Equal(t, "Warning", e.Type)
		require.Equal(t, "ReconcileFailed", e.Reason)
		require.Equal(t, "Reconcile", e.Action)
		require.Equal(t, "boom", e.Note)
		require.Zero(t, ev.Dropped())
	})
}

func TestObjects_needs_a_name_and_an_identity(t *testing.T) {
	_, err := events.NewObjects(events.Config{Client: fake.NewClientset().EventsV1()}, "v1", "ConfigMap")
	require.ErrorContains(t, err, "Controller is empty")
	require.ErrorContains(t, err, "Instance is empty")
}

// A Close whose context ends first is logged, since a Serve that returned
// on its own has no one to return it to, and returned.
func TestObjects_Close_logs_and_returns_its_failure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logged []string
		logger := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
		ev, err := events.NewObjects(events.Config{Client: fake.NewClientset().EventsV1(), Controller: "memcached-controller", Instance: "pod-0", Logger: logger}, "v1", "ConfigMap")
		require.NoError(t, err)
		ev.Start()
		ended, cancel := context.WithCancel(t.Context())
		cancel()
		require.ErrorIs(t, ev.Close(ended), context.Canceled)
		require.Len(t, logged, 1)
		require.Contains(t, logged[0], "writing the controller's last events failed")
		require.Contains(t, logged[0], "memcached-controller")
	})
}
