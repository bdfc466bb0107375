package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// openWatchesOf returns the watches of resource that passed through w and
// are open: one informer holds one open at a time, and a watch the API
// server ended (a hiccup of etcd under load, once in CI) and the informer
// opened again is not a second informer's.
func openWatchesOf(w *wire, resource string) []wireRequest {
	var out []wireRequest
	for _, req := range w.all() {
		if req.method == http.MethodGet && req.isWatch() && !req.finished && strings.HasSuffix(req.path, "/"+resource) {
			out = append(out, req)
		}
	}
	return out
}

// startControllers starts an App of n Controllers of r, named memcached-0
// and on, on one Client of conn, whose Reconcilers do nothing; Controller
// i is built with parts(i). It returns the App once every Controller has
// synced, failing the test if one fails to build or never syncs.
func startControllers(t *testing.T, conn kube.Connection, ns string, r kube.Resource[memcachedSpec, memcachedStatus], n int, parts func(i int) []kube.Part) *apptest.App {
	t.Helper()
	noop := kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(context.Context, memcachedObject) (kube.Result[memcachedStatus], error) {
		return kube.Result[memcachedStatus]{}, nil
	})
	var ctrls []*kube.Controller
	a := apptest.Start(t, func(_ context.Context, s *app.Setup) ([]app.Service, error) {
		client, err := kube.NewClient(s, conn)
		if err != nil {
			return nil, err
		}
		var services []app.Service
		for i := range n {
			settings := settingsFor(fmt.Sprintf("memcached-%d", i), ns, "pod-0")
			settings.Namespace = ns
			ctrl, err := kube.NewController(s, client, settings, r, noop, parts(i)...)
			if err != nil {
				return nil, err
			}
			ctrls = append(ctrls, ctrl)
			services = append(services, ctrl)
		}
		return services, nil
	}, apptest.WithAppOptions(app.WithHost(app.Host{Network: &network{}})))
	a.Setup()
	require.Len(t, ctrls, n, "Init failed; stderr: %s", a.Stderr())
	wait.For(t, time.Minute, func() bool {
		for _, ctrl := range ctrls {
			if ok, _ := ctrl.Synced().Healthy(t.Context()); !ok {
				return false
			}
		}
		return true
	}, "the Controllers never synced", &controllerApp{App: a})
	return a
}

// An operator of three Controllers on one Client, each of which owns
// Deployments, two of which read a Cache of Secrets, opens one watch of
// each: the Client's registry gives every Owns, and every Cache without a
// Transform, the one informer of their resource, view and selectors.
func TestRegistry_three_Owns_and_two_Caches_on_one_Client_open_one_watch_of_each(t *testing.T) {
	// Serial: counts watches, which other tests' watches would add to.
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	w, conn := startWire(t, c)
	secrets := kube.Kind[corev1.Secret]{GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret", Scope: kube.Namespaced}
	a := startControllers(t, conn, ns, r, 3, func(i int) []kube.Part {
		parts := []kube.Part{kube.Owns(deploymentsGVR)}
		if i < 2 {
			cache := kube.NewCache(secrets, kube.CacheOptions[corev1.Secret]{})
			parts = append(parts, kube.Watches(cache, kube.MapFunc(func(metav1.Object) []kube.Key { return nil })))
		}
		return parts
	})

	require.Len(t, openWatchesOf(w, "deployments"), 1, "one watch of Deployments for three Owns: %v", openWatchesOf(w, "deployments"))
	require.Len(t, openWatchesOf(w, "secrets"), 1, "one watch of Secrets for two Caches: %v", openWatchesOf(w, "secrets"))
	require.Equal(t, 0, a.Stop())
}

// Two Controllers of one resource on one Client, one of which owns
// Deployments with an update filter and the other without, open one watch
// of the resource and one of Deployments: the primaries share a store,
// each with its own handler, and the Owns share one metadata store, each
// with its own filters.
func TestRegistry_two_Controllers_of_one_resource_open_one_watch_of_it_and_of_what_they_own(t *testing.T) {
	// Serial: counts watches, which other tests' watches would add to.
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	w, conn := startWire(t, c)
	a := startControllers(t, conn, ns, r, 2, func(i int) []kube.Part {
		if i == 1 {
			return []kube.Part{kube.Owns(deploymentsGVR, kube.SkipStatusOnly())}
		}
		return []kube.Part{kube.Owns(deploymentsGVR)}
	})

	resource := r.GVR().Resource
	require.Len(t, openWatchesOf(w, resource), 1, "one watch of %s for two Controllers: %v", resource, openWatchesOf(w, resource))
	require.Len(t, openWatchesOf(w, "deployments"), 1, "one watch of Deployments for an Owns with a filter and one without: %v", openWatchesOf(w, "deployments"))
	require.Equal(t, 0, a.Stop())
}
