package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	loamtelemetry "github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The deadline tests bound each reconcile with a short
// Settings.ReconcileTimeout, and hang the first call of the end user's
// code for each object on <-ctx.Done(), as a call stuck on a request that
// honours its context does. docs/kubernetes.md promises that the context
// ends no earlier than ReconcileTimeout after the call started, and that
// the object is retried with backoff.

// deadlineTimeout is the tests' ReconcileTimeout.
const deadlineTimeout = 1500 * time.Millisecond

// hungCall is what the tests saw of one call of the end user's code: when
// it started, the deadline its context carried, and when and why that
// context ended; ended is zero for a call that didn't hang.
type hungCall struct {
	name              string
	started, deadline time.Time
	ended             time.Time
	err, cause        error
}

// hangFirst hangs the first call for each object until its context ends,
// and lets every later call through. It is safe for concurrent use.
type hangFirst struct {
	mu    sync.Mutex
	calls []hungCall
}

// call runs one call over the object name in ctx: the first for name
// waits for ctx to end, and returns ctx's error.
func (h *hangFirst) call(ctx context.Context, name string) error {
	c := hungCall{name: name, started: time.Now()}
	c.deadline, _ = ctx.Deadline()
	h.mu.Lock()
	first := !slices.ContainsFunc(h.calls, func(o hungCall) bool { return o.name == name })
	i := len(h.calls)
	h.calls = append(h.calls, c)
	h.mu.Unlock()
	if !first {
		return nil
	}
	<-ctx.Done()
	ended, err, cause := time.Now(), ctx.Err(), context.Cause(ctx)
	h.mu.Lock()
	h.calls[i].ended, h.calls[i].err, h.calls[i].cause = ended, err, cause
	h.mu.Unlock()
	return err
}

// of returns the calls for the object name, in the order they started.
func (h *hangFirst) of(name string) []hungCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hungCall
	for _, c := range h.calls {
		if c.name == name {
			out = append(out, c)
		}
	}
	return out
}

// requireCancelledAtTheDeadline checks that the first of calls hung until
// its context ended, no earlier than deadlineTimeout after the reconcile
// started, by its deadline, with a cause naming the object; and that
// another call came after it returned: the retry.
func requireCancelledAtTheDeadline(t *testing.T, calls []hungCall, reconcileStarted time.Time, step, key string) {
	t.Helper()
	require.GreaterOrEqual(t, len(calls), 2, "the hung call was retried")
	hung := calls[0]
	require.False(t, hung.ended.IsZero(), "the first call hung until its context ended")
	require.ErrorIs(t, hung.err, context.DeadlineExceeded)
	require.EqualError(t, hung.cause, fmt.Sprintf("%s of %s timed out after 1.5s: context deadline exceeded", step, key))

	// The deadline is set as the call starts: after the reconcile began,
	// before the end user's code did.
	require.False(t, hung.deadline.Before(reconcileStarted.Add(deadlineTimeout)),
		"the deadline %v is ReconcileTimeout after the reconcile began at %v, or later", hung.deadline, reconcileStarted)
	require.False(t, hung.deadline.After(hung.started.Add(deadlineTimeout)),
		"the deadline %v was set before the call started at %v", hung.deadline, hung.started)
	// The promise: the context ends no earlier than its deadline.
	require.False(t, hung.ended.Before(hung.deadline), "cancelled at %v, before the deadline %v", hung.ended, hung.deadline)
	require.GreaterOrEqual(t, hung.ended.Sub(reconcileStarted), deadlineTimeout, "cancelled no earlier than ReconcileTimeout")

	require.False(t, calls[1].started.Before(hung.ended), "the retry came after the hung call returned")
}

