package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The status faults answer a request as the API server would, with
// nothing sent: client-go's own handling runs. client-go tries a request
// again after a 429 or a 5xx that carries a Retry-After, up to 10 times
// (rest.Request's default), and each try is an evaluation of its own, so
// a rule's Count counts tries and its Percent draws for each.

// clientGoTries is how many times client-go sends a request that keeps
// being answered with a Retry-After: once and 10 retries.
const clientGoTries = 11

// experimentApp starts the Memcached controller of r's objects in ns
// under failure injection as fs says, its Decoder scenarioCodec's when fs
// has none, its Reconciler's reconciles in log, with the backoff of its
// failed reconciles from base and parts besides its own, and returns the
// App.
func experimentApp(t *testing.T, conn kube.Connection, r kube.Resource[memcachedSpec, memcachedStatus], ns string, log *reconcileLog, base time.Duration, fs fault.Settings, parts ...kube.Part) *apptest.App {
	t.Helper()
	if fs.Decoder == nil {
		fs.Decoder = scenarioCodec(t)
	}
	return startExperimentWith(t, conn, fs, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		settings := experimentSettings("memcached-controller", ns)
		settings.RetryBaseDelay = base
		settings.RetryMaxDelay = max(base, settings.RetryMaxDelay)
		kc, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		ctrl, err := kube.NewController(s, client, settings, r, experimentReconciler{log: log, kube: kc},
			append([]kube.Part{kube.Owns(deploymentsGVR), kube.TrustScenario(scenarioAnnotation, inNamespace(ns))}, parts...)...)
		return []app.Service{ctrl}, err
	})
}

// statusesAt counts the evaluations at point, on the App's spans, that
// met status, one per try of the request; a status of 0 counts those that
// met none.
func statusesAt(a *apptest.App, point string, status int) int {
	return evaluationsAt(a, point, func(attrs attribute.Set) bool {
		got, _ := attrs.Value(fault.StatusKey)
		return got.AsInt64() == int64(status)
	})
}

// TestFaults_a_429_with_Retry_After_and_a_Count_of_2_is_retried_by_client_go_and_the_reconcile_succeeds:
// the Deployment's apply is answered 429 with a Retry-After of 1s twice;
// client-go waits and tries again, so the very first reconcile succeeds,
// having sent the apply once, after its two Retry-After waits.
func TestFaults_a_429_with_Retry_After_and_a_Count_of_2_is_retried_by_client_go_and_the_reconcile_succeeds(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	log := &reconcileLog{}
	w, conn := recordedWire(t, c)
	a := experimentApp(t, conn, r, ns, log, time.Hour, fault.Settings{})

	const point = "kube:deployments.apps:patch"
	value := annotationValue(t, scenarioCodec(t), fit.Rule{Point: point, Fault: fit.Fault{Status: 429, RetryAfter: time.Second}, Count: 2})
	created := time.Now()
	createWith(t, memcacheds, r, ns, "cache", nil, map[string]string{scenarioAnnotation: value})

	wait.For(t, time.Minute, func() bool { return log.count("cache") > 0 }, "never reconciled", wait.App(a))
	tries := log.of("cache")
	require.NoError(t, tries[0].err, "client-go retried the 429s, and the first reconcile succeeded")
	_, ok := getDeployment(t, admin.kube, ns, "cache")
	require.True(t, ok)
	require.GreaterOrEqual(t, time.Since(created), 2*time.Second, "client-go waited the Retry-After of each 429")
	require.Equal(t, 0, a.Stop())
	require.Equal(t, 2, statusesAt(a, point, 429), "each try is an evaluation, and the Count spent itself on two")
	// The Deployment's creation reconciles the Memcached again, which
	// applies it again: every try that met no status reached the API
	// server, and no other.
	require.Len(t, w.patchesOf("/deployments/cache"), statusesAt(a, point, 0), "the two answered tries sent nothing; every other reached the API server")
}

