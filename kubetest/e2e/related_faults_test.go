package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// Failure injection meets related objects: a scenario's points are the
// Client's requests, and a read from a Cache is none, so a scenario that
// fails every request of a resource leaves the Cache of that resource
// answering. These tests prove it against the request a Reconciler could
// have made in the Cache's place, a live GET of the same object.

// liveReader reconciles a Reader as readerReconciler does, reading its
// ConfigMap from the Cache, but first GETs the same ConfigMap from the
// API server, with the reconcile's context, through a clientset on the
// Client's Config: the request a scenario on the Reader does reach. It
// records what each GET returned in gets, and leaves it out of the
// status, which stays what the Cache answered; like readerReconciler's,
// it returns no error, so a failed GET queues no retry.
type liveReader struct {
	readerReconciler
	kube kubernetes.Interface
	gets *records[error]
}

func (r liveReader) Reconcile(ctx context.Context, m readerObject) (kube.Result[readerStatus], error) {
	key := readerKeys(m)[0]
	_, err := r.kube.CoreV1().ConfigMaps(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	r.gets.add(err)
	return r.readerReconciler.Reconcile(ctx, m)
}

// TestRelated_a_scenario_that_aborts_every_ConfigMaps_request_fails_the_live_GET_but_not_the_Cache_read
// runs a Reader under a scenario of kube:configmaps:*, through a
// recording proxy. Each reconcile makes both reads of the same ConfigMap
// within the scenario: the live GET meets the abort, and the Cache, which
// the informer filled outside any reconcile, still answers — also with a
// change made during the experiment, which the related watch, no more
// aborted than the list, brought in.
func TestRelated_a_scenario_that_aborts_every_ConfigMaps_request_fails_the_live_GET_but_not_the_Cache_read(t *testing.T) {
	t.Parallel()
	c, ns, r, rs, cms := readerTest(t)
	cms.put(t, ns, "flags", "f1", nil)
	codec := scenarioCodec(t)
	rs.create(t, "reader", readerSpec{ConfigMap: "flags"})
	// Set before the App starts, so every reconcile carries it.
	setScenario(t, rs.objects, "reader",
		annotationValue(t, codec, fit.Rule{Point: "kube:configmaps:*", Fault: fit.Fault{Abort: true}}))

	w, conn := startWire(t, c)
	var log readerLog
	var gets records[error]
	var ctrl *kube.Controller
	a := startExperiment(t, conn, codec, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		kc, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		cache := kube.NewCache(configMaps, kube.CacheOptions[corev1.ConfigMap]{})
		index := kube.NewIndex("configMap", readerKeys)
		rec := liveReader{readerReconciler: readerReconciler{cms: cache, index: index, log: &log}, kube: kc, gets: &gets}
		ctrl, err = kube.NewController(s, client, experimentSettings("reader-controller", ns), r, rec,
			kube.Watches(cache, kube.ByIndex(index)), kube.Indexes(index),
			kube.TrustScenario(scenarioAnnotation, inNamespace(ns)))
		return []app.Service{ctrl}, err
	})

	// The Controller synced, related Cache and all, and reconciled: the
	// status holds the value read from the Cache, with no error.
	rs.settle(t, &log, wait.App(a), map[string]func(readerStatus) bool{"reader": reads("f1", "reader")})
	synced, err := ctrl.Synced().Healthy(t.Context())
	require.NoError(t, err)
	require.True(t, synced, "reconciled, so every cache synced")

	// A change during the experiment reaches the Cache through the
	// related watch, and the Reader reads it.
	cms.put(t, ns, "flags", "f2", nil)
	rs.settle(t, &log, wait.App(a), map[string]func(readerStatus) bool{"reader": reads("f2", "reader")})
	require.Equal(t, 0, a.Stop())

	// Every reconcile made both reads: its live GET met the abort, as an
	// *fault.InjectedError wrapped by client-go, and its Cache read found
	// the ConfigMap.
	reconciles, failed := log.since(0, "reader"), gets.from(0)
	require.NotEmpty(t, reconciles)
	require.Len(t, failed, len(reconciles), "one live GET a reconcile")
	for i, e := range reconciles {
		require.True(t, e.status.Found, "reconcile %d: %+v", i, e)
		require.Contains(t, []string{"f1", "f2"}, e.status.Value, "reconcile %d: %+v", i, e)
		require.Empty(t, e.status.Error, "reconcile %d: %+v", i, e)
	}
	for i, err := range failed {
		var injected *fault.InjectedError
		require.ErrorAs(t, err, &injected, "live GET %d", i)
		require.Equal(t, "kube:configmaps:get", injected.Point, "live GET %d", i)
		require.True(t, injected.Fault.Abort, "live GET %d", i)
	}
	// Each abort is an evaluation on the GET's span, and nothing of the
	// informers' was aborted: their list and watch run outside any
	// reconcile, with no scenario.
	require.Equal(t, len(failed), abortsAt(a, "kube:configmaps:get"))
	require.Zero(t, abortsAt(a, "kube:configmaps:list"))
	require.Zero(t, abortsAt(a, "kube:configmaps:watch"))

	// On the wire: an aborted GET sends nothing, so the only requests of
	// ConfigMaps are the served check, the informer's list and its watch;
	// and none of the App's requests carried the scenario.
	requireOnlyInformerRequests(t, w, ns)
	require.Empty(t, w.carryingScenario())
}