// timedOutSpan returns the one reconcile span of the object ns/name whose
// outcome is timeout, and checks it says so: its status is Error, and it
// names the timeout.
func timedOutSpan(t *testing.T, a *controllerApp, ns, name string) (start, end time.Time) {
	t.Helper()
	var found int
	for _, s := range a.Telemetry().SpansNamed("reconcile Memcached") {
		attrs := attribute.NewSet(s.Attributes...)
		if v, _ := attrs.Value(loamtelemetry.ObjectNameKey); v.AsString() != name {
			continue
		}
		if v, _ := attrs.Value(loamtelemetry.NamespaceKey); v.AsString() != ns {
			continue
		}
		if v, _ := attrs.Value(loamtelemetry.OutcomeKey); v.AsString() != "timeout" {
			continue
		}
		found++
		require.Equal(t, codes.Error, s.Status.Code)
		v, _ := attrs.Value(loamtelemetry.TimeoutKey)
		require.Equal(t, "1.5s", v.AsString())
		start, end = s.StartTime, s.EndTime
	}
	require.Equal(t, 1, found, "one reconcile of %s/%s timed out\n%s", ns, name, a.Report())
	return start, end
}

// timedOutRecord returns the one WARN record "reconcile timed out" naming
// the object ns/name, with its attributes.
func timedOutRecord(t *testing.T, a *controllerApp, ns, name string) (sdklog.Record, map[string]string) {
	t.Helper()
	var (
		found []sdklog.Record
		attrs map[string]string
	)
	for _, r := range a.Telemetry().Records() {
		if r.Body().AsString() != "reconcile timed out" {
			continue
		}
		got := map[string]string{}
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			got[string(kv.Key)] = kv.Value.String()
			return true
		})
		if got[string(loamtelemetry.ObjectNameKey)] == name && got[string(loamtelemetry.NamespaceKey)] == ns {
			found, attrs = append(found, r), got
		}
	}
	require.Len(t, found, 1, "one record of the timeout of %s/%s\n%s", ns, name, a.Report())
	return found[0], attrs
}

// timeouts returns how many reconciles reconcile.duration counts with the
// outcome timeout.
func timeouts(t *testing.T, a *controllerApp) uint64 {
	t.Helper()
	h, err := a.Telemetry().Metric(t.Context(), loamtelemetry.ReconcileDurationName)
	require.NoError(t, err)
	var n uint64
	for _, dp := range h.Data.(metricdata.Histogram[float64]).DataPoints {
		if v, _ := dp.Attributes.Value(loamtelemetry.OutcomeKey); v.AsString() == "timeout" {
			n += dp.Count
		}
	}
	return n
}

// requireTimeoutRecorded checks the timed-out call step made over
// ns/name is one span and one WARN record, both naming the timeout, whose
// error is the deadline's, and returns when its span started.
func requireTimeoutRecorded(t *testing.T, a *controllerApp, ns, name, step string) time.Time {
	t.Helper()
	start, end := timedOutSpan(t, a, ns, name)
	require.GreaterOrEqual(t, end.Sub(start), deadlineTimeout, "the timed-out reconcile lasted its timeout at least")
	r, attrs := timedOutRecord(t, a, ns, name)
	require.Equal(t, "WARN", r.SeverityText())
	require.Equal(t, "1.5s", attrs[string(loamtelemetry.TimeoutKey)])
	require.Contains(t, attrs["exception.message"], fmt.Sprintf("%s of %s/%s timed out after 1.5s: context deadline exceeded", step, ns, name))
	require.False(t, r.Timestamp().Before(start.Add(deadlineTimeout)), "recorded once the deadline had passed")
	require.Empty(t, a.Telemetry().ExceptionMessages("reconcile failed"), "a timeout is no reconcile failed record")
	return start
}

