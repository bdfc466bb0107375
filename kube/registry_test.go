package kube

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/loam-dev/loam/adapters/apply"
	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/adapters/lease"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/ports"
)

var secretsKind = Kind[corev1.Secret]{GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret", Scope: Namespaced}

// watchesOf counts the watches of resource among actions.
func watchesOf(actions []k8stesting.Action, resource string) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == "watch" && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func TestControllers_of_one_Client_open_one_watch_per_owned_resource_and_Cache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: apptest.NewTelemetry().Telemetry}
		secret := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"namespace": "ns", "name": "a", "resourceVersion": "1"},
		}}
		secrets := secretsKind.GVR
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{memcacheds: "MemcachedList", secrets: "SecretList"}, memcached("a", 1), secret)
		scheme := metadatafake.NewTestScheme()
		require.NoError(t, metav1.AddMetaToScheme(scheme))
		scheme.AddKnownTypeWithName(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, &metav1.PartialObjectMetadata{})
		meta := metadatafake.NewSimpleMetadataClient(scheme, deploymentOf("a"))
		registry := informer.NewRegistry(logr.Discard())

		// Three Controllers of one Client, as an operator of three
		// resources would run: each owns Deployments, and two read a
		// Cache of Secrets.
		calls := &reconciles{}
		var ctrls []*Controller
		for _, name := range []string{"one", "two", "three"} {
			parts := []Part{Owns(deployments)}
			var cache *Cache[corev1.Secret]
			if name != "three" {
				cache = NewCache(secretsKind, CacheOptions[corev1.Secret]{})
				parts = append(parts, Watches(cache, MapFunc(func(metav1.Object) []Key { return nil })))
			}
			p, err := partsOf[cacheObject](parts)
			require.NoError(t, err)
			settings := settingsForTest()
			settings.Name = name
			tel, err := telemetryOf(s, name, caches.Kind, 1)
			require.NoError(t, err)
			elector := newElector()
			close(elector.grant)
			cl := clients{
				dynamic: dyn, metadata: meta, informers: registry,
				elector: func(lease.Config) (ports.Elector, error) { return elector, nil },
				writer:  func(apply.Config) (ports.Writer, error) { return &trackerWriter{tracker: dyn.Tracker()}, nil },
			}
			reconcile := func(_ context.Context, m cacheObject) (ports.Result, error) {
				defer calls.start(name + "/" + m.Name)()
				if cache != nil {
					if _, found, err := cache.Get("ns", "a"); err != nil || !found {
						calls.start(name + "/unread")
					}
				}
				return ports.Result{}, nil
			}
			ctrl, err := build(s, settings, target{gvr: memcacheds, kind: caches.Kind, scope: caches.Scope},
				handler[cacheObject]{reconcile: reconcile}, p.commonParts, cl, tel)
			require.NoError(t, err)
			ctrls = append(ctrls, ctrl)
		}
		ctx, stop := context.WithCancel(t.Context())
		served := make(chan error, len(ctrls))
		for _, c := range ctrls {
			go func() { served <- c.Serve(ctx) }()
		}
		synctest.Wait()
		before := map[string]int{}
		for _, name := range []string{"one", "two", "three"} {
			// a itself, and its Deployment's initial add, which the queue
			// may fold into a's.
			before[name] = calls.of(name + "/a")
			require.NotZero(t, before[name], "Controller %s reconciled a", name)
			require.Zero(t, calls.of(name+"/unread"), "Controller %s read the Secret from its Cache", name)
		}
		require.Equal(t, 1, watchesOf(meta.Actions(), "deployments"), "one watch of deployments for three Owns")
		require.Equal(t, 1, watchesOf(dyn.Actions(), "secrets"), "one watch of secrets for two Caches")

		require.NoError(t, meta.Tracker().Update(deployments, deploymentOf("a"), "ns"))
		synctest.Wait()
		for _, name := range []string{"one", "two", "three"} {
			require.Equal(t, before[name]+1, calls.of(name+"/a"), "Controller %s reconciled a again on its Deployment's change", name)
		}
		stop()
		for range ctrls {
			require.NoError(t, <-served)
		}
	})
}
