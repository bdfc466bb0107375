package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kubetest/wait"
)

// relatedChanges is the reconcile span's attribute that names the related
// objects whose changes queued the reconcile, "configmaps <ns>/<name>".
const relatedChanges = "loam.kube.controller.related.changes"

// causedBy counts, for each of the test's Memcacheds, its reconciles that
// started at since or later and that a change of the ConfigMap name
// queued, as their spans say.
func (o *operator) causedBy(configMap string, since time.Time) map[string]int {
	cause := "configmaps " + o.ns + "/" + configMap
	counts := map[string]int{}
	for _, s := range o.app.Telemetry().SpansNamed("reconcile " + memcached.Memcached.Kind) {
		if s.StartTime.Before(since) {
			continue
		}
		var object, ns string
		var changes []string
		for _, kv := range s.Attributes {
			switch kv.Key {
			case "loam.kube.object.name":
				object = kv.Value.AsString()
			case "k8s.namespace.name":
				ns = kv.Value.AsString()
			case relatedChanges:
				changes = kv.Value.AsStringSlice()
			}
		}
		if ns == o.ns && slices.Contains(changes, cause) {
			counts[object]++
		}
	}
	return counts
}

// hashes returns the config-hash annotation of the pod template of each
// of the test's Deployments, by name; "" for one without.
func (o *operator) hashes(t *testing.T) map[string]string {
	t.Helper()
	l, err := o.kube.AppsV1().Deployments(o.ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]string{}
	for _, d := range l.Items {
		out[d.Name] = d.Spec.Template.Annotations[memcached.ConfigHashAnnotation]
	}
	return out
}

// waitForHashes waits until the Deployment of each Memcached in want has
// the config-hash that want gives it.
func (o *operator) waitForHashes(t *testing.T, want map[string]string, msg string) {
	t.Helper()
	var wrong []string
	// A hundred Memcacheds converge through a few hundred writes: on two
	// busy cores (make test's other lane linking API servers) that took
	// longer than one object's patience (CI, 7 of 100 after 30 s). The
	// test counts requests; it promises no speed.
	wait.For(t, patience*time.Duration(max(1, len(want)/25)), func() bool {
		got := o.hashes(t)
		wrong = nil
		for name, hash := range want {
			if got[name] != hash {
				wrong = append(wrong, fmt.Sprintf("%s: %q", name, got[name]))
			}
		}
		return len(wrong) == 0
	}, msg, o, wait.LastSeen(func() string { return fmt.Sprint(wrong) }))
}

// A ConfigMap's change reconciles the Memcacheds that name it, through
// the Index of Memcacheds by ConfigMap, each once, and no other: a and b
// hold the same flags, so all three Deployments start with one hash; a
// changes, and a1's and a2's roll while b1's stays.
func TestConfigMap_a_change_reconciles_exactly_the_Memcacheds_that_name_it(t *testing.T) {
	f := readRBAC(t)
	o, kubeconfig := newOperator(t, f, f.clusterRole.Rules, f.role.Rules)
	flags := map[string]string{"memory-limit": "64"}
	o.createConfigMap(t, "a", flags)
	o.createConfigMap(t, "b", flags)
	o.createNaming(t, "a1", 1, "a")
	o.createNaming(t, "a2", 1, "a")
	o.createNaming(t, "b1", 1, "b")
	o.start(t, f, kubeconfig)

	before := memcached.ConfigHash(flags)
	o.waitForHashes(t, map[string]string{"a1": before, "a2": before, "b1": before}, "the Deployments never had their ConfigMaps' hash")

	changed := time.Now()
	newFlags := map[string]string{"memory-limit": "128"}
	o.updateConfigMap(t, "a", func(cm *corev1.ConfigMap) { cm.Data = newFlags })
	after := memcached.ConfigHash(newFlags)
	o.waitForHashes(t, map[string]string{"a1": after, "a2": after}, "a's change never rolled a1's and a2's pods")
	for _, name := range []string{"a1", "a2"} {
		d, _ := o.deployment(t, name)
		require.Equal(t, []string{"--memory-limit=128"}, d.Spec.Template.Spec.Containers[0].Args, name)
	}

	// What comes after a's change: a change of b's labels, which the same
	// watch brings after a's, and which reconciles b1. Once b1's
	// reconcile for it has run, a reconcile of b1 for a's change would
	// have run too.
	o.updateConfigMap(t, "b", func(cm *corev1.ConfigMap) { cm.Labels["touched"] = "yes" })
	wait.For(t, patience, func() bool { return o.causedBy("b", changed)["b1"] > 0 },
		"b's change never reconciled b1", o)

	require.Equal(t, map[string]int{"a1": 1, "a2": 1}, o.causedBy("a", changed),
		"a's change reconciled a1 and a2 once each, and nothing else")
	require.NotContains(t, o.causedBy("a", time.Time{}), "b1", "nothing of a's ever reconciled b1")
	require.Equal(t, before, o.hashes(t)["b1"], "b1's pods don't roll: b's data didn't change")
	b1, _ := o.deployment(t, "b1")
	require.Equal(t, []string{"--memory-limit=64"}, b1.Spec.Template.Spec.Containers[0].Args)

	require.Equal(t, 0, o.app.Stop(), o.Report())
	require.Empty(t, o.records("reconcile failed"), o.Report())
	require.Empty(t, o.records("mapping panicked"), o.Report())
}