// The issue: "a hung Reconciler cancelled at the deadline and retried".
// Two Memcacheds: the first call for each hangs until its deadline.
// "quiet" returns no status, so only the retry reconciles it again, and
// the retry's status lands. "noted" returns a status with a TimedOut
// condition, which is applied though the call's context had ended; its
// retries return no status, so that condition stays for the test to read.
func TestDeadline_a_hung_Reconcile_is_cancelled_at_ReconcileTimeout_and_retried(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	newMemcached(t, admin.dynamic, r, ns, "quiet", 1)
	newMemcached(t, admin.dynamic, r, ns, "noted", 2)

	h := &hangFirst{}
	reconciler := kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(ctx context.Context, m memcachedObject) (kube.Result[memcachedStatus], error) {
		st := m.Status
		err := h.call(ctx, m.Name)
		switch {
		case m.Name == "noted" && err != nil:
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{
				Type: "Progressing", Status: metav1.ConditionFalse, Reason: "TimedOut",
				Message: err.Error(), ObservedGeneration: m.Generation,
			})
			return kube.Result[memcachedStatus]{Status: &st}, err
		case m.Name == "noted", err != nil:
			return kube.Result[memcachedStatus]{}, err
		}
		st.ReadyReplicas = m.Spec.Size
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: "Available", Status: metav1.ConditionTrue, Reason: "Reconciled", ObservedGeneration: m.Generation,
		})
		return kube.Result[memcachedStatus]{Status: &st}, nil
	})
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("deadline-controller", ns, "pod-a")
		settings.Namespace = ns
		settings.Workers = 2 // both hang at once
		settings.ReconcileTimeout = deadlineTimeout
		return kube.NewController(s, client, settings, r, reconciler)
	})

	wait.For(t, time.Minute, func() bool {
		m, _ := getMemcached(t, admin.dynamic, r, ns, "quiet")
		return m.Status.ReadyReplicas == 1 && meta.IsStatusConditionTrue(m.Status.Conditions, "Available")
	}, "the retry's status never lands on quiet", a)
	wait.For(t, time.Minute, func() bool {
		m, _ := getMemcached(t, admin.dynamic, r, ns, "noted")
		c := meta.FindStatusCondition(m.Status.Conditions, "Progressing")
		return c != nil && c.Reason == "TimedOut" && len(h.of("noted")) >= 2
	}, "the timed-out call's condition never lands on noted, or noted isn't retried", a)
	m, _ := getMemcached(t, admin.dynamic, r, ns, "noted")
	require.Contains(t, meta.FindStatusCondition(m.Status.Conditions, "Progressing").Message, "context deadline exceeded")

	for _, name := range []string{"quiet", "noted"} {
		start := requireTimeoutRecorded(t, a, ns, name, "reconcile")
		requireCancelledAtTheDeadline(t, h.of(name), start, "reconcile", ns+"/"+name)
	}
	require.Equal(t, uint64(2), timeouts(t, a), "reconcile.duration counts each timeout once")
	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())
}

// "Finalize functions get the same deadline": a Finalize that hangs is
// cancelled at ReconcileTimeout, keeps the finalizer, and is retried; the
// retry lets the object go.
func TestDeadline_a_hung_Finalize_is_cancelled_at_ReconcileTimeout_keeps_the_finalizer_and_is_retried(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	newMemcached(t, admin.dynamic, r, ns, "m", 1)

	h := &hangFirst{}
	reconciler := kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(context.Context, memcachedObject) (kube.Result[memcachedStatus], error) {
		return kube.Result[memcachedStatus]{}, nil
	})
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("deadline-controller", ns, "pod-a")
		settings.Namespace = ns
		settings.ReconcileTimeout = deadlineTimeout
		return kube.NewController(s, client, settings, r, reconciler,
			kube.Finalize(finalizer, func(ctx context.Context, m memcachedObject) error {
				if m.DeletionTimestamp == nil {
					return errors.New("called for an object that isn't being deleted")
				}
				return h.call(ctx, m.Name)
			}))
	})
	wait.For(t, time.Minute, func() bool {
		m, _ := getMemcached(t, admin.dynamic, r, ns, "m")
		return slices.Contains(m.Finalizers, finalizer)
	}, "the finalizer is never added", a)

	require.NoError(t, admin.dynamic.Resource(r.GVR()).Namespace(ns).Delete(t.Context(), "m", metav1.DeleteOptions{}))
	wait.For(t, time.Minute, func() bool { _, ok := getMemcached(t, admin.dynamic, r, ns, "m"); return !ok }, "the retried Finalize never lets the object go", a)

	// Finalize runs only while the finalizer holds the object: a second
	// call says the timed-out one left it there.
	start := requireTimeoutRecorded(t, a, ns, "m", "finalize")
	requireCancelledAtTheDeadline(t, h.of("m"), start, "finalize", ns+"/m")
	require.Equal(t, uint64(1), timeouts(t, a), "reconcile.duration counts the timeout once")
	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())
}
