package events_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/loam-dev/loam/adapters/events"
	"github.com/loam-dev/loam/ports"
)

// An Any names the object each call names, and the related object and
// action land on the Event. Repeats count in one series only when their
// related object and action are the same, as client-go's tools/events
// keys them: the note never splits a series, they do.
func TestAny_names_the_regarding_and_related_objects_and_splits_series_by_them(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset()
		a, err := events.NewAny(events.Config{Client: cs.EventsV1(), Controller: "memcached-webhook", Instance: "pod-0", Logger: logr.Discard()})
		require.NoError(t, err)
		a.Start()
		cm := ports.EventObject{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "flags", UID: "c1"}
		d1 := &ports.EventObject{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "a", UID: "d1"}
		d2 := &ports.EventObject{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "b", UID: "d2"}
		record := func(action string, related *ports.EventObject, note string) {
			a.Record(t.Context(), cm, ports.EventRecord{Type: "Normal", Reason: "Checked", Action: action, Note: note, Related: related})
		}
		record("Admit", d1, "first")
		record("Admit", d1, "second") // the same series, whatever the note
		record("Admit", d2, "other")  // another related object
		record("Deny", d1, "denied")  // another action
		record("Admit", nil, "none")  // no related object
		synctest.Wait()
		time.Sleep(time.Second)
		require.NoError(t, a.Close(t.Context()))

		got := map[string]int32{}
		for _, e := range listEvents(t, cs) {
			require.Equal(t, corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "flags", UID: "c1"}, e.Regarding)
			require.Equal(t, "memcached-webhook", e.ReportingController)
			related := "-"
			if e.Related != nil {
				require.Equal(t, "apps/v1", e.Related.APIVersion)
				require.Equal(t, "Deployment", e.Related.Kind)
				require.Equal(t, "ns", e.Related.Namespace)
				related = e.Related.Name + "/" + string(e.Related.UID)
			}
			count := int32(1)
			if e.Series != nil {
				count = e.Series.Count
			}
			got[e.Action+" "+related] = count
		}
		require.Equal(t, map[string]int32{"Admit a/d1": 2, "Admit b/d2": 1, "Deny a/d1": 1, "Admit -": 1}, got)
		require.Zero(t, a.Dropped())
	})
}

// Objects hands the related object on as Any does.
func TestObjects_names_the_related_object(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset()
		ev, err := events.NewObjects(events.Config{Client: cs.EventsV1(), Controller: "memcached-controller", Instance: "pod-0", Logger: logr.Discard()}, "cache.example.com/v1alpha1", "Memcached")
		require.NoError(t, err)
		ev.Start()
		obj := ports.Object{UID: "u1", JSON: []byte(`{"metadata":{"namespace":"ns","name":"m"}}`)}
		ev.Record(t.Context(), obj, ports.EventRecord{
			Type: "Normal", Reason: "Scaled", Action: "Scale", Note: "to 3",
			Related: &ports.EventObject{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "m", UID: "d1"},
		})
		synctest.Wait()
		require.NoError(t, ev.Close(t.Context()))
		es := listEvents(t, cs)
		require.Len(t, es, 1)
		require.Equal(t, "Scale", es[0].Action)
		require.Equal(t, &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "m", UID: "d1"}, es[0].Related)
	})
}

func TestMemory_keeps_what_it_is_handed_in_order(t *testing.T) {
	var m events.Memory
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { m.Record(context.Background(), ports.Object{UID: "u"}, ports.EventRecord{Reason: "R"}) })
	}
	wg.Wait()
	m.Record(context.Background(), ports.Object{UID: "last"}, ports.EventRecord{Reason: "Last"})
	got := m.Recorded()
	require.Len(t, got, 11)
	require.Equal(t, events.Recorded{Object: ports.Object{UID: "last"}, Record: ports.EventRecord{Reason: "Last"}}, got[10])
	got[10].Record.Reason = "Changed"
	require.Equal(t, "Last", m.Recorded()[10].Record.Reason, "Recorded returns a copy")
}
