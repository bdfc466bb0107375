package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/loam-dev/loam/domain/controller"
	"github.com/loam-dev/loam/domain/shard"
	"github.com/loam-dev/loam/ports"
)

// leaseServer is a sharded controller's Leases in memory, as the API
// server keeps them: each held by one holder at a time, until it is
// released or the test gives it to another. A held Lease reads as renewed
// whenever it is read, as a live holder's is.
type leaseServer struct {
	j *journal

	mu      sync.Mutex
	holders map[string]string
	counts  map[string]int
	watches []func()
	// stopped is when each Lease's holder stopped renewing it, as
	// client-go's renew loop stops once its elector's context ends, while
	// it still holds it; running counts each Lease's electors of one
	// holder running at once, and most the highest count.
	stopped map[string]time.Time
	running map[string]int
	most    map[string]int
	// changed is closed and replaced at every change, for electors that
	// wait for a free Lease.
	changed chan struct{}
}

func newLeaseServer(j *journal) *leaseServer {
	return &leaseServer{
		j: j, holders: map[string]string{}, counts: map[string]int{}, changed: make(chan struct{}),
		stopped: map[string]time.Time{}, running: map[string]int{}, most: map[string]int{},
	}
}

// set makes holder, running with count shards, hold the Lease name; ""
// frees it.
func (s *leaseServer) set(name, holder string, count int) {
	s.mu.Lock()
	s.holders[name] = holder
	s.counts[name] = count
	delete(s.stopped, name)
	close(s.changed)
	s.changed = make(chan struct{})
	watches := slices.Clone(s.watches)
	s.mu.Unlock()
	for _, w := range watches {
		w()
	}
}

// acquire gives the Lease name to holder if it is free, and reports
// whether holder holds it, with the channel closed at the next change.
func (s *leaseServer) acquire(name, holder string, count int) (bool, <-chan struct{}) {
	s.mu.Lock()
	cur, changed := s.holders[name], s.changed
	s.mu.Unlock()
	if cur == holder {
		return true, changed
	}
	if cur != "" {
		return false, changed
	}
	s.set(name, holder, count)
	s.j.add(holder + " acquired " + name)
	return true, nil
}

// stopRenewing records that holder stopped renewing the Lease name, if
// it holds it.
func (s *leaseServer) stopRenewing(name, holder string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holders[name] == holder {
		s.stopped[name] = time.Now()
		s.j.add(holder + " stops renewing " + name)
	}
}

// takeable reports whether another replica could take the Lease name
// now: it is free, or its holder stopped renewing it at least
// LeaseDuration ago.
func (s *leaseServer) takeable(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.stopped[name]
	return s.holders[name] == "" || ok && time.Since(at) >= fenced.LeaseDuration
}

// electing counts an elector of name that starts (+1) or returns (-1).
func (s *leaseServer) electing(name string, d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running[name] += d
	s.most[name] = max(s.most[name], s.running[name])
}

// mostElectors returns the most electors of one replica that ran at once
// for the Lease name.
func (s *leaseServer) mostElectors(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most[name]
}

func (s *leaseServer) holder(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holders[name]
}

// leases are one replica's ShardLeases on a leaseServer.
type leases struct {
	srv              *leaseServer
	identity, holder string
	count            int
}

var _ ports.ShardLeases = (*leases)(nil)

func (l *leases) Holder() string        { return l.holder }
func (l *leases) Member() ports.Elector { return &leaseElector{l: l, name: "member-" + l.identity} }
func (l *leases) Shard(i int, _ func(ports.LeaseRecord) bool) ports.Elector {
	return &leaseElector{l: l, name: "shard-" + strconv.Itoa(i)}
}
func (l *leases) Start(_ context.Context, changed func()) {
	l.srv.mu.Lock()
	defer l.srv.mu.Unlock()
	l.srv.watches = append(l.srv.watches, changed)
}
func (l *leases) WaitForSync(context.Context) bool { return true }
func (l *leases) Check(context.Context) error      { return nil }
func (l *leases) Stop()                            {}

func (l *leases) Records() []ports.LeaseRecord {
	l.srv.mu.Lock()
	defer l.srv.mu.Unlock()
	var out []ports.LeaseRecord
	for name, h := range l.srv.holders {
		r := ports.LeaseRecord{Name: name, Shard: -1, Holder: h, Renewed: time.Now(), Duration: fenced.LeaseDuration, Count: l.srv.counts[name]}
		if n, ok := strings.CutPrefix(name, "shard-"); ok {
			r.Shard, _ = strconv.Atoi(n)
		}
		out = append(out, r)
	}
	return out
}

