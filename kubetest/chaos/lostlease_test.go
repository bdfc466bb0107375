package chaos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// stuckReconciles records the reconciles of a Reconciler that hangs until
// its context is done on any Widget past its first generation.
type stuckReconciles struct {
	mu    sync.Mutex
	calls []stuckCall
}

// stuckCall is one reconcile that hung: when it began and ended, why its
// context ended, and what its write after that returned.
type stuckCall struct {
	name       string
	start, end time.Time
	cause      error
	writeErr   error
}

func (s *stuckReconciles) began() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

func (s *stuckReconciles) all() []stuckCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]stuckCall(nil), s.calls...)
}

// reconcile reconciles a Widget's first generation at once. A later
// generation hangs until ctx is done; then, as a careless Reconciler
// would, it still applies the Widget's ConfigMap and returns its status.
// The controller must keep both from reaching the API server.
func (s *stuckReconciles) reconcile(ctx context.Context, k kubernetes.Interface, w widget) (kube.Result[widgetStatus], error) {
	if w.Generation == 1 {
		return reconcileWidget(ctx, k, w)
	}
	s.mu.Lock()
	i := len(s.calls)
	s.calls = append(s.calls, stuckCall{name: w.Name, start: time.Now()})
	s.mu.Unlock()

	<-ctx.Done()
	cause := context.Cause(ctx)
	writeErr := applyChild(ctx, k, w)

	s.mu.Lock()
	s.calls[i].end, s.calls[i].cause, s.calls[i].writeErr = time.Now(), cause, writeErr
	s.mu.Unlock()
	return kube.Result[widgetStatus]{Status: &widgetStatus{ObservedGeneration: w.Generation, Value: w.Spec.Value}}, nil
}

// TestChaos_lost_Lease_under_a_slow_reconcile loses the Lease while every
// worker is in a reconcile that hangs, and a backlog waits in the queue:
// once to another identity that takes the Lease, once by being cut off
// from the API server. Each reconcile in flight is cancelled with
// ErrLostLeadership; Serve returns ErrLostLeadership and the App exits 1;
// no reconcile starts after the loss; and nothing the replica writes
// reaches the API server after it — no Widget or ConfigMap changes at a
// resourceVersion past the loss, and no status of the hung generation is
// applied.
func TestChaos_lost_Lease_under_a_slow_reconcile(t *testing.T) {
	objects := sized(6, 12, 40)
	const workers = 3
	c := startCluster(t)
	admin := adminClients(t, c)

	for _, tc := range []struct {
		name string
		// lose makes the replica lose its Lease, and returns the revision
		// of a write made at the loss: anything written after it has a
		// later one.
		lose func(t *testing.T, ns string, r *replica) int64
		// holder is who holds the Lease in the end.
		holder string
	}{
		{
			name: "taken by another identity",
			lose: func(t *testing.T, ns string, _ *replica) int64 {
				var rv string
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					l := lease(t, admin.kube, ns)
					require.NotNil(t, l)
					now := metav1.NowMicro()
					l.Spec.HolderIdentity = ptr.To("intruder")
					l.Spec.LeaseDurationSeconds = ptr.To(int32(3600))
					l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
					updated, err := admin.kube.CoordinationV1().Leases(ns).Update(t.Context(), l, metav1.UpdateOptions{})
					if err == nil {
						rv = updated.ResourceVersion
					}
					return err
				})
				require.NoError(t, err)
				return revision(t, rv)
			},
			holder: "intruder",
		},
		{
			name: "cut off from the API server",
			lose: func(t *testing.T, ns string, r *replica) int64 {
				r.network.Cut()
				marker, err := admin.kube.CoreV1().ConfigMaps(ns).Create(t.Context(),
					&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "the-loss"}}, metav1.CreateOptions{})
				require.NoError(t, err)
				return revision(t, marker.ResourceVersion)
			},
			holder: "pod-0", // it couldn't release the Lease, and nobody else wants it
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lostLease(t, c, admin, objects, workers, tc.lose, tc.holder)
		})
	}
}

// queued returns how many keys wait in the replica's queue, from its
// queue.depth gauge: keys added and not yet taken by a worker.
func (r *replica) queued(t *testing.T) int64 {
	t.Helper()
	m, err := r.Telemetry().Metric(t.Context(), telemetry.QueueDepthName)
	if errors.Is(err, apptest.ErrNotRecorded) {
		return 0
	}
	require.NoError(t, err)
	g, ok := m.Data.(metricdata.Gauge[int64])
	require.True(t, ok, "queue.depth is a %T", m.Data)
	var n int64
	for _, dp := range g.DataPoints {
		n += dp.Value
	}
	return n
}

