package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"

	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/kubetest/wait"
)

// failedReconciles counts name's reconciles in log that failed.
func failedReconciles(log *reconcileLog, name string) int {
	n := 0
	for _, e := range log.of(name) {
		if e.err != nil {
			n++
		}
	}
	return n
}

// TestFaults_a_Count_is_shared_by_every_object_of_the_same_value_in_one_process_until_it_restarts:
// a rule that aborts the Deployment's apply with a Count of 2 aborts two
// applies in all of the two Memcacheds annotated with the same value,
// and two of a third whose value differs only by its experiment ID. A new
// process counts afresh: the same annotations abort as many again.
func TestFaults_a_Count_is_shared_by_every_object_of_the_same_value_in_one_process_until_it_restarts(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	codec := scenarioCodec(t)
	rules := []fit.Rule{{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}, Count: 2}}
	valueOf := func(id string) string {
		ctx, err := fit.ContextWithScenario(context.Background(), codec, fit.Scenario{Rules: rules, ID: id})
		require.NoError(t, err)
		return baggage.FromContext(ctx).String()
	}
	shared, other := valueOf("shared"), valueOf("other")
	conn := throughWire(t, c)

	converged := func(log *reconcileLog) func() bool {
		return func() bool {
			for _, name := range []string{"a", "b", "c"} {
				if log.count(name) == 0 || log.of(name)[log.count(name)-1].err != nil {
					return false
				}
			}
			return true
		}
	}
	log := &reconcileLog{}
	a := experimentApp(t, conn, r, ns, log, 5*time.Millisecond, fault.Settings{})
	createWith(t, memcacheds, r, ns, "a", nil, map[string]string{scenarioAnnotation: shared})
	createWith(t, memcacheds, r, ns, "b", nil, map[string]string{scenarioAnnotation: shared})
	createWith(t, memcacheds, r, ns, "c", nil, map[string]string{scenarioAnnotation: other})
	wait.For(t, time.Minute, converged(log), "the Memcacheds don't converge", wait.App(a))
	require.Equal(t, 2, failedReconciles(log, "a")+failedReconciles(log, "b"), "a and b share one Count of 2")
	require.Equal(t, 2, failedReconciles(log, "c"), "c's value is another scenario, with a Count of its own")
	require.Equal(t, 0, a.Stop())

	// A new process starts with no counts: its first reconciles of the
	// same annotations meet the aborts again.
	log = &reconcileLog{}
	a = experimentApp(t, conn, r, ns, log, 5*time.Millisecond, fault.Settings{})
	wait.For(t, time.Minute, converged(log), "the Memcacheds don't converge after the restart", wait.App(a))
	require.Equal(t, 2, failedReconciles(log, "a")+failedReconciles(log, "b"), "the restarted process counts afresh")
	require.Equal(t, 2, failedReconciles(log, "c"))
	require.Equal(t, 0, a.Stop())
}

// draws is a fault.Settings.Rand that alternates between 0.25 and 0.75,
// and counts what it returned.
type draws struct {
	mu         sync.Mutex
	low, high  int
	returnedLo bool
}

func (d *draws) next() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.returnedLo = !d.returnedLo
	if d.returnedLo {
		d.low++
		return 0.25
	}
	d.high++
	return 0.75
}

func (d *draws) counts() (low, high int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.low, d.high
}

// TestFaults_a_Percent_aborts_the_share_its_draws_say_and_every_object_converges:
// a rule that aborts the Deployment's apply 50 percent of the time, with
// the Settings' Rand alternating below and above 50, aborts exactly the
// applies whose draw came below it, and every one of eight Memcacheds
// converges.
func TestFaults_a_Percent_aborts_the_share_its_draws_say_and_every_object_converges(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	codec := scenarioCodec(t)
	d := &draws{}
	log := &reconcileLog{}
	a := experimentApp(t, throughWire(t, c), r, ns, log, 5*time.Millisecond, fault.Settings{Decoder: codec, Rand: d.next})

	const point = "kube:deployments.apps:patch"
	value := annotationValue(t, codec, fit.Rule{Point: point, Fault: fit.Fault{Abort: true, Percent: 50}})
	names := []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"}
	for _, name := range names {
		createWith(t, memcacheds, r, ns, name, nil, map[string]string{scenarioAnnotation: value})
	}
	wait.For(t, time.Minute, func() bool {
		for _, name := range names {
			if _, ok := getDeployment(t, admin.kube, ns, name); !ok {
				return false
			}
		}
		return true
	}, "not every Memcached's Deployment was applied", wait.App(a))
	require.Equal(t, 0, a.Stop())

	low, high := d.counts()
	failed := 0
	for _, name := range names {
		failed += failedReconciles(log, name)
	}
	require.Positive(t, low, "some applies drew below 50")
	require.Positive(t, high, "some applies drew above 50")
	require.Equal(t, low, abortsAt(a, point), "every draw below 50, and no other, aborted the apply")
	require.Equal(t, low, failed, "each abort failed one reconcile")
}
