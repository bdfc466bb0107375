package events_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/loam-dev/loam/adapters/events"
)

// listEvents returns the Events in the namespace ns.
func listEvents(t *testing.T, cs *fake.Clientset) []eventsv1.Event {
	t.Helper()
	list, err := cs.EventsV1().Events("ns").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return list.Items
}

// droppedBy returns loam.kube.controller.events.dropped's value for reason.
func droppedBy(t *testing.T, r *sdkmetric.ManualReader, reason string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != events.DroppedName {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if v, _ := dp.Attributes.Value(events.DropReasonKey); v.AsString() == reason {
					name, _ := dp.Attributes.Value(attribute.Key("loam.kube.controller.name"))
					require.Equal(t, "memcached", name.AsString())
					return dp.Value
				}
			}
		}
	}
	return 0
}

// The finding: errors whose text varies made one Event each. They are one
// series, keyed without the note: 100 failures, one Event counting 100.
func TestSeries_varying_notes_are_one_series(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset()
		w, err := events.New(events.Config{Client: cs.EventsV1(), Controller: "memcached", Instance: "pod-0", Logger: logr.Discard()})
		require.NoError(t, err)
		w.Start()
		for i := range 100 {
			w.Record(failure(fmt.Sprintf("request %d failed: retry after %dms", i, 10*i)))
			synctest.Wait()
			time.Sleep(100 * time.Millisecond)
		}
		require.NoError(t, w.Close(t.Context()))
		list := listEvents(t, cs)
		require.Len(t, list, 1)
		require.Equal(t, "request 0 failed: retry after 0ms", list[0].Note, "the API server keeps an Event's note as created")
		require.NotNil(t, list[0].Series)
		require.Equal(t, int32(100), list[0].Series.Count)
		require.Zero(t, w.Dropped())
	})
}

// An Event gone from the API server (its TTL, a deletion) is created again
// with the series' count and its latest note, marked as combined.
func TestSeries_a_deleted_Event_is_created_again_with_the_latest_note(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset()
		w, err := events.New(events.Config{Client: cs.EventsV1(), Controller: "memcached", Instance: "pod-0", Logger: logr.Discard()})
		require.NoError(t, err)
		w.Start()
		w.Record(failure("first"))
		synctest.Wait()
		list := listEvents(t, cs)
		require.Len(t, list, 1)
		require.NoError(t, cs.EventsV1().Events("ns").Delete(context.Background(), list[0].Name, metav1.DeleteOptions{}))
		w.Record(failure("second"))
		w.Record(failure("third"))
		synctest.Wait()
		require.NoError(t, w.Close(t.Context()))
		list = listEvents(t, cs)
		require.Len(t, list, 1)
		require.Equal(t, events.CombinedPrefix+"third", list[0].Note)
		require.Equal(t, int32(3), list[0].Series.Count)
	})
}

// Each object has 25 Events created at once, then one every five minutes;
// the rest are dropped and counted by reason. Repeats of a series take no
// token.
func TestSeries_rate_limit_per_object(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset()
		reader := sdkmetric.NewManualReader()
		meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
		w, err := events.New(events.Config{Client: cs.EventsV1(), Controller: "memcached", Instance: "pod-0", Logger: logr.Discard(), Meter: meter})
		require.NoError(t, err)
		w.Start()
		record := func(reason string) {
			e := failure("boom")
			e.Reason = reason
			w.Record(e)
			synctest.Wait()
		}
		for i := range 30 {
			record(fmt.Sprintf("Step%d", i))
		}
		for range 50 {
			record("Step0") // a repeat: counted in its series
		}
		time.Sleep(time.Second)
		require.Len(t, listEvents(t, cs), 25)
		require.Equal(t, int64(5), w.Dropped())
		require.Equal(t, int64(5), droppedBy(t, reader, events.DropRateLimited))

		time.Sleep(5 * time.Minute)
		record("Later")
		record("Later2")
		require.NoError(t, w.Close(t.Context()))
		require.Len(t, listEvents(t, cs), 26, "one token came back in five minutes")
		require.Equal(t, int64(6), droppedBy(t, reader, events.DropRateLimited))
		for _, e := range listEvents(t, cs) {
			if e.Reason == "Step0" {
				require.Equal(t, int32(51), e.Series.Count)
			}
		}
	})
}

// A failed patch keeps the series' count: it is written at a later flush.
func TestSeries_a_failed_patch_keeps_the_count(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset()
		var fail atomic.Int32
		fail.Store(3)
		cs.PrependReactor("patch", "events", func(clienttesting.Action) (bool, runtime.Object, error) {
			if fail.Add(-1) >= 0 {
				return true, nil, apierrors.NewServiceUnavailable("etcd is leaderless")
			}
			return false, nil, nil
		})
		w, err := events.New(events.Config{Client: cs.EventsV1(), Controller: "memcached", Instance: "pod-0", Logger: logr.Discard()})
		require.NoError(t, err)
		w.Start()
		for range 10 {
			w.Record(failure("boom"))
			synctest.Wait()
		}
		time.Sleep(5 * time.Second) // a flush a second: three fail, one succeeds
		synctest.Wait()
		list := listEvents(t, cs)
		require.Len(t, list, 1)
		require.NotNil(t, list[0].Series)
		require.Equal(t, int32(10), list[0].Series.Count)
		require.NoError(t, w.Close(t.Context()))
		require.Zero(t, w.Dropped())
	})
}

// A write the API server refuses for good drops what its series owes, and
// counts it as write_failed.
func TestSeries_a_refused_create_is_dropped_and_counted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset()
		cs.PrependReactor("create", "events", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(eventsv1.Resource("events"), "x", errors.New("no rule"))
		})
		reader := sdkmetric.NewManualReader()
		w, err := events.New(events.Config{
			Client: cs.EventsV1(), Controller: "memcached", Instance: "pod-0", Logger: logr.Discard(),
			Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test"),
		})
		require.NoError(t, err)
		w.Start()
		w.Record(failure("boom"))
		synctest.Wait()
		require.NoError(t, w.Close(t.Context()))
		require.Equal(t, int64(1), droppedBy(t, reader, events.DropWriteFailed))
	})
}

// An API server that never answers holds the writer WriteTimeout at most:
// the create ends on its own deadline, with no Close to cancel it, and is
// tried again at a later flush.
func TestSeries_a_hanging_API_server_is_bounded_by_the_write_deadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{}, 16)
		var ended atomic.Int32
		w, err := events.New(events.Config{
			Client:     hangingGetter{hangingEvents{started: started, ended: &ended}},
			Controller: "memcached", Instance: "pod-0", Logger: logr.Discard(),
		})
		require.NoError(t, err)
		w.Start()
		w.Record(failure("boom"))
		<-started
		time.Sleep(events.DefaultWriteTimeout)
		synctest.Wait()
		require.Equal(t, int32(1), ended.Load(), "the create ended on its deadline")
		<-started // the next flush tries again
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		require.NoError(t, w.Close(ctx), "Close's own writes end on their deadline, within Close's")
		require.Equal(t, int64(1), w.Dropped(), "the occurrence never written is counted")
	})
}
