package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
	// Serial: its 5s bound is tight under CPU contention.
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

// switchRecords returns the App's records of its kill switch's state,
// each with when it was written.
func switchRecords(a *apptest.App) (bodies []string, at []time.Time) {
	for _, r := range a.Telemetry().Records() {
		if body := r.Body().AsString(); strings.HasPrefix(body, "failure injection is") {
			bodies = append(bodies, body)
			at = append(at, r.Timestamp())
		}
	}
	return bodies, at
}

// switchedAt returns when the App last recorded body, and whether it has.
func switchedAt(a *apptest.App, body string) (time.Time, bool) {
	bodies, at := switchRecords(a)
	for i := len(bodies) - 1; i >= 0; i-- {
		if bodies[i] == body {
			return at[i], true
		}
	}
	return time.Time{}, false
}

// TestFaults_a_FaultSwitch_turns_failure_injection_off_and_on_in_every_App_within_5s:
// two Apps watch one ConfigMap through the API server, one running an
// operator whose Memcached's scenario aborts every apply of its
// Deployment, with an hour's backoff. The ConfigMap's key set to off, both
// record it and the operator reconciles the failed Memcached at once,
// applying the Deployment, within 5s of the update; on again, a change
// fails again; the ConfigMap deleted, both are off, with a WARN saying
// why.
func TestFaults_a_FaultSwitch_turns_failure_injection_off_and_on_in_every_App_within_5s(t *testing.T) {
	// Serial: its 5s bound is tight under CPU contention.
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	configMaps := admin.kube.CoreV1().ConfigMaps(ns)
	codec := scenarioCodec(t)
	log := &reconcileLog{}
	settings := kube.FaultSwitchSettings{Namespace: ns, Name: "failure-injection"}
	// flip returns when it began to write, since the watch's event may
	// reach the Apps before the write's answer reaches the test.
	flip := func(state string) time.Time {
		began := time.Now()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: settings.Name}, Data: map[string]string{kube.DefaultFaultSwitchKey: state}}
		_, err := configMaps.Update(t.Context(), cm, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			_, err = configMaps.Create(t.Context(), cm, metav1.CreateOptions{})
		}
		require.NoError(t, err)
		return began
	}
	flip("on")

	conn := throughWire(t, c)
	operator := startExperimentWith(t, conn, fault.Settings{Decoder: codec}, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		sw, err := kube.NewFaultSwitch(s, client, settings)
		if err != nil {
			return nil, err
		}
		kc, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		// A failed reconcile's retry is an hour away, as after a long
		// experiment: only the switch going off reconciles it sooner.
		cs := experimentSettings("memcached-controller", ns)
		cs.RetryBaseDelay, cs.RetryMaxDelay = time.Hour, time.Hour
		ctrl, err := kube.NewController(s, client, cs, r, experimentReconciler{log: log, kube: kc},
			kube.Owns(deploymentsGVR), kube.TrustScenario(scenarioAnnotation, inNamespace(ns)))
		return []app.Service{sw, ctrl}, err
	})
	other := startExperimentWith(t, conn, fault.Settings{Decoder: codec}, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		sw, err := kube.NewFaultSwitch(s, client, settings)
		return []app.Service{sw}, err
	})
	for _, a := range []*apptest.App{operator, other} {
		wait.For(t, switchBound, func() bool { _, ok := switchedAt(a, "failure injection is on"); return ok }, "the switch's first read never says on", wait.App(a))
	}

	value := annotationValue(t, codec, fit.Rule{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}})
	createWith(t, memcacheds, r, ns, "cache", nil, map[string]string{scenarioAnnotation: value})
	wait.For(t, time.Minute, func() bool { return log.count("cache") >= 1 }, "never reconciled", wait.App(operator))
	for _, try := range log.of("cache") {
		require.Error(t, try.err, "the switch is on: every reconcile meets the abort")
	}

	// Its retry an hour away, the object is reconciled at once when the
	// switch goes off.
	off := flip("off")
	succeeded := func(e reconcileEntry) bool { return e.err == nil }
	wait.For(t, time.Minute, func() bool { return slices.ContainsFunc(log.of("cache"), succeeded) }, "no reconcile succeeds", wait.App(operator))
	tries := log.of("cache")
	took := tries[slices.IndexFunc(tries, succeeded)].at.Sub(off)
	require.LessOrEqual(t, took, switchBound, "the first reconcile without the fault came %s after the ConfigMap said off", took)
	_, ok := getDeployment(t, admin.kube, ns, "cache")
	require.True(t, ok, "the reconcile that succeeded applied the Deployment")
	for _, a := range []*apptest.App{operator, other} {
		wait.For(t, switchBound, func() bool { at, ok := switchedAt(a, "failure injection is off"); return ok && at.After(off) }, "an App never records off", wait.App(a))
		at, _ := switchedAt(a, "failure injection is off")
		require.LessOrEqual(t, at.Sub(off), switchBound)
		t.Logf("figure: | ConfigMap off to the App's record | %s |", at.Sub(off))
	}
	t.Logf("figure: | ConfigMap off to the first reconcile without the fault | %s |", took)

	on := flip("on")
	wait.For(t, switchBound, func() bool { at, ok := switchedAt(operator, "failure injection is on"); return ok && at.After(on) }, "the switch never reads on again", wait.App(operator))
	changed := touch(t, memcacheds, "cache", "switched-on-again")
	wait.For(t, time.Minute, func() bool { return log.saw("cache", changed) }, "the change is never reconciled", wait.App(operator))
	tries = log.of("cache")
	require.Error(t, tries[len(tries)-1].err, "the switch is on again: the reconcile meets the abort")

	gone := time.Now()
	require.NoError(t, configMaps.Delete(t.Context(), settings.Name, metav1.DeleteOptions{}))
	for _, a := range []*apptest.App{operator, other} {
		wait.For(t, switchBound, func() bool {
			at, ok := switchedAt(a, "failure injection is off: its switch can't be read")
			return ok && at.After(gone)
		}, "a deleted ConfigMap is never off", wait.App(a))
	}
	require.Equal(t, 0, operator.Stop())
	require.Equal(t, 0, other.Stop())

	bodies, _ := switchRecords(other)
	require.Equal(t, []string{
		"failure injection is on", "failure injection is off", "failure injection is on",
		"failure injection is off: its switch can't be read",
	}, bodies, "each change once, in order")
}

