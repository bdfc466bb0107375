package kube

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestServe_reconciles_the_objects_of_each_namespace_of_Settings_Namespaces_and_of_no_other(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := &reconciles{}
		settings := settingsForTest()
		settings.Namespaces = []string{"a", "b"}
		in := func(ns, name string) *unstructured.Unstructured {
			m := memcached(name, 1)
			m.SetNamespace(ns)
			return m
		}
		h := newHarness(t, settings, ReconcilerFunc[cacheSpec, cacheStatus](func(_ context.Context, m cacheObject) (Result[cacheStatus], error) {
			defer calls.start(m.Namespace + "/" + m.Name)()
			return Result[cacheStatus]{}, nil
		}), nil, in("a", "x"), in("b", "y"), in("c", "z"))
		ctx, stop := context.WithCancel(t.Context())
		close(h.elector.grant)
		h.serve(ctx)
		synctest.Wait()
		require.True(t, h.synced(t))
		require.Equal(t, 1, calls.of("a/x"))
		require.Equal(t, 1, calls.of("b/y"))
		require.Zero(t, calls.of("c/z"), "c is outside the set")

		// An owned object's change reconciles its owner in b, and none in
		// c, whose owned objects aren't watched either.
		for _, ns := range []string{"c", "b"} {
			d := deploymentOf(map[string]string{"b": "y", "c": "z"}[ns])
			d.Namespace = ns
			require.NoError(t, h.meta.Tracker().Create(deployments, d, ns))
		}
		synctest.Wait()
		require.Equal(t, 2, calls.of("b/y"), "its Deployment was added")
		require.Zero(t, calls.of("c/z"))
		stop()
		require.NoError(t, <-h.served)
	})
}
