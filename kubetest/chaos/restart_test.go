package chaos

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// TestChaos_API_server_restarts restarts the API server — same etcd, same
// address — again and again while a loader creates Widgets and changes
// their specs. The controller must ride it out: it never exits, never
// panics, and once the loader stops, every Widget's status and ConfigMap
// reflect its latest spec.
func TestChaos_API_server_restarts(t *testing.T) {
	restarts := sized(2, 4, 10)
	objects := sized(30, 100, 500)
	c := startCluster(t)
	ns := c.Namespace(t)
	admin := adminClients(t, c)

	settings := settingsFor(ns, "pod-0")
	settings.Workers = 4
	// Kubernetes' own Lease durations. The leader gives its Lease up when
	// it can't renew it for RenewDeadline, 10s, and Serve then ends with
	// ErrLostLeadership: by design, an API server away for longer ends
	// the App. A restart keeps it away for a few seconds.
	rep := startReplica(t, c.Connection(), settings, func(k kubernetes.Interface) kube.Reconciler[widgetSpec, widgetStatus] {
		return kube.ReconcilerFunc[widgetSpec, widgetStatus](func(ctx context.Context, w widget) (kube.Result[widgetStatus], error) {
			return reconcileWidget(ctx, k, w)
		})
	})
	wait.For(t, time.Minute, func() bool { return rep.synced(t) }, "the replica never synced", rep)

	// The probe is a Widget the loader leaves alone: changed once right
	// after the last restart, it times how soon the controller sees a
	// change again.
	_, err := createWidget(t.Context(), admin.dynamic, ns, "probe", 1)
	require.NoError(t, err)
	load := startLoader(admin.dynamic, ns, objects, 4)
	t.Cleanup(load.stop)
	var outages []time.Duration
	for i := range restarts {
		time.Sleep(2 * time.Second) // the loader runs against a live server
		began := time.Now()
		require.NoError(t, c.Restart(t.Context()), "restart %d", i+1)
		outages = append(outages, time.Since(began))
		require.False(t, rep.exited(), "the controller exited at restart %d: %q", i+1, rep.failure())
	}
	_, err = setValue(t.Context(), admin.dynamic, ns, "probe", 2)
	require.NoError(t, err)
	probed := time.Now()
	var probeSeen time.Duration
	wait.For(t, 3*time.Minute, func() bool {
		w, err := admin.dynamic.Resource(widgets.GVR()).Namespace(ns).Get(t.Context(), "probe", metav1.GetOptions{})
		require.NoError(t, err)
		observed, _, _ := unstructured.NestedInt64(w.Object, "status", "value")
		probeSeen = time.Since(probed)
		return observed == 2
	}, "the controller never saw the probe's change", rep)
	wait.For(t, time.Minute, func() bool { return load.created.Load() == int64(objects) }, "the loader never created every Widget", rep)
	load.stop()

	// Once the loader stops, every Widget converges. The informers back
	// off exponentially while the API server is away (client-go's
	// reflector: from 0.8s, to 30s and up to twice that with jitter), so
	// the wait allows for the longest backoff.
	stopped := time.Now()
	wait.For(t, 3*time.Minute, func() bool {
		ws, children := listWidgets(t, admin, ns)
		return len(ws) == objects+1 && converged(ws, children) == objects+1
	}, "not every Widget reflects its latest spec", rep)
	convergedIn := time.Since(stopped)

	require.False(t, rep.exited(), "the controller exited: %q", rep.failure())
	require.True(t, rep.synced(t))
	outcomes := rep.outcomes(t)
	require.Empty(t, rep.Telemetry().ExceptionMessages("reconcile panicked"), "a reconcile panicked")
	require.Zero(t, outcomes["panic"], "a reconcile panicked")

	lowest, median, highest := percentiles(outages)
	figure(t, "restarts of the API server", "%d", restarts)
	figure(t, "Widgets created, spec changes", "%d, %d (%d writes failed while the API server was away)", objects, load.changed.Load(), load.failed.Load())
	figure(t, "API server away per restart (min/median/max)", "%v / %v / %v", lowest.Round(time.Millisecond), median.Round(time.Millisecond), highest.Round(time.Millisecond))
	figure(t, "reconciles: succeeded, failed, panicked", "%d, %d, %d", outcomes["success"], outcomes["error"], outcomes["panic"])
	figure(t, "a change right after the last restart reconciled in", "%v", probeSeen.Round(time.Millisecond))
	figure(t, "every Widget converged, after the loader stopped, in", "%v", convergedIn.Round(time.Millisecond))
	figure(t, "controller exits", "0")
	require.Equal(t, 0, rep.Stop(), "SIGTERM: a clean exit")
}

// loader creates Widgets and then changes their specs, from a few
// goroutines, until stopped. A write that fails because the API server is
// away is counted and, for a create, retried: its outcome doesn't matter,
// since the test compares each Widget with its spec as the API server
// holds it.
type loader struct {
	created, changed, failed atomic.Int64

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// startLoader starts workers goroutines that create objects Widgets in ns
// between them, each then changing its own Widgets' values in turn.
func startLoader(d dynamic.Interface, ns string, objects, workers int) *loader {
	ctx, cancel := context.WithCancel(context.Background())
	l := &loader{cancel: cancel}
	for w := range workers {
		l.wg.Go(func() {
			var mine []string
			for i := w; i < objects; i += workers {
				name := fmt.Sprintf("w%04d", i)
				if !l.create(ctx, d, ns, name) {
					return
				}
				mine = append(mine, name)
			}
			for value := int64(2); ctx.Err() == nil; value++ {
				for _, name := range mine {
					if ctx.Err() != nil {
						return
					}
					err := bounded(ctx, func(ctx context.Context) error {
						_, err := setValue(ctx, d, ns, name, value)
						return err
					})
					if err != nil {
						l.failed.Add(1)
						pause(ctx, 50*time.Millisecond)
						continue
					}
					l.changed.Add(1)
					pause(ctx, 20*time.Millisecond)
				}
			}
		})
	}
	return l
}

// create creates the Widget name, trying again until it exists, and
// reports whether it does: not when ctx ended first.
func (l *loader) create(ctx context.Context, d dynamic.Interface, ns, name string) bool {
	for ctx.Err() == nil {
		err := bounded(ctx, func(ctx context.Context) error {
			_, err := createWidget(ctx, d, ns, name, 1)
			return err
		})
		if err == nil || apierrors.IsAlreadyExists(err) {
			l.created.Add(1)
			return true
		}
		l.failed.Add(1)
		pause(ctx, 50*time.Millisecond)
	}
	return false
}

// stop stops the loader and waits for its goroutines.
func (l *loader) stop() {
	l.once.Do(func() {
		l.cancel()
		l.wg.Wait()
	})
}

// bounded runs one of the loader's requests, bounded to 10s, so none
// hangs on a connection to an API server that went away.
func bounded(ctx context.Context, request func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return request(ctx)
}

// pause sleeps for d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