func lostLease(t *testing.T, c *kubetest.Cluster, admin clients, objects, workers int, lose func(*testing.T, string, *replica) int64, wantHolder string) {
	ns := c.Namespace(t)
	for i := range objects {
		_, err := createWidget(t.Context(), admin.dynamic, ns, fmt.Sprintf("w%03d", i), 1)
		require.NoError(t, err)
	}
	var stuck stuckReconciles
	settings := settingsFor(ns, "pod-0")
	settings.Workers = workers
	settings.LeaderElection.LeaseDuration = killLeaseDuration
	settings.LeaderElection.RenewDeadline = killRenewDeadline
	settings.LeaderElection.RetryPeriod = killRetryPeriod
	rep := startReplica(t, c.Connection(), settings, func(k kubernetes.Interface) kube.Reconciler[widgetSpec, widgetStatus] {
		return kube.ReconcilerFunc[widgetSpec, widgetStatus](func(ctx context.Context, w widget) (kube.Result[widgetStatus], error) {
			return stuck.reconcile(ctx, k, w)
		})
	})
	// The first generation is reconciled: the controller has written
	// every status and ConfigMap once.
	wait.For(t, time.Minute, func() bool {
		ws, children := listWidgets(t, admin, ns)
		return converged(ws, children) == objects
	}, "the first generation never converged", rep)

	// The second generation hangs every worker; the rest wait in the
	// queue.
	for i := range objects {
		_, err := setValue(t.Context(), admin.dynamic, ns, fmt.Sprintf("w%03d", i), 2)
		require.NoError(t, err)
	}
	wait.For(t, time.Minute, func() bool { return stuck.began() == workers }, "the workers never all hung", rep)
	// Every other change waits in the queue: a reconcile that began while
	// every worker hung would have taken its key out, and the queue would
	// never hold them all.
	wait.For(t, time.Minute, func() bool { return rep.queued(t) == int64(objects-workers) },
		fmt.Sprintf("the queue never held the %d changes left while every worker hung", objects-workers), rep,
		wait.LastSeen(func() string { return fmt.Sprintf("queued %d, reconciles hung %d", rep.queued(t), stuck.began()) }))
	require.Equal(t, workers, stuck.began(), "a reconcile began while every worker hung")

	lost := time.Now()
	lossRevision := lose(t, ns, rep)
	wait.For(t, time.Minute, rep.exited, "the replica never noticed the loss")
	exitedAfter := time.Since(lost)
	require.Equal(t, 1, rep.Wait(), "a lost Lease exits 1")
	require.Equal(t, kube.ErrLostLeadership.Error(), rep.failure())

	// Every reconcile in flight was cancelled with ErrLostLeadership, and
	// none began after the loss: the backlog is left to the next leader.
	calls := stuck.all()
	require.Len(t, calls, workers, "a reconcile began after the loss")
	var cancelled []time.Duration
	for _, call := range calls {
		require.ErrorIs(t, call.cause, kube.ErrLostLeadership, "%s: the reconcile in flight is cancelled by the loss", call.name)
		require.Error(t, call.writeErr, "%s: a write after the loss reached the API server", call.name)
		require.True(t, call.start.Before(lost), "%s: began after the loss", call.name)
		cancelled = append(cancelled, call.end.Sub(lost))
	}

	// Nothing the replica wrote after the loss reached the API server: no
	// Widget or ConfigMap of the controller's has changed since, and every
	// status is still the first generation's.
	ws, children := listWidgets(t, admin, ns)
	require.Len(t, ws, objects)
	for _, w := range ws {
		require.Less(t, revision(t, w.ResourceVersion), lossRevision, "%s: written after the loss", w.Name)
		require.Equal(t, widgetStatus{ObservedGeneration: 1, Value: 1}, w.Status, "%s: a status applied after the loss", w.Name)
		for _, e := range w.ManagedFields {
			if e.Manager == controllerName && e.Time != nil {
				require.False(t, e.Time.After(lost), "%s: the controller's %s fields were written at %s, after the loss at %s", w.Name, e.Subresource, e.Time, lost)
			}
		}
		cm, ok := children[w.Name]
		require.True(t, ok, "%s: no ConfigMap", w.Name)
		require.Less(t, revision(t, cm.ResourceVersion), lossRevision, "%s: its ConfigMap written after the loss", w.Name)
		require.Equal(t, "1", cm.Data["value"], "%s: its ConfigMap written after the loss", w.Name)
	}
	require.Equal(t, wantHolder, holder(t, admin.kube, ns), "a lost Lease is never released")

	lowest, median, highest := percentiles(cancelled)
	figure(t, "loss to the reconciles in flight cancelled (min/median/max)", "%v / %v / %v", lowest.Round(time.Millisecond), median.Round(time.Millisecond), highest.Round(time.Millisecond))
	figure(t, "loss to the App's exit with ErrLostLeadership", "%v", exitedAfter.Round(time.Millisecond))
	figure(t, "reconciles in flight, backlog left to the next leader, writes after the loss", "%d, %d, 0", workers, objects-workers)
	t.Logf("the Reconciler's write after the loss returned: %v", calls[0].writeErr)
}
