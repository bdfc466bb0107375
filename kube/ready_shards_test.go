package kube

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
)

// splitServer is a dynamic client as an API server that serves sharded
// list and watch: its Leases' lists echo their shard selector, and each
// list of the reconciled resource with a selector waits until hold is
// closed, as a shard's first list of many objects takes a while.
type splitServer struct {
	dynamic.Interface
	leases dynamic.Interface
	hold   chan struct{}
}

func (d splitServer) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	if gvr == probedLeases {
		return echoing{NamespaceableResourceInterface: d.leases.Resource(gvr)}
	}
	return held{NamespaceableResourceInterface: d.Interface.Resource(gvr), hold: d.hold}
}

func (d splitServer) IsWatchListSemanticsUnSupported() bool { return true }

type echoing struct {
	dynamic.NamespaceableResourceInterface
}

func (r echoing) Namespace(ns string) dynamic.ResourceInterface {
	return echoingIn{ResourceInterface: r.NamespaceableResourceInterface.Namespace(ns)}
}

type echoingIn struct{ dynamic.ResourceInterface }

func (r echoingIn) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	l, err := r.ResourceInterface.List(ctx, opts)
	if err != nil || opts.ShardSelector == "" {
		return l, err
	}
	return l, unstructured.SetNestedField(l.Object, opts.ShardSelector, "metadata", "shardInfo", "selector")
}

type held struct {
	dynamic.NamespaceableResourceInterface
	hold chan struct{}
}

func (r held) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	if err := r.wait(ctx, opts); err != nil {
		return nil, err
	}
	return r.NamespaceableResourceInterface.List(ctx, opts)
}

func (r held) Namespace(ns string) dynamic.ResourceInterface {
	return heldIn{ResourceInterface: r.NamespaceableResourceInterface.Namespace(ns), r: r}
}

// wait holds a list of a selector until hold is closed.
func (r held) wait(ctx context.Context, opts metav1.ListOptions) error {
	if opts.ShardSelector == "" {
		return nil
	}
	select {
	case <-r.hold:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type heldIn struct {
	dynamic.ResourceInterface
	r held
}

func (r heldIn) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	if err := r.r.wait(ctx, opts); err != nil {
		return nil, err
	}
	return r.ResourceInterface.List(ctx, opts)
}

// A sharded replica on a server that shards watches is unready while the
// shards it took still list their objects, and ready once they have.
func TestSynced_waits_for_the_held_shards_caches(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		settings := settingsForTest()
		settings.Shards = 2
		hold := make(chan struct{})
		s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: apptest.NewTelemetry().Telemetry}
		h := newHarnessWith(t, s, settings, statusReconciler{&reconciles{}}, nil, harnessOptions{clients: func(cl *clients) {
			shardedOn(kubefake.NewClientset())(cl)
			cl.dynamic = splitServer{Interface: cl.dynamic.(leasesOn).Interface, hold: hold, leases: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(
				runtime.NewScheme(), map[schema.GroupVersionResource]string{probedLeases: "LeaseList"})}
		}}, memcached("a", 1), memcached("b", 1))
		ctx, stop := context.WithCancel(t.Context())
		h.serve(ctx)
		// Past the replica's announcement and its campaigns.
		time.Sleep(3 * settings.LeaderElection.LeaseDuration)
		synctest.Wait()
		ok, err := h.ctrl.Synced().Healthy(t.Context())
		require.NoError(t, err)
		require.False(t, ok, "ready while its shards' caches list")

		close(hold)
		synctest.Wait()
		ok, err = h.ctrl.Synced().Healthy(t.Context())
		require.NoError(t, err)
		require.True(t, ok)
		stop()
		require.NoError(t, <-h.served)
	})
}
