package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/internal/cachecases"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// idle reconciles nothing: the test reads the Controller's Cache itself.
type idle struct{}

func (idle) Reconcile(context.Context, memcachedObject) (kube.Result[memcachedStatus], error) {
	return kube.Result[memcachedStatus]{}, nil
}

// The Cache a Controller fills from the API server answers the table
// kube/cachetest's snapshot answers (kube/cachetest's unit test).
func TestCache_reads_as_cachetest_s_snapshot_does(t *testing.T) {
	c := cluster.Cluster(t)
	ns := [3]string{c.Namespace(t), c.Namespace(t), c.Namespace(t)}
	r := installMemcached(t, c, ns[0])
	kc := adminClients(t, c).kube
	for _, cm := range cachecases.Objects(ns) {
		_, err := kc.CoreV1().ConfigMaps(cm.Namespace).Create(t.Context(), &cm, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for i, cs := range cachecases.Cases(ns) {
		t.Run(cs.Name, func(t *testing.T) {
			cache := kube.NewCache(cachecases.ConfigMaps, cs.Options)
			a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
				// A Lease of its own, in the case's namespace: none waits for the last's.
				settings := settingsFor(cachecases.Controller, ns[i%len(ns)], "pod-0")
				settings.Namespaces = cs.Namespaces
				return kube.NewController(s, client, settings, r, idle{}, kube.Watches(cache, kube.MapFunc(func(metav1.Object) []kube.Key { return nil })))
			})
			wait.For(t, time.Minute, func() bool { return a.synced(t) }, "the Controller's caches synced", a)
			cachecases.Check(t, cache, cs)
			require.Zero(t, a.Stop())
		})
	}
}