// switchOnFor creates in ns a fault switch's ConfigMap, failure-injection,
// saying on, and the Role and RoleBinding failure-injection-switch that let
// the ServiceAccount sa list and watch it, by its name alone. It returns
// the switch's settings.
func switchOnFor(t *testing.T, admin clients, ns, sa string) kube.FaultSwitchSettings {
	t.Helper()
	settings := kube.FaultSwitchSettings{Namespace: ns, Name: "failure-injection"}
	_, err := admin.kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: settings.Name}, Data: map[string]string{kube.DefaultFaultSwitchKey: "on"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.kube.RbacV1().Roles(ns).Create(t.Context(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "failure-injection-switch"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"},
			ResourceNames: []string{settings.Name}, Verbs: []string{"list", "watch"},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.kube.RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "failure-injection-switch"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "failure-injection-switch"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return settings
}

// TestFaults_a_FaultSwitch_needs_only_list_and_watch_of_its_ConfigMap_by_name:
// a ServiceAccount that may list and watch the one ConfigMap, by its name
// alone, reads the switch; one that may not stays off, with nothing
// recorded on, while its informer retries.
func TestFaults_a_FaultSwitch_needs_only_list_and_watch_of_its_ConfigMap_by_name(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	admin := adminClients(t, c)
	settings := switchOnFor(t, admin, ns, "switched")

	var refusedFaults *fault.Injector
	appAs := func(sa string) *apptest.App {
		token, err := c.ServiceAccountToken(t.Context(), ns, sa)
		require.NoError(t, err)
		conn := c.Connection()
		conn.Token = func(context.Context) (string, error) { return token, nil }
		return startExperimentWith(t, conn, fault.Settings{Decoder: scenarioCodec(t)}, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
			if sa == "unswitched" {
				refusedFaults = s.Faults
			}
			sw, err := kube.NewFaultSwitch(s, client, settings)
			return []app.Service{sw}, err
		})
	}
	granted, refused := appAs("switched"), appAs("unswitched")
	// RBAC takes effect a moment after it is written; the informer retries.
	wait.For(t, time.Minute, func() bool { _, ok := switchedAt(granted, "failure injection is on"); return ok }, "the granted App never reads on", wait.App(granted))
	// The refused App's list is refused, as an ERROR record of
	// client-go's says, naming the switch; it stays off.
	forbidden := func() bool {
		for _, r := range refused.Telemetry().Records() {
			msg, where := "", ""
			r.WalkAttributes(func(kv attribute.KeyValue) bool {
				switch kv.Key {
				case "exception.message":
					msg = kv.Value.AsString()
				case fault.SwitchKey:
					where = kv.Value.AsString()
				}
				return true
			})
			if r.Severity() == log.SeverityError && strings.Contains(msg, `configmaps "failure-injection" is forbidden`) && strings.Contains(where, settings.Name) {
				return true
			}
		}
		return false
	}
	wait.For(t, time.Minute, forbidden, "the refused App's list is never refused", wait.App(refused))
	require.Equal(t, 0, granted.Stop())
	require.Equal(t, 0, refused.Stop())
	bodies, _ := switchRecords(refused)
	require.Empty(t, bodies, "the refused App never read the switch, and stayed off as NewFaultSwitch left it")
	require.False(t, refusedFaults.On())
}
