package informer

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

func TestNarrowingRestartsWatchesWithTheNewSelector(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "cache.example.com", Version: "v1", Resource: "memcacheds"}
	n := NewNarrowing("first")
	a, b := n.watcher(), n.watcher()
	var sent []string
	var opened []*watch.FakeWatcher
	open := func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		sent = append(sent, opts.ShardSelector)
		w := watch.NewFake()
		opened = append(opened, w)
		return w, nil
	}

	var opts metav1.ListOptions
	a.list(&opts)
	require.Equal(t, "first", opts.ShardSelector)
	_, err := a.watch(t.Context(), gvr, metav1.ListOptions{}, open)
	require.NoError(t, err)
	_, err = b.watch(t.Context(), gvr, metav1.ListOptions{}, open)
	require.NoError(t, err)
	require.Equal(t, []string{"first", "first"}, sent)

	n.Set("first")
	require.False(t, opened[0].IsStopped(), "the same selector restarts nothing")

	n.Set("second")
	require.True(t, opened[0].IsStopped(), "a new selector ends every open watch")
	require.True(t, opened[1].IsStopped())
	// The reflector's next watch fails as expired, so it lists again...
	_, err = a.watch(t.Context(), gvr, metav1.ListOptions{ResourceVersion: "10"}, open)
	require.True(t, apierrors.IsResourceExpired(err), "%v", err)
	require.Len(t, sent, 2, "no request for the expired watch")
	// ...with the new selector, and watches on from there.
	opts = metav1.ListOptions{}
	a.list(&opts)
	require.Equal(t, "second", opts.ShardSelector)
	_, err = a.watch(t.Context(), gvr, metav1.ListOptions{ResourceVersion: "11"}, open)
	require.NoError(t, err)
	// A watch that lists itself (client-go's watch-list) needs no list first.
	_, err = b.watch(t.Context(), gvr, metav1.ListOptions{SendInitialEvents: ptr.To(true)}, open)
	require.NoError(t, err)
	require.Equal(t, []string{"first", "first", "second", "second"}, sent)
	require.Equal(t, "second", n.Selector())
}