// leaseElector campaigns for one Lease of a leaseServer, keeping the
// port's promise: it releases the Lease only once onStarted returned.
type leaseElector struct {
	l    *leases
	name string
}

func (e *leaseElector) Run(ctx context.Context, onStarted func(context.Context), onStopped func()) {
	defer onStopped()
	srv := e.l.srv
	srv.electing(e.name, 1)
	defer srv.electing(e.name, -1)
	for {
		held, changed := srv.acquire(e.name, e.l.holder, e.l.count)
		if held {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
	leading, cancel := context.WithCancel(ctx)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		onStarted(leading)
	}()
	// Held until ctx ends or the test gives the Lease to another.
	for ctx.Err() == nil && srv.holder(e.name) == e.l.holder {
		srv.mu.Lock()
		changed := srv.changed
		srv.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		// client-go's renew loop ends with the elector's context.
		srv.stopRenewing(e.name, e.l.holder)
	}
	cancel()
	<-returned
	if ctx.Err() != nil && srv.holder(e.name) == e.l.holder {
		srv.j.add(e.l.holder + " released " + e.name)
		srv.set(e.name, "", 0)
	}
}

// runSharded serves until the returned cancel is called, with the Watch
// checked, started and synced, and returns once nothing moves in the
// bubble.
func (r *rig) runSharded(t *testing.T) context.CancelFunc {
	t.Helper()
	r.watching()
	ctx, cancel := context.WithCancel(t.Context())
	r.serve(ctx)
	close(r.synced)
	synctest.Wait()
	return cancel
}

// stopServing ends Serve's context with cancel and requires that Serve,
// once everything in the bubble is blocked, returned nil.
func (r *rig) stopServing(t *testing.T, cancel context.CancelFunc) {
	t.Helper()
	cancel()
	synctest.Wait()
	require.NoError(t, <-r.served)
}

// objectOf returns the name of an object, starting with prefix, whose
// uid (its name, in the rig) is in shard s of count.
func objectOf(prefix string, s, count int) string {
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if shard.Of(name, count) == s {
			return name
		}
	}
}

// newShardedRig returns a rig whose Controller is replica "a" of a
// controller with count shards on srv's Leases. Its journal records each
// shard the Watch is told to hold and release.
func newShardedRig(t *testing.T, srv *leaseServer, count int, with ...func(*controller.Config)) *rig {
	t.Helper()
	r := newRig(t, 2, append([]func(*controller.Config){func(c *controller.Config) {
		c.Elector = nil
		c.Shards = count
		c.ShardLeases = &leases{srv: srv, identity: "a", holder: "a_1", count: count}
	}}, with...)...)
	srv.j = r.j
	r.rec.EXPECT().ShardChanged(gomock.Any(), gomock.Any(), gomock.Any(), count).Do(func(_ context.Context, c ports.ShardChange, s, _ int) {
		r.j.add(fmt.Sprintf("shard %d %s", s, c))
	}).AnyTimes()
	r.watch.EXPECT().Hold(gomock.Any()).Do(func(s int) { r.j.add(fmt.Sprintf("watch holds %d", s)) }).AnyTimes()
	r.watch.EXPECT().Release(gomock.Any()).Do(func(s int) { r.j.add(fmt.Sprintf("watch releases %d", s)) }).AnyTimes()
	return r
}

// TestShardedReleasesAShardOnlyOnceItsReconcilesAreDone: a replica that
// holds both shards gives one up when another replica joins, and only once
// the reconcile of that shard's object in flight has returned.
func TestShardedReleasesAShardOnlyOnceItsReconcilesAreDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLeaseServer(nil)
		r := newShardedRig(t, srv, 2)
		cancel := r.runSharded(t)
		defer cancel()
		require.Equal(t, "a_1", srv.holder("shard-0"))
		require.Equal(t, "a_1", srv.holder("shard-1"))
		r.j.before(t, "a_1 acquired member-a", "healthy")
		// The Watch holds each shard once its Lease is held.
		r.j.before(t, "a_1 acquired shard-0", "watch holds 0")
		r.j.before(t, "a_1 acquired shard-1", "watch holds 1")

		// a is first of {a, b}: it keeps shard 0, its own, and gives up 1.
		held := objectOf("hold", 1, 2)
		r.change(held)
		synctest.Wait()
		srv.set("member-b", "b_1", 2)
		synctest.Wait()
		require.Equal(t, "a_1", srv.holder("shard-1"), "released with a reconcile of its object in flight")
		close(r.handler.release)
		synctest.Wait()
		require.Empty(t, srv.holder("shard-1"))
		r.j.before(t, "reconciled "+held, "a_1 released shard-1")
		r.j.before(t, "a_1 released shard-1", "shard 1 released")
		// The Watch gives the shard up once its passes are done, and
		// before its Lease goes.
		r.j.before(t, "reconciled "+held, "watch releases 1")
		r.j.before(t, "watch releases 1", "a_1 released shard-1")
		require.NotContains(t, r.j.all(), "watch releases 0")
		require.Equal(t, "a_1", srv.holder("shard-0"))
		require.Equal(t, []error{nil}, r.handler.heldCauses(), "the reconcile finished, uncancelled")

		r.stopServing(t, cancel)
		// The shards go first, the membership last.
		r.j.before(t, "a_1 released shard-0", "a_1 released member-a")
	})
}