// A Memcached that names a ConfigMap that doesn't exist is not Available,
// saying which, and has no Deployment; the ConfigMap's creation reconciles
// it, with no After and no retry, and its Deployment runs with the flags.
func TestConfigMap_created_after_its_Memcached_is_picked_up(t *testing.T) {
	f := readRBAC(t)
	o, kubeconfig := newOperator(t, f, f.clusterRole.Rules, f.role.Rules)
	o.createNaming(t, "cache", 1, "late")
	o.start(t, f, kubeconfig)

	var c *metav1.Condition
	wait.For(t, patience, func() bool {
		m, _ := o.memcached(t, "cache")
		c = meta.FindStatusCondition(m.Status.Conditions, "Available")
		return c != nil && c.Reason == memcached.ReasonConfigMapMissing
	}, "the Memcached never said its ConfigMap is missing", o)
	require.Equal(t, metav1.ConditionFalse, c.Status)
	require.Equal(t, fmt.Sprintf("the ConfigMap %q is not in the namespace %q: the Deployment is left as it is until it is created", "late", o.ns), c.Message)
	_, ok := o.deployment(t, "cache")
	require.False(t, ok, "no Deployment without its flags")
	require.Empty(t, o.records("reconcile failed"), "a missing ConfigMap is no error: %s", o.Report())

	created := time.Now()
	flags := map[string]string{"threads": "4", "memory-limit": "64"}
	o.createConfigMap(t, "late", flags)
	o.waitForHashes(t, map[string]string{"cache": memcached.ConfigHash(flags)}, "the ConfigMap's creation never brought the Deployment")
	d, _ := o.deployment(t, "cache")
	require.Equal(t, []string{"--memory-limit=64", "--threads=4"}, d.Spec.Template.Spec.Containers[0].Args)
	wait.For(t, patience, func() bool {
		m, _ := o.memcached(t, "cache")
		c = meta.FindStatusCondition(m.Status.Conditions, "Available")
		return c != nil && c.Reason == "DeploymentPending"
	}, "the Memcached's status never left ConfigMapMissing", o)
	// The reconcile's span ends after its status apply, which the wait
	// above may see first: wait for the span too.
	wait.For(t, patience, func() bool { return o.causedBy("late", created)["cache"] > 0 },
		"no reconcile span says the ConfigMap's creation caused it", o)
	require.Equal(t, map[string]int{"cache": 1}, o.causedBy("late", created), "the ConfigMap's creation reconciled the Memcached, once")

	require.Equal(t, 0, o.app.Stop(), o.Report())
}

