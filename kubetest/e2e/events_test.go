package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The events tests run a Controller whose Reconciler fails, or panics,
// and read the Events it records on the object once the App has stopped:
// Shutdown writes the last of them, and every series' count, within the
// grace period.

// eventsSettings are a Controller's Settings whose failures are retried
// within milliseconds: a backoff from 5ms to 20ms, under a bucket that
// never holds a retry back.
func eventsSettings(ns string) kube.Settings {
	s := settingsFor("events-controller", ns, "pod-a")
	s.Namespace = ns
	s.RetryMaxDelay = 20 * time.Millisecond
	s.RetryRate, s.RetryBurst = 10000, 10000
	return s
}

// eventsOn returns the Events in ns about the object whose uid is uid.
func eventsOn(t *testing.T, k kubernetes.Interface, ns string, uid types.UID) []eventsv1.Event {
	t.Helper()
	list, err := k.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.UID == uid {
			out = append(out, e)
		}
	}
	return out
}

// occurrences returns how many occurrences es count: one for an Event
// without a series, its series' count for one with.
func occurrences(es []eventsv1.Event) int {
	n := 0
	for _, e := range es {
		if e.Series != nil {
			n += int(e.Series.Count)
		} else {
			n++
		}
	}
	return n
}

// The issue: 100 failed reconciles of one object, each writing a status
// that changes its resourceVersion and each failing with a different
// error text, are one Event, whose series counts them all (issue 44: the
// note was in the series' key, and they were 100 Events). The Reconciler
// also records 30 Normal Events of distinct reasons on the object: its
// bucket lets 25 be created and drops 5, counted in
// loam.kube.controller.events.dropped as rate_limited.
func TestEvents_a_hundred_failed_reconciles_are_one_series_of_ReconcileFailed(t *testing.T) {
	t.Parallel()
	const failures, steps = 100, 30
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	uid := newMemcached(t, admin.dynamic, r, ns, "m", 1).GetUID()

	var calls atomic.Int32
	reconciler := kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(ctx context.Context, m memcachedObject) (kube.Result[memcachedStatus], error) {
		n := calls.Add(1)
		if n <= steps {
			if err := kube.RecordEvent(ctx, kube.Normal, fmt.Sprintf("Step%d", n), "a step"); err != nil {
				return kube.Result[memcachedStatus]{}, err
			}
		}
		st := m.Status
		st.ReadyReplicas = n // a new resourceVersion on every failure
		if n <= failures {
			return kube.Result[memcachedStatus]{Status: &st}, fmt.Errorf("the memcached image can't be pulled: request %d, retry after %dms", n, 7*n)
		}
		return kube.Result[memcachedStatus]{Status: &st}, nil
	})
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		return kube.NewController(s, client, eventsSettings(ns), r, reconciler)
	})
	wait.For(t, 2*time.Minute, func() bool { return calls.Load() > failures }, "the object never failed 100 times, then succeeded", a)
	wait.For(t, time.Minute, func() bool {
		by, err := a.Telemetry().TotalBy(context.Background(), "loam.kube.controller.events.dropped", "loam.kube.controller.events.drop_reason")
		return err == nil && by["rate_limited"] == steps-25
	}, "the 5 Events past the object's bucket were never counted as dropped", a)
	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())

	var failed, stepped []eventsv1.Event
	for _, e := range eventsOn(t, admin.kube, ns, uid) {
		if e.Reason == "ReconcileFailed" {
			failed = append(failed, e)
		} else {
			stepped = append(stepped, e)
		}
	}
	require.Len(t, failed, 1, "the failures are one series\n%s", a.Report())
	require.Equal(t, failures, occurrences(failed), "the series counts every failure")
	require.Len(t, stepped, 25, "the object's bucket lets 25 Events be created at once")
	e := failed[0]
	require.NotNil(t, e.Series, "repeats count in a series")
	require.Equal(t, "Warning", e.Type)
	require.Equal(t, "Reconcile", e.Action)
	require.Equal(t, "the memcached image can't be pulled: request 1, retry after 7ms", e.Note, "the Event keeps its first note")
	require.Equal(t, "events-controller", e.ReportingController)
	require.Equal(t, "pod-a", e.ReportingInstance)
	require.Equal(t, r.Group+"/"+r.Version, e.Regarding.APIVersion)
	require.Equal(t, "Memcached", e.Regarding.Kind)
	require.Equal(t, ns, e.Regarding.Namespace)
	require.Equal(t, "m", e.Regarding.Name)
	require.NotEmpty(t, e.Regarding.ResourceVersion)
}

