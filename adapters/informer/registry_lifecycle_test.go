package informer_test

// A Watch's life on a Client's shared stores: Start and Stop in any order
// and from any goroutine leave no informer running and no claim standing,
// and a stopped Watch neither waits nor reads as if it still ran.

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/ports"
)

// A Watch started with a context that has already ended stops itself at
// once, from the context's AfterFunc on a goroutine of its own, while
// Start may still be running: Start and Stop are serialized, so that Stop
// undoes all Start did and the race detector finds nothing, and the
// Registry runs no informer for it.
func TestWatch_started_with_an_ended_context_stops_itself_and_runs_nothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, meta := edgeClients()
		registry := informer.NewRegistry(logr.Discard())
		w, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached,
			Owns: []informer.OwnedConfig{{Resource: deployments}}, Logger: logr.Discard(), Registry: registry,
		})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		var q keys
		w.Start(ctx, q.add)
		synctest.Wait()
		require.Zero(t, registry.Running())
	})
}

// A Stop that runs while Start runs on another goroutine (the AfterFunc
// of Start's context ending, or a Controller's Stop on shutdown) undoes
// all of it, whichever takes the Watch first: otherwise a Start that went
// on after Stop withdrew the claims would count itself a user of the
// shared stores that nothing releases, and their informers would run for
// the Client's life. 2,000 rounds, since the order is the scheduler's:
// before Start and Stop were serialized, the race detector failed every
// run, and without it about 1 round in 6,000 leaked.
func TestWatch_a_Stop_during_Start_undoes_it_all(t *testing.T) {
	dyn, meta := edgeClients()
	leaked := 0
	for range 2000 {
		registry := informer.NewRegistry(logr.Discard())
		w, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached,
			Owns: []informer.OwnedConfig{{Resource: deployments}}, Logger: logr.Discard(), Registry: registry,
		})
		require.NoError(t, err)
		var q keys
		var wg sync.WaitGroup
		wg.Go(func() { w.Start(t.Context(), q.add) })
		wg.Go(w.Stop)
		wg.Wait()
		if registry.Running() != 0 {
			leaked++
		}
	}
	require.Zero(t, leaked, "rounds of 2,000 where Start and Stop both returned and the informers still run")
}

// The Start context ending during the initial sync (here a list the API
// server is slow to answer) stops the Watch, and its WaitForSync returns
// false at once rather than wait, until its own context ends, on handlers
// the Stop removed: a Controller waiting for its caches learns at once
// that they never will be.
func TestWatch_WaitForSync_of_a_Watch_stopped_during_its_initial_sync_returns_false_at_once(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, meta := edgeClients()
		// The initial list doesn't answer until the test ends.
		release := make(chan struct{})
		defer close(release)
		dyn.PrependReactor("list", "memcacheds", func(k8stesting.Action) (bool, runtime.Object, error) {
			<-release
			return true, nil, apierrors.NewServiceUnavailable("the test ended")
		})
		registry := informer.NewRegistry(logr.Discard())
		w, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached,
			Logger: logr.Discard(), Registry: registry,
		})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		var q keys
		w.Start(ctx, q.add)
		synctest.Wait()
		cancel()
		synctest.Wait()
		require.Zero(t, registry.Running(), "the Watch stopped with its context")

		wait, stop := context.WithTimeout(t.Context(), time.Hour)
		defer stop()
		began := time.Now()
		synced := w.WaitForSync(wait)
		require.False(t, synced)
		require.Less(t, time.Since(began), time.Second, "a stopped Watch's WaitForSync waits for its context")
	})
}

// A stopped Watch's cache reads as empty, even when another Watch keeps
// the store it read running: otherwise its Get would see objects added
// after its Stop while its index, which files nothing once stopped,
// wouldn't, and its two answers would disagree.
func TestWatch_stopped_reads_nothing_from_a_store_another_Watch_runs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, meta := edgeClients()
		registry := informer.NewRegistry(logr.Discard())
		a := ports.Key{Namespace: "ns", Name: "a"}
		var ws [2]*informer.Watch
		for i := range ws {
			ws[i] = startedWatch(t, informer.WatchConfig{
				Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached,
				Indexes: byRef(a), Logger: logr.Discard(), Registry: registry,
			}, &keys{})
		}
		ws[0].Stop()
		_, err := dyn.Resource(memcacheds).Namespace("ns").Create(t.Context(), versioned(object("ns", "m2", nil)), metav1.CreateOptions{})
		require.NoError(t, err)
		synctest.Wait()

		_, found, err := ws[0].Get(ports.Key{Namespace: "ns", Name: "m2"})
		require.NoError(t, err)
		docs, err := ws[0].Primary().ByIndex("ref", a)
		require.NoError(t, err)
		if found {
			require.Len(t, docs, 2, "the stopped Watch's Get finds m2, so its index should file it too")
		}
		require.False(t, found, "a stopped Watch reads a store that keeps changing")
	})
}

// A Watch stopped before it started withdraws its claim on the stores it
// would have read, so an Owns of its resource reads metadata alone rather
// than list and cache whole objects for a primary that never runs, as
// when a Controller's Check fails (domain/controller's Serve stops its
// Watch on every return; TestServe_fails_with_the_Watch_s_check_and_starts_nothing
// holds it to that). The adapter can't tell, when an Owns starts, a Watch
// that will start from one that never will
// (TestWatch_Owns_reads_the_primary_informer_of_another_Watch_with_the_same_selectors
// wants an Owns started first to read the primary's store), so the Stop
// is what withdraws the claim.
func TestWatch_stopped_before_it_started_leaves_an_Owns_of_its_resource_to_read_metadata(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, meta := edgeClients()
		registry := informer.NewRegistry(logr.Discard())
		// Built, never started: its Serve failed Check, and stopped it.
		never, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: dyn, Metadata: meta, Resource: deployments, Owner: deploymentKind,
			Logger: logr.Discard(), Registry: registry,
		})
		require.NoError(t, err)
		never.Stop()
		owner, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached,
			Owns: []informer.OwnedConfig{{Resource: deployments}}, Logger: logr.Discard(), Registry: registry,
		})
		require.NoError(t, err)
		var q keys
		startWatch(t, owner, &q)
		require.Contains(t, q.take(t), ports.Key{Namespace: "ns", Name: "m1"})
		require.Len(t, namespacesOf(dyn.Actions(), "watch", "deployments"), 0,
			"whole Deployments watched and cached for an Owns alone")
		require.Len(t, namespacesOf(meta.Actions(), "watch", "deployments"), 1)
	})
}
