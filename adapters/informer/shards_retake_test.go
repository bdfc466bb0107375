package informer_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/ports"
)

// TestWatch_a_shard_held_again_before_its_release_stays_watched: a Hold
// of a shard that runs before the Release of its previous holding (a
// shard taken back while it still drains) keeps the shard held and
// watched until the last Release, on a server that serves sharded
// watches and on one that doesn't alike (issue 42, finding 2).
func TestWatch_a_shard_held_again_before_its_release_stays_watched(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(dynamic.Interface) dynamic.Interface
	}{
		{"sharded by the server", func(d dynamic.Interface) dynamic.Interface { return &shardingClient{Interface: d} }},
		{"whole", func(d dynamic.Interface) dynamic.Interface { return d }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				one := nameIn("m", 1, 2)
				fake := memcachedClient(versioned(object("ns", one, nil)))
				var queued keys
				w, _ := shardedWatch(t, tc.client(fake), &queued)

				w.Hold(1)
				synctest.Wait()
				require.Equal(t, []ports.Key{{Namespace: "ns", Name: one}}, queued.take(t))
				w.Hold(1)
				w.Release(1)
				synctest.Wait()
				queued.take(t)

				require.NoError(t, fake.Tracker().Update(memcacheds, changed(object("ns", one, map[string]any{"spec": "x"}), "2"), "ns"))
				synctest.Wait()
				require.Equal(t, []ports.Key{{Namespace: "ns", Name: one}}, queued.take(t), "the shard is held, and must be watched")
				_, found, err := w.Get(ports.Key{Namespace: "ns", Name: one})
				require.NoError(t, err)
				require.True(t, found)

				w.Release(1)
				require.NoError(t, fake.Tracker().Update(memcacheds, changed(object("ns", one, map[string]any{"spec": "y"}), "3"), "ns"))
				synctest.Wait()
				require.Empty(t, queued.take(t), "released as often as held")
			})
		})
	}
}

// TestWatch_sharded_by_the_server_is_unsynced_while_a_held_shard_lists:
// the primary cache, which a sharded replica's readiness reads, is synced
// only once every held shard's informer has listed; holding none, it is.
func TestWatch_sharded_by_the_server_is_unsynced_while_a_held_shard_lists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		one := nameIn("m", 1, 2)
		fake := memcachedClient(versioned(object("ns", one, nil)))
		client := &shardingClient{Interface: fake, hold: make(chan struct{})}
		var queued keys
		w, _ := shardedWatch(t, client, &queued)
		require.True(t, w.Primary().Synced(), "no shard held")

		w.Hold(1)
		synctest.Wait()
		require.False(t, w.Primary().Synced(), "shard 1 still lists")
		close(client.hold)
		synctest.Wait()
		require.True(t, w.Primary().Synced())
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: one}}, queued.take(t))
	})
}
