package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// TestFaults_a_scenario_with_an_end_stops_failing_at_its_end_and_the_object_is_reconciled_then:
// a scenario that aborts the Deployment's apply and ends 3s after it is
// set fails the object's reconciles until then; with a backoff of an hour,
// nothing but the end can wake the object, and it is reconciled again at
// its end, with nobody touching the annotation: the Deployment is applied,
// after the end and long before the backoff, and that reconcile's apply
// records a strip event saying the scenario expired. The Deployment
// carries the owner's annotation, and so the same end. The experiment's ID
// is on the record of each abort and on the Events of the failed
// reconciles.
func TestFaults_a_scenario_with_an_end_stops_failing_at_its_end_and_the_object_is_reconciled_then(t *testing.T) {
	// Serial: a reconcile must fail within the scenario's 3s, a margin CPU contention eats.
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	codec := scenarioCodec(t)
	log := &reconcileLog{}
	const backoff = time.Hour
	a := startExperiment(t, throughWire(t, c), codec, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		settings := experimentSettings("memcached-controller", ns)
		settings.RetryBaseDelay, settings.RetryMaxDelay = backoff, backoff
		kc, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		ctrl, err := kube.NewController(s, client, settings, r, experimentReconciler{log: log, kube: kc},
			kube.Owns(deploymentsGVR), kube.TrustScenario(scenarioAnnotation, inNamespace(ns)))
		return []app.Service{ctrl}, err
	})

	ends := time.Now().Add(3 * time.Second)
	ctx, err := fit.ContextWithScenario(context.Background(), codec, fit.Scenario{
		Rules: []fit.Rule{{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}}},
		Ends:  ends,
		ID:    "ends-on-time",
	})
	require.NoError(t, err)
	value := baggage.FromContext(ctx).String()
	createWith(t, memcacheds, r, ns, "cache", nil, map[string]string{scenarioAnnotation: value})

	succeeded := func(e reconcileEntry) bool { return e.err == nil }
	wait.For(t, time.Minute, func() bool { return slices.ContainsFunc(log.of("cache"), succeeded) }, "no reconcile succeeds", wait.App(a))
	tries := log.of("cache")
	first := slices.IndexFunc(tries, succeeded)
	require.Positive(t, first, "no reconcile failed before the end, or none succeeded")
	for _, try := range tries[:first] {
		require.Error(t, try.err)
		require.True(t, try.at.Before(ends), "a failed reconcile at %s, after the end %s", try.at, ends)
	}
	ok := tries[first]
	require.False(t, ok.at.Before(ends), "the first reconcile that succeeded began at %s, before the end %s", ok.at, ends)
	require.Less(t, ok.at.Sub(ends), backoff/2, "woken by the end, not by the backoff")
	t.Logf("figure: | the first reconcile after the end | %s after it |", ok.at.Sub(ends))

	d, _ := getDeployment(t, admin.kube, ns, "cache")
	require.Equal(t, value, d.Annotations[scenarioAnnotation], "the child carries the owner's scenario, and so its end")
	require.Positive(t, expiredAt(a, "kube:deployments.apps:patch"), "the apply after the end records the scenario's expiry")
	obj, err := memcacheds.Get(t.Context(), "cache", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, 0, a.Stop())

	// The experiment's ID names what it caused: the record of each abort,
	// whether or not its trace was sampled, and the Event each failed
	// reconcile recorded on the Memcached.
	injected := 0
	for _, r := range a.Telemetry().Records() {
		if r.Body().AsString() != fault.InjectedBody {
			continue
		}
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			if kv.Key == fault.ExperimentKey && kv.Value.AsString() == "ends-on-time" {
				injected++
			}
			return true
		})
	}
	require.Equal(t, first, injected, "one record of each abort, each naming the experiment")
	events := eventsOn(t, admin.kube, ns, obj.GetUID())
	require.NotEmpty(t, events)
	for _, e := range events {
		require.Contains(t, e.Note, `(experiment "ends-on-time")`, "the Event of a failed reconcile names the experiment")
	}
}

// expiredAt counts the strip events of an expired scenario at point on
// the App's spans.
func expiredAt(a *apptest.App, point string) int {
	n := 0
	for _, s := range a.Telemetry().Spans() {
		for _, e := range s.Events {
			if e.Name != fault.StripEvent {
				continue
			}
			attrs := attribute.NewSet(e.Attributes...)
			p, _ := attrs.Value(fault.PointKey)
			expired, _ := attrs.Value(fault.ExpiredKey)
			if p.AsString() == point && expired.AsBool() {
				n++
			}
		}
	}
	return n
}