// TestFaults_an_always_on_429_ends_in_the_error_client_go_gives_after_its_retries:
// every try of the Deployment's apply is answered 429 with a Retry-After
// of 1s: client-go sends it 11 times, then returns the 429, which
// apierrors.IsTooManyRequests reads as the API server's own, and which
// the reconcile reports, experiment and all.
func TestFaults_an_always_on_429_ends_in_the_error_client_go_gives_after_its_retries(t *testing.T) {
	// Serial: its Lease lapsed under parallel load during the 11s reconcile, when it was 2s long.
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	log := &reconcileLog{}
	w, conn := recordedWire(t, c)
	// The failed reconcile's status write asks for no reconcile, and its
	// retry waits an hour: one reconcile, of every try client-go makes.
	a := experimentApp(t, conn, r, ns, log, time.Hour, fault.Settings{}, kube.FilterUpdates(kube.SkipStatusOnly()))

	const point = "kube:deployments.apps:patch"
	ctx, err := fit.ContextWithScenario(context.Background(), scenarioCodec(t), fit.Scenario{
		ID:    "throttled",
		Rules: []fit.Rule{{Point: point, Fault: fit.Fault{Status: 429, RetryAfter: time.Second}}},
	})
	require.NoError(t, err)
	createWith(t, memcacheds, r, ns, "cache", nil, map[string]string{scenarioAnnotation: baggage.FromContext(ctx).String()})

	wait.For(t, time.Minute, func() bool { return log.count("cache") > 0 }, "never reconciled", wait.App(a))
	err = log.of("cache")[0].err
	require.True(t, apierrors.IsTooManyRequests(err), "client-go's error is the 429's: %v", err)
	require.ErrorContains(t, err, `Too many requests, please try again later. (fault injected at point "kube:deployments.apps:patch", experiment "throttled")`)
	wait.For(t, time.Minute, func() bool {
		cond := availableOf(t, admin.dynamic, r, ns, "cache")
		return cond != nil && cond.Reason == "ApplyFailed"
	}, "no ApplyFailed condition", wait.App(a))
	require.Empty(t, w.patchesOf("/deployments/cache"), "no try reached the API server")
	require.Equal(t, 0, a.Stop())
	require.Equal(t, 1, log.count("cache"), "one reconcile: its status write asked for none, and its retry is an hour away")
	require.Equal(t, clientGoTries, statusesAt(a, point, 429), "client-go's 10 retries, each an evaluation")
}

// TestFaults_a_409_on_the_status_apply_fails_the_reconcile_and_the_retry_lands_the_status:
// the status apply, which forces and so never meets a real conflict, is
// answered 409 once: the reconcile fails with the conflict, its Event
// says so, and the object is retried with backoff, as the docs promise
// of any failed status apply, and its status lands.
func TestFaults_a_409_on_the_status_apply_fails_the_reconcile_and_the_retry_lands_the_status(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	log := &reconcileLog{}
	a := experimentApp(t, throughWire(t, c), r, ns, log, 5*time.Millisecond, fault.Settings{})

	point := "kube:memcacheds." + r.GVR().Group + "/status:patch"
	value := annotationValue(t, scenarioCodec(t), fit.Rule{Point: point, Fault: fit.Fault{Status: 409}, Count: 1})
	createWith(t, memcacheds, r, ns, "cache", nil, map[string]string{scenarioAnnotation: value})

	wait.For(t, time.Minute, func() bool { return availableOf(t, admin.dynamic, r, ns, "cache") != nil }, "the status never lands", wait.App(a))
	require.GreaterOrEqual(t, log.count("cache"), 2, "the reconcile whose status apply met the 409 was retried")
	obj, err := memcacheds.Get(t.Context(), "cache", metav1.GetOptions{})
	require.NoError(t, err)
	want := `Operation cannot be fulfilled on memcacheds.` + r.GVR().Group + ` "cache": the object has been modified; please apply your changes to the latest version and try again (fault injected at point "` + point + `")`
	// An Event is written after the reconcile that recorded it returns, by
	// the recorder's own goroutine, so the status may land first.
	var events []eventsv1.Event
	wait.For(t, time.Minute, func() bool {
		events = eventsOn(t, admin.kube, ns, obj.GetUID())
		return slices.ContainsFunc(events, func(e eventsv1.Event) bool { return strings.Contains(e.Note, want) })
	}, "no Event of the failed reconcile names the conflict", wait.App(a))
	require.Equal(t, 0, a.Stop())
	require.Equal(t, 1, statusesAt(a, point, 409))
}
