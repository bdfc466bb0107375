package informer

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// TestShardWatch_passes_its_shard_and_stops_with_an_event_unread: the
// events of other shards' objects are dropped, bookmarks pass, and Stop
// ends the goroutine even while it holds an event nobody reads (the
// package's goleak check fails otherwise).
func TestShardWatch_passes_its_shard_and_stops_with_an_event_unread(t *testing.T) {
	obj := func(uid string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetUID(types.UID(uid))
		return u
	}
	in := watch.NewFakeWithChanSize(4, false)
	w := newShardWatch(in, shardFilter{keep: func(uid types.UID) bool { return uid == "mine" }})
	in.Add(obj("theirs"))
	in.Add(obj("mine"))
	in.Action(watch.Bookmark, obj("theirs"))
	in.Add(obj("mine"))
	ev := <-w.ResultChan()
	require.Equal(t, watch.Added, ev.Type)
	require.Equal(t, types.UID("mine"), ev.Object.(*unstructured.Unstructured).GetUID())
	ev = <-w.ResultChan()
	require.Equal(t, watch.Bookmark, ev.Type)
	// The last event is left unread.
	w.Stop()
	w.Stop()
	for range w.ResultChan() {
	}
	require.True(t, in.IsStopped())
}
