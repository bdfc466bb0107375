package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// switchBound is how soon the kill switch takes effect, as the docs
// promise.
const switchBound = 5 * time.Second

// TestFaults_the_kill_switch_turns_failure_injection_off_and_on_within_5s:
// a running operator whose Memcached's scenario aborts every apply of its
// Deployment; its switch's file, as a mounted ConfigMap would be, turned
// off, the next reconcile applies the Deployment, within 5s and with the
// annotation still on the Memcached; turned on again, the next change
// fails again.
func TestFaults_the_kill_switch_turns_failure_injection_off_and_on_within_5s(t *testing.T) {
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	codec := scenarioCodec(t)
	log := &reconcileLog{}
	switchFile := filepath.Join(t.TempDir(), "failure-injection")
	flip := func(state string) time.Time {
		// Replaced in one step, as the kubelet updates a ConfigMap's file.
		tmp := switchFile + ".new"
		require.NoError(t, os.WriteFile(tmp, []byte(state+"\n"), 0o600))
		require.NoError(t, os.Rename(tmp, switchFile))
		return time.Now()
	}
	flip("on")
	a := startExperimentWith(t, throughWire(t, c), fault.Settings{Decoder: codec, Switch: switchFile}, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		ctrl, err := memcachedUnderTest(s, client, r, ns, experimentReconciler{log: log})
		return []app.Service{ctrl}, err
	})

	value := annotationValue(t, codec, fit.Rule{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}})
	createWith(t, memcacheds, r, ns, "cache", nil, map[string]string{scenarioAnnotation: value})
	wait.For(t, time.Minute, func() bool { return log.count("cache") >= 3 }, "never reconciled", wait.App(a))
	for _, try := range log.of("cache") {
		require.Error(t, try.err, "the switch is on: every reconcile meets the abort")
	}
	_, ok := getDeployment(t, admin.kube, ns, "cache")
	require.False(t, ok)

	off := flip("off")
	succeeded := func(e reconcileEntry) bool { return e.err == nil }
	wait.For(t, time.Minute, func() bool { return slices.ContainsFunc(log.of("cache"), succeeded) }, "no reconcile succeeds", wait.App(a))
	tries := log.of("cache")
	first := slices.IndexFunc(tries, succeeded)
	_, ok = getDeployment(t, admin.kube, ns, "cache")
	require.True(t, ok, "the reconcile that succeeded applied the Deployment")
	took := tries[first].at.Sub(off)
	require.LessOrEqual(t, took, switchBound, "the first reconcile without the fault came %s after the switch went off", took)
	t.Logf("figure: | switch off to the first reconcile without the fault | %s |", took)

	flip("on")
	// Once a read has seen it, as its record says, a change of the
	// Memcached fails again.
	wait.For(t, switchBound, func() bool { return switchedOn(a) == 2 }, "the switch never read on again", wait.App(a))
	changed := touch(t, memcacheds, "cache", "switched-on-again")
	wait.For(t, time.Minute, func() bool { return log.saw("cache", changed) }, "the change is never reconciled", wait.App(a))
	tries = log.of("cache")
	require.Error(t, tries[len(tries)-1].err, "the switch is on again: the reconcile meets the abort")
	require.Equal(t, 0, a.Stop())
}

// switchedOn counts the App's records that failure injection is on.
func switchedOn(a *apptest.App) int {
	n := 0
	for _, r := range a.Telemetry().Records() {
		if r.Body().AsString() == "failure injection is on" {
			n++
		}
	}
	return n
}
