package scale

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// failoverResult is one takeover: how the leader went, and how long the
// standby took.
type failoverResult struct {
	n     int
	how   string
	lease leaseDurations
	// toFirst is from the leader's end (its network cut, or SIGTERM) to
	// the standby's first reconcile; acquiredToFirst from the standby's
	// record of taking the Lease to that reconcile, and watchedToFirst
	// from the harness's watch seeing it hold the Lease; acquiredToAll
	// until the standby had reconciled every object.
	toFirst, acquiredToFirst, watchedToFirst, acquiredToAll time.Duration
}

// The two ways a leader goes.
const (
	howCut     = "network cut, Lease kept"
	howSIGTERM = "SIGTERM, Lease released"
)

// leaseWatch records who holds a Lease, and since when, as the harness's
// watch sees it.
type leaseWatch struct {
	mu      sync.Mutex
	holders map[string]time.Time // when each identity was first seen holding it
	stopped chan struct{}
}

func watchLease(t *testing.T, cl clients, ns, name string) *leaseWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	w, err := cl.kube.CoordinationV1().Leases(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	require.NoError(t, err)
	lw := &leaseWatch{holders: map[string]time.Time{}, stopped: make(chan struct{})}
	go func() {
		defer close(lw.stopped)
		for ev := range w.ResultChan() {
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok {
				continue
			}
			holder := ptr.Deref(l.Spec.HolderIdentity, "")
			now := time.Now()
			lw.mu.Lock()
			if _, seen := lw.holders[holder]; !seen {
				lw.holders[holder] = now
			}
			lw.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		cancel()
		<-lw.stopped
	})
	return lw
}

// since returns when identity was first seen holding the Lease.
func (lw *leaseWatch) since(identity string) (time.Time, bool) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	at, ok := lw.holders[identity]
	return at, ok
}

// replica is one of the failover's Apps with its reconciles.
type replica struct {
	*controllerApp
	identity string
	tally    *tally
}

// measureFailover runs replicas of the harness's Controller over the n
// settled objects of ns and makes the leader go twice: cut off from the
// API server, keeping its Lease, and then, the standby leading, by
// SIGTERM, releasing it.
func measureFailover(t *testing.T, c *kubetest.Cluster, cfg config, n int, ns string) []failoverResult {
	t.Helper()
	ctx := t.Context()
	cl := newClients(t, c.RESTConfig())
	const name = "scale-failover"
	leases := watchLease(t, cl, ns, name)
	start := func(identity string) *replica {
		r := &replica{identity: identity, tally: newTally()}
		r.controllerApp = startController(t, c.Connection(), controllerConfig{
			name: name, namespace: ns, identity: identity, workers: 4, owns: true, lease: cfg.lease, tally: r.tally,
		})
		r.waitSynced(ctx, t)
		return r
	}
	// quiet waits until r has reconciled every object and then nothing
	// for half a second.
	quiet := func(r *replica, apps ...*controllerApp) {
		wait.For(t, 10*time.Minute, func() bool {
			_, objects, _, last := r.tally.snapshot()
			return objects == n && time.Since(last) > 500*time.Millisecond
		}, r.identity+" never reconciled every object", wait.All(apps)...)
	}
	// takeover waits for the standby's reconciles after the leader went
	// at gone.
	takeover := func(how string, gone time.Time, standby *replica) failoverResult {
		wait.For(t, 10*time.Minute, func() bool { _, objects, _, _ := standby.tally.snapshot(); return objects == n }, standby.identity+" never reconciled every object", standby.controllerApp)
		_, _, first, last := standby.tally.snapshot()
		acquired := standby.recordTimes(acquiredLease)
		require.Len(t, acquired, 1, "%s took the Lease once", standby.identity)
		watched, ok := leases.since(standby.identity)
		require.True(t, ok, "the harness never saw %s hold the Lease", standby.identity)
		return failoverResult{
			n: n, how: how, lease: cfg.lease,
			toFirst:         first.Sub(gone),
			acquiredToFirst: first.Sub(acquired[0]),
			watchedToFirst:  first.Sub(watched),
			acquiredToAll:   last.Sub(acquired[0]),
		}
	}

	leader := start("pod-0")
	wait.For(t, 10*time.Minute, func() bool { return len(leader.recordTimes(acquiredLease)) > 0 }, "pod-0 never leads", leader.controllerApp)
	standby := start("pod-1")
	quiet(leader, leader.controllerApp, standby.controllerApp)
	require.Zero(t, func() int { total, _, _, _ := standby.tally.snapshot(); return total }(), "the standby reconciled")

	// The leader is cut off from the API server, as by a crash: it can't
	// renew its Lease, or release it.
	cut := time.Now()
	leader.network.Cut()
	cutResult := takeover(howCut, cut, standby)
	require.Equal(t, 1, leader.Wait(), "a leader that lost its Lease exits 1")

	// A new standby, and the leader gets SIGTERM: it releases the Lease.
	next := start("pod-2")
	quiet(standby, standby.controllerApp, next.controllerApp)
	exited := make(chan int, 1)
	term := time.Now()
	go func() {
		standby.Signal(syscall.SIGTERM)
		exited <- standby.Wait()
	}()
	termResult := takeover(howSIGTERM, term, next)
	require.Equal(t, 0, <-exited, "SIGTERM: a clean exit")
	require.Equal(t, 0, next.Stop())
	return []failoverResult{cutResult, termResult}
}