// Settings.FailureEvents = FailureEventsOff records no ReconcileFailed,
// while the Reconciler's own RecordEvent still records.
func TestEvents_FailureEventsOff_records_no_failure(t *testing.T) {
	t.Parallel()
	const failures = 10
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	uid := newMemcached(t, admin.dynamic, r, ns, "m", 1).GetUID()

	var calls atomic.Int32
	reconciler := kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(ctx context.Context, _ memcachedObject) (kube.Result[memcachedStatus], error) {
		if n := calls.Add(1); n <= failures {
			return kube.Result[memcachedStatus]{}, errors.New("boom")
		}
		if err := kube.RecordEvent(ctx, kube.Normal, "Recovered", "reconciled after 10 failures"); err != nil {
			return kube.Result[memcachedStatus]{}, err
		}
		return kube.Result[memcachedStatus]{}, nil
	})
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := eventsSettings(ns)
		settings.FailureEvents = kube.FailureEventsOff
		return kube.NewController(s, client, settings, r, reconciler)
	})
	wait.For(t, 2*time.Minute, func() bool { return calls.Load() > failures }, "the object never failed 10 times, then succeeded", a)
	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())

	var failed, recovered []eventsv1.Event
	for _, e := range eventsOn(t, admin.kube, ns, uid) {
		switch e.Reason {
		case "ReconcileFailed", "ReconcilePanicked":
			failed = append(failed, e)
		case "Recovered":
			recovered = append(recovered, e)
		}
	}
	require.Empty(t, failed, "FailureEventsOff records no failure")
	require.Len(t, recovered, 1, "the Reconciler's own Event is recorded\n%s", a.Report())
	require.Equal(t, "Normal", recovered[0].Type)
	require.Equal(t, "reconciled after 10 failures", recovered[0].Note)
}

// A panicking Reconciler records ReconcilePanicked, once: a panic is never
// retried.
func TestEvents_a_panic_records_ReconcilePanicked(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	uid := newMemcached(t, admin.dynamic, r, ns, "m", 1).GetUID()

	reconciler := kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(context.Context, memcachedObject) (kube.Result[memcachedStatus], error) {
		panic("the cache is corrupt")
	})
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		return kube.NewController(s, client, eventsSettings(ns), r, reconciler)
	})
	wait.For(t, time.Minute, func() bool { return panicsOf(a, "m") > 0 }, "the Reconciler never panicked", a)
	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())

	es := eventsOn(t, admin.kube, ns, uid)
	require.Len(t, es, 1, "one Event\n%s", a.Report())
	e := es[0]
	require.Equal(t, "Warning", e.Type)
	require.Equal(t, "ReconcilePanicked", e.Reason)
	require.Equal(t, "Reconcile", e.Action)
	require.Equal(t, "panic: the cache is corrupt", e.Note)
	require.Nil(t, e.Series, "a panic is never retried")
}

// A Reconciler's Event names a related object and an action, and an
// EventRecorder records on any object, outside a reconcile, as a
// webhook's Admitter would: both land on the API server with their
// related object and action, as `kubectl describe` shows them, and the
// EventRecorder's repeats, written at the App's stop, count in one
// series.
func TestEvents_related_object_and_action_inside_and_outside_a_reconcile(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	m := newMemcached(t, admin.dynamic, r, ns, "m", 1)
	cm, err := admin.kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "flags"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cmRef := kube.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "flags", UID: cm.UID}
	mRef := kube.ObjectRef{APIVersion: r.Group + "/" + r.Version, Kind: "Memcached", Namespace: ns, Name: "m", UID: m.GetUID()}

	var calls atomic.Int32
	reconciler := kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(ctx context.Context, _ memcachedObject) (kube.Result[memcachedStatus], error) {
		calls.Add(1)
		return kube.Result[memcachedStatus]{}, kube.RecordEvent(ctx, kube.Normal, "Scaled", "scaled to 1", kube.Related(cmRef), kube.Action("Scale"))
	})
	var rec *kube.EventRecorder
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		var err error
		if rec, err = kube.NewEventRecorder(s, client, kube.EventRecorderSettings{Name: "memcached-webhook", Instance: "pod-a"}); err != nil {
			return nil, err
		}
		return kube.NewController(s, client, eventsSettings(ns), r, reconciler)
	})
	wait.For(t, time.Minute, func() bool { return calls.Load() > 0 }, "the object was never reconciled", a)
	// Recorded just before the stop: the App writes them as it stops.
	for i := range 3 {
		require.NoError(t, rec.Record(t.Context(), cmRef, kube.Warning, "FlagsRejected", fmt.Sprintf("the flag %d is unknown", i), kube.Action("Admit"), kube.Related(mRef)))
	}
	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())

	scaled := eventsOn(t, admin.kube, ns, m.GetUID())
	require.Len(t, scaled, 1, "%s", a.Report())
	require.Equal(t, "Scaled", scaled[0].Reason)
	require.Equal(t, "Scale", scaled[0].Action)
	require.Equal(t, &corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "flags", UID: cm.UID}, scaled[0].Related)

	rejected := eventsOn(t, admin.kube, ns, cm.UID)
	require.Len(t, rejected, 1, "the recorder's repeats are one series\n%s", a.Report())
	e := rejected[0]
	require.Equal(t, 3, occurrences(rejected), "the series counts every repeat, the last written at the App's stop")
	require.Equal(t, "Warning", e.Type)
	require.Equal(t, "FlagsRejected", e.Reason)
	require.Equal(t, "Admit", e.Action)
	require.Equal(t, "memcached-webhook", e.ReportingController)
	require.Equal(t, "pod-a", e.ReportingInstance)
	require.Equal(t, corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "flags", UID: cm.UID}, e.Regarding)
	require.Equal(t, &corev1.ObjectReference{APIVersion: mRef.APIVersion, Kind: "Memcached", Namespace: ns, Name: "m", UID: m.GetUID()}, e.Related)
}
