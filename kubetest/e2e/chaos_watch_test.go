package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/adapters/transport"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// sizeLog records which size each reconcile of an object saw, and when.
type sizeLog struct {
	mu      sync.Mutex
	entries []sizeEntry
}

type sizeEntry struct {
	at   time.Time
	name string
	size int32
}

func (l *sizeLog) add(name string, size int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, sizeEntry{at: time.Now(), name: name, size: size})
}

// first returns when a reconcile of name first saw size, and false if
// none has.
func (l *sizeLog) first(name string, size int32) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.entries {
		if e.name == name && e.size == size {
			return e.at, true
		}
	}
	return time.Time{}, false
}

func TestChaos_a_dead_connection_is_noticed_by_the_HTTP2_ping_and_a_change_made_meanwhile_is_reconciled(t *testing.T) {
	t.Parallel() // it mostly waits for the ping
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	conn := c.Connection()
	proxy := startTCPProxy(t, conn.Server)

	var sizes sizeLog
	a := startChaosController(t, conn, app.Host{Network: &chaosNetwork{Network: via(proxy.addr())}}, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("watch-controller", ns, "pod-0")
		settings.Namespace = ns
		// A Lease that outlives the black hole: the renewal stuck on the
		// dead connection fails when the ping closes it, and the next one
		// goes through a new connection, well within RenewDeadline. With
		// Kubernetes' 10 s the leader would step down first, and that
		// restart, not the ping, would be what the test saw.
		settings.LeaderElection.LeaseDuration = 2 * time.Minute
		settings.LeaderElection.RenewDeadline = 100 * time.Second
		settings.LeaderElection.RetryPeriod = 2 * time.Second
		return kube.NewController(s, client, settings, r,
			kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(_ context.Context, m memcachedObject) (kube.Result[memcachedStatus], error) {
				sizes.add(m.Name, m.Spec.Size)
				st := m.Status
				st.ReadyReplicas = m.Spec.Size
				return kube.Result[memcachedStatus]{Status: &st}, nil
			}))
	})

	newMemcached(t, admin.dynamic, r, ns, "watched", 1)
	wait.For(t, time.Minute, func() bool { _, ok := sizes.first("watched", 1); return ok }, "never reconciled", a)
	wait.For(t, time.Minute, func() bool {
		m, _ := getMemcached(t, admin.dynamic, r, ns, "watched")
		return m.Status.ReadyReplicas == 1
	}, "no status", a)

	// Every connection the App has goes dead, both ways, with neither
	// side closed.
	holed := proxy.blackhole()
	blackholed := time.Now()
	require.Positive(t, holed, "the App never dialled through the proxy")

	// A change the dead watch can't carry: only a new watch, or a new
	// list, on a new connection brings it.
	_, err := admin.dynamic.Resource(r.GVR()).Namespace(ns).Patch(t.Context(), "watched", types.MergePatchType, []byte(`{"spec":{"size":2}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	// The promise: the ping after ReadIdleTimeout without a frame, and the
	// connection dropped after PingTimeout without an answer: 45 s. The
	// slack is for a busy machine, and for the relist.
	promise := transport.ReadIdleTimeout + transport.PingTimeout
	wait.For(t, promise+30*time.Second, func() bool { _, ok := sizes.first("watched", 2); return ok }, "the change made during the black hole isn't reconciled", a)
	at, _ := sizes.first("watched", 2)
	took := at.Sub(blackholed)

	gone := proxy.clientsGone()
	require.NotEmpty(t, gone, "the App never closed a dead connection: something else brought the change")
	noticed := gone[0].Sub(blackholed)
	for _, g := range gone[1:] {
		noticed = min(noticed, g.Sub(blackholed))
	}
	t.Logf("figure: dead connection: %d connection(s) black-holed; the App closed the first after %v (promise %v), and reconciled the change made meanwhile after %v; %d connection(s) dialled in all",
		holed, noticed.Round(time.Millisecond), promise, took.Round(time.Millisecond), proxy.accepted())

	// Not at once: a connection that closed or errored would have been
	// noticed in milliseconds. Only the ping, sent after ReadIdleTimeout
	// without a frame, tells a silent connection is dead; the last frame
	// came at most one RetryPeriod, a Lease renewal, before the black hole.
	require.Greater(t, noticed, transport.ReadIdleTimeout, "noticed before the ping could have: the dead connection wasn't what the test made")
	require.Less(t, noticed, promise+15*time.Second, "the dead connection was noticed later than the ping promises")
	require.Less(t, took, promise+30*time.Second)
	require.Greater(t, proxy.accepted(), holed, "the App dialled a new connection")

	// The controller kept its Lease and goes on.
	_, err = admin.dynamic.Resource(r.GVR()).Namespace(ns).Patch(t.Context(), "watched", types.MergePatchType, []byte(`{"spec":{"size":3}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	wait.For(t, time.Minute, func() bool { _, ok := sizes.first("watched", 3); return ok }, "a later change isn't reconciled", a)
	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())
}