// TestShardedReconcilesOnlyItsShards: with another replica holding shard
// 1, the replica reconciles the objects of shard 0 and skips the others.
func TestShardedReconcilesOnlyItsShards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLeaseServer(nil)
		srv.set("member-b", "b_1", 2)
		srv.set("shard-1", "b_1", 2)
		r := newShardedRig(t, srv, 2)
		cancel := r.runSharded(t)
		defer cancel()
		require.Equal(t, "a_1", srv.holder("shard-0"))

		mine, theirs := objectOf("obj", 0, 2), objectOf("obj", 1, 2)
		r.change(mine, theirs)
		synctest.Wait()
		require.Len(t, r.handler.of(mine), 1)
		require.Empty(t, r.handler.of(theirs), "shard 1 is b's")
		r.stopServing(t, cancel)
	})
}

// TestShardedLostShardCancelsItsReconciles: a shard's Lease taken away
// cancels the reconciles of its objects, and Serve fails with
// ErrLostLeadership.
func TestShardedLostShardCancelsItsReconciles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLeaseServer(nil)
		r := newShardedRig(t, srv, 2)
		defer r.runSharded(t)()
		synctest.Wait()
		held := objectOf("hold", 1, 2)
		r.change(held)
		synctest.Wait()

		srv.set("shard-1", "z_9", 2)
		synctest.Wait()
		err := <-r.served
		require.ErrorIs(t, err, controller.ErrLostLeadership)
		require.EqualError(t, err, "controller memcached-controller: shard 1 of 2: "+controller.ErrLostLeadership.Error())
		causes := r.handler.heldCauses()
		require.Len(t, causes, 1)
		require.ErrorIs(t, causes[0], controller.ErrLostLeadership)
		require.Contains(t, r.j.all(), "shard 1 lost")
	})
}

// TestShardedRefusesAnotherCount: a running replica with 8 shards beside
// one with 2 makes Serve fail before it takes any shard; a Lease of
// another count seen once and never renewed is waited out instead.
func TestShardedRefusesAnotherCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLeaseServer(nil)
		srv.set("member-x", "x_1", 8)
		r := newShardedRig(t, srv, 2)
		defer r.runSharded(t)()
		err := <-r.served
		require.ErrorIs(t, err, controller.ErrShardCount)
		require.EqualError(t, err, "controller memcached-controller: "+controller.ErrShardCount.Error()+
			": Lease member-x is held by x_1, which runs with 8 shards, and this replica runs with 2: stop every replica before changing the number")
		require.Empty(t, srv.holder("shard-0"))
		require.Empty(t, srv.holder("shard-1"))
	})
}

// TestShardedSharedIdentity: another process holding the replica's
// membership Lease keeps it from announcing itself; it is not ready, and
// after twice LeaseDuration and a RetryPeriod Serve fails with
// ErrSharedIdentity.
func TestShardedSharedIdentity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newLeaseServer(nil)
		srv.set("member-a", "a_0", 2)
		r := newShardedRig(t, srv, 2)
		r.watching()
		start := time.Now()
		r.serve(t.Context())
		close(r.synced)
		err := <-r.served
		require.ErrorIs(t, err, controller.ErrSharedIdentity)
		require.Equal(t, 2*fenced.LeaseDuration+fenced.RetryPeriod, time.Since(start))
		require.NotContains(t, r.j.all(), "healthy", "a replica that hasn't announced itself isn't ready")
		require.Empty(t, srv.holder("shard-0"))
	})
}