// While the operator reconciles 100 Memcacheds that name 10 ConfigMaps,
// and again the 10 of one ConfigMap that changes, it reads the ConfigMaps
// from its cache: through a recording proxy, its requests of ConfigMaps
// are its informer's list and watch and Serve's check that ConfigMaps are
// served, and not one GET or LIST besides, of loam's or of the
// Reconciler's clientset.
func TestConfigMap_reads_send_no_request_while_100_Memcacheds_reconcile(t *testing.T) {
	const memcacheds, configMaps = 100, 10
	f := readRBAC(t)
	o, kubeconfig := newOperator(t, f, f.clusterRole.Rules, f.role.Rules)
	rec, kubeconfig := throughRecorder(t, cluster.Cluster(t), kubeconfig)
	flags := func(threads int) map[string]string { return map[string]string{"threads": strconv.Itoa(threads)} }
	want := map[string]string{}
	for i := range configMaps {
		o.createConfigMap(t, fmt.Sprintf("flags-%d", i), flags(i+1))
	}
	for i := range memcacheds {
		name := fmt.Sprintf("cache-%03d", i)
		o.createNaming(t, name, 1, fmt.Sprintf("flags-%d", i%configMaps))
		want[name] = memcached.ConfigHash(flags(i%configMaps + 1))
	}
	o.start(t, f, kubeconfig)
	o.waitForHashes(t, want, "the Deployments never had their ConfigMaps' hash")

	o.updateConfigMap(t, "flags-0", func(cm *corev1.ConfigMap) { cm.Data = flags(64) })
	for name := range want {
		if name[len(name)-1] == '0' { // cache-000, cache-010, … name flags-0
			want[name] = memcached.ConfigHash(flags(64))
		}
	}
	o.waitForHashes(t, want, "flags-0's change never rolled its Memcacheds' pods")
	require.Equal(t, 0, o.app.Stop(), o.Report())

	t.Logf("the operator's requests, by User-Agent:\n%s", byClient(rec.all()))
	var applies int
	for _, r := range rec.of("deployments") {
		if r.method == http.MethodPatch && r.userAgent == memcached.UserAgent {
			applies++
		}
	}
	require.GreaterOrEqual(t, applies, memcacheds+configMaps, "the proxy saw the Reconciler's applies: one a Memcached, and one for each of flags-0's")

	// Each request of ConfigMaps is one of three, told apart by its query:
	// Serve's check that ConfigMaps are served, a list of one
	// (limit=1); the informer's watch (watch=true), whose first is a
	// streaming list (sendInitialEvents=true) where the API server has
	// them; and, where it hasn't, the informer's first list, which
	// client-go's reflector sends with a resourceVersion. A GET of the
	// Reconciler's would name one ConfigMap, and a LIST of its would be
	// none of these: a reconcile's, more than a hundred of them.
	if cms := rec.of("configmaps"); len(cms) <= 10 {
		t.Logf("its requests of ConfigMaps: %v", cms)
	}
	var checks, lists, watches int
	for _, r := range rec.of("configmaps") {
		require.NotEqual(t, memcached.UserAgent, r.userAgent, "the Reconciler's clientset reads no ConfigMap: %v", r)
		require.Equal(t, http.MethodGet, r.method, "a read: %v", r)
		require.Empty(t, r.target().name, "no GET of one ConfigMap: %v", r)
		switch {
		case r.watch():
			watches++
		case r.query.Get("limit") == "1" && !r.query.Has("resourceVersion"):
			checks++
		case r.query.Has("resourceVersion"):
			lists++
		default:
			t.Errorf("a LIST of ConfigMaps neither Serve's check nor the informer's: %v", r)
		}
	}
	require.Equal(t, 1, checks, "Serve checks once that ConfigMaps are served")
	require.LessOrEqual(t, lists, 1, "the informer lists once at most, when it doesn't stream its first list")
	require.GreaterOrEqual(t, watches, 1, "the informer watches ConfigMaps")
}
