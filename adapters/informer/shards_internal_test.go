package informer

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
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

// TestShardFilter_narrows_a_list_of_either_form: a list the wire decoder
// made compact, as the primary informer's client returns, and one the
// dynamic client decoded, as any other client's, keep only the shard's
// objects, and the list's selector carries the shard's.
func TestShardFilter_narrows_a_list_of_either_form(t *testing.T) {
	f := shardFilter{selector: "shard", keep: func(uid types.UID) bool { return uid == "mine" }}
	for _, tc := range []struct {
		name string
		list func() runtime.Object
		uids func(runtime.Object) []types.UID
	}{
		{"compact", func() runtime.Object {
			return &compactList{Items: []*cached{{uid: "theirs"}, {uid: "mine"}, {uid: "theirs"}}}
		}, func(obj runtime.Object) []types.UID {
			var out []types.UID
			for _, c := range obj.(*compactList).Items {
				out = append(out, c.uid)
			}
			return out
		}},
		{"decoded", func() runtime.Object {
			l := &unstructured.UnstructuredList{}
			for _, uid := range []string{"theirs", "mine", "theirs"} {
				u := unstructured.Unstructured{Object: map[string]any{}}
				u.SetUID(types.UID(uid))
				l.Items = append(l.Items, u)
			}
			return l
		}, func(obj runtime.Object) []types.UID {
			var out []types.UID
			for _, u := range obj.(*unstructured.UnstructuredList).Items {
				out = append(out, u.GetUID())
			}
			return out
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var selector string
			lw := f.narrow(&cache.ListWatch{ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				selector = opts.ShardSelector
				return tc.list(), nil
			}})
			obj, err := lw.ListWithContext(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			require.Equal(t, "shard", selector)
			require.Equal(t, []types.UID{"mine"}, tc.uids(obj))
		})
	}
}
