package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	loamtelemetry "github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The event-filter and selector tests (issue 19) prove that a filtered
// update queued nothing by order, as the related-objects tests do: each
// Controller has one worker, whose queue hands keys out in the order they
// came, and one watch delivers a resource's events in the order the API
// server wrote them. So once a marker, changed after the update a test
// expects skipped and through the same watch, has been reconciled, a
// reconcile the update queued would have started already: a count taken
// then proves it didn't.

// filterLog records a Controller's reconciles: which Memcached, and when.
type filterLog struct{ records[filterEntry] }

type filterEntry struct {
	name string
	at   time.Time
}

// count returns how many times name was reconciled.
func (l *filterLog) count(name string) int { return len(l.times(name)) }

// times returns when each reconcile of name began.
func (l *filterLog) times(name string) []time.Time {
	var out []time.Time
	for _, e := range l.from(0) {
		if e.name == name {
			out = append(out, e.at)
		}
	}
	return out
}

// filterReconciler reports each Memcached ready at its size and asks to be
// reconciled again after after, 0 for never, logging each reconcile.
func filterReconciler(log *filterLog, after time.Duration) kube.Reconciler[memcachedSpec, memcachedStatus] {
	return kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(_ context.Context, m memcachedObject) (kube.Result[memcachedStatus], error) {
		log.add(filterEntry{name: m.Name, at: time.Now()})
		return kube.Result[memcachedStatus]{Status: &memcachedStatus{ReadyReplicas: m.Spec.Size}, After: after}, nil
	})
}

// startFiltered serves a Controller of r's Memcacheds in ns, reconciled by
// rec with parts, once its caches have synced: the tests' objects are
// created after, so none comes from the initial list.
func startFiltered(t *testing.T, conn kube.Connection, r kube.Resource[memcachedSpec, memcachedStatus], ns string,
	settings func(*kube.Settings), rec kube.Reconciler[memcachedSpec, memcachedStatus], parts ...kube.Part,
) *controllerApp {
	t.Helper()
	a := startController(t, conn, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		st := settingsFor("filter-controller", ns, "pod-0")
		st.Namespace = ns
		if settings != nil {
			settings(&st)
		}
		return kube.NewController(s, client, st, r, rec, parts...)
	})
	wait.For(t, time.Minute, func() bool { return a.synced(t) }, "the Controller never synced", a)
	return a
}

// readyAt waits until the Memcached ns/name reports readyReplicas size:
// its status apply has returned.
func readyAt(t *testing.T, d dynamic.Interface, r kube.Resource[memcachedSpec, memcachedStatus], ns, name string, size int32, a *controllerApp) {
	t.Helper()
	wait.For(t, time.Minute, func() bool {
		m, found := getMemcached(t, d, r, ns, name)
		return found && m.Status.ReadyReplicas == size
	}, fmt.Sprintf("Memcached %s never reports %d ready", name, size), a)
}

// patchMemcached merge-patches the Memcached ns/name with patch.
func patchMemcached(t *testing.T, d dynamic.Interface, r kube.Resource[memcachedSpec, memcachedStatus], ns, name, patch string) {
	t.Helper()
	_, err := d.Resource(r.GVR()).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// The spec's status apply costs two reconciles: the one that applies it,
// and the one its event queues, which returns the same status and
// settles. Under SkipStatusOnly the second is skipped. Both Controllers
// run the same steps, one in a namespace of its own, and the same count
// after the marker tells them apart.
func TestFilter_SkipStatusOnly_makes_a_status_apply_cost_one_reconcile_not_two(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	for _, tc := range []struct {
		name  string
		ns    string
		parts []kube.Part
		want  int
	}{
		{"without a filter", c.Namespace(t), nil, 2},
		{"with SkipStatusOnly", ns, []kube.Part{kube.FilterUpdates(kube.SkipStatusOnly())}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log filterLog
			a := startFiltered(t, c.Connection(), r, tc.ns, nil, filterReconciler(&log, 0), tc.parts...)
			newMemcached(t, admin.dynamic, r, tc.ns, "m", 2)
			readyAt(t, admin.dynamic, r, tc.ns, "m", 2, a)
			// m's status apply has returned, so its event comes before
			// the marker's creation in the Memcacheds' watch.
			newMemcached(t, admin.dynamic, r, tc.ns, "marker", 1)
			wait.For(t, time.Minute, func() bool { return log.count("marker") >= 1 }, "the marker is never reconciled", a)
			require.Equal(t, tc.want, log.count("m"), "m's reconciles once the marker, created after m's status apply, was reconciled")

			// A change of spec is a new generation: reconciled, under the
			// filter too.
			before := log.count("m")
			patchMemcached(t, admin.dynamic, r, tc.ns, "m", `{"spec":{"size":3}}`)
			readyAt(t, admin.dynamic, r, tc.ns, "m", 3, a)
			require.Greater(t, log.count("m"), before)
			require.Equal(t, 0, a.Stop())
			require.Empty(t, a.failure())
		})
	}
}

// A filtered object is still reconciled by its After: the status apply's
// event, skipped, leaves the timer the reconcile set, where a change
// would have replaced it with a reconcile at once.
func TestFilter_a_filtered_object_is_still_reconciled_by_its_After(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	const after = 3 * time.Second
	var log filterLog
	a := startFiltered(t, c.Connection(), r, ns, nil, filterReconciler(&log, after), kube.FilterUpdates(kube.SkipStatusOnly()))
	newMemcached(t, admin.dynamic, r, ns, "m", 1)
	wait.For(t, time.Minute, func() bool { return log.count("m") >= 3 }, "m is not reconciled again by its After", a)
	times := log.times("m")
	for i := 1; i < 3; i++ {
		require.GreaterOrEqual(t, times[i].Sub(times[i-1]), after,
			"reconcile %d came %v after the one before: the status apply's event reconciled it, not its After", i, times[i].Sub(times[i-1]))
	}
	require.Equal(t, 0, a.Stop())
}

// The Deployment controller's writes of a Deployment's status, which
// the test makes here since the test cluster runs no Deployment
// controller, are skipped under an Owns filter; a change of its spec
// is not, and the Reconciler undoes it.
func TestFilter_an_Owns_filter_skips_an_owned_Deployment_s_status_and_not_its_spec(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	var reconciles seen
	a := startFiltered(t, c.Connection(), r, ns, nil, memcachedReconciler{kube: admin.kube, identity: "pod-0", seen: &reconciles},
		kube.FilterUpdates(kube.SkipStatusOnly()),
		kube.Owns(deploymentsGVR, kube.SkipStatusOnly()))
	deployments := admin.kube.AppsV1().Deployments(ns)
	newMemcached(t, admin.dynamic, r, ns, "m", 1)
	newMemcached(t, admin.dynamic, r, ns, "marker", 1)
	wait.For(t, time.Minute, func() bool {
		for _, name := range []string{"m", "marker"} {
			mc, found := getMemcached(t, admin.dynamic, r, ns, name)
			if _, err := deployments.Get(t.Context(), name, metav1.GetOptions{}); err != nil || !found || len(mc.Status.Conditions) == 0 {
				return false
			}
		}
		return true
	}, "the Memcacheds never have their Deployments and a status", a)

	// flush changes a label of the marker's Deployment, which the filter
	// keeps, and waits for the marker's reconcile: every event of a
	// Deployment before it has been handled, and what it queued
	// reconciled.
	flushes := 0
	flush := func() {
		t.Helper()
		flushes++
		before := reconciles.count("", "marker")
		_, err := deployments.Patch(t.Context(), "marker", types.MergePatchType,
			fmt.Appendf(nil, `{"metadata":{"labels":{"flush":"%d"}}}`, flushes), metav1.PatchOptions{})
		require.NoError(t, err)
		wait.For(t, time.Minute, func() bool { return reconciles.count("", "marker") > before }, "the marker is never reconciled", a)
	}
	flush()
	base := reconciles.count("", "m")

	d, err := deployments.Get(t.Context(), "m", metav1.GetOptions{})
	require.NoError(t, err)
	d.Status.ObservedGeneration, d.Status.Replicas = d.Generation, 1
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: "True", Reason: "MinimumReplicasAvailable"}}
	_, err = deployments.UpdateStatus(t.Context(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
	flush()
	require.Equal(t, base, reconciles.count("", "m"), "the Deployment's status write reconciled m")

	// kubectl scale: a new generation, which reconciles m, whose apply
	// sets the replicas back.
	_, err = deployments.Patch(t.Context(), "m", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	wait.For(t, time.Minute, func() bool {
		d, err := deployments.Get(t.Context(), "m", metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas == 1 && reconciles.count("", "m") > base
	}, "the scaled Deployment is never reconciled back to 1 replica", a)
	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())
}

// A FilterFunc of the end user's reconciles only the updates it keeps; one
// that panics is recovered, recorded, and lets its update through.
func TestFilter_a_FilterFunc_keeps_what_it_says_and_a_panicking_one_is_recorded_and_lets_the_update_through(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	var log filterLog
	touched := kube.FilterFunc("touched", func(old, new metav1.Object) bool {
		if new.GetAnnotations()["panic"] == "yes" {
			panic("the filter panics on this one")
		}
		return old.GetAnnotations()["touch"] != new.GetAnnotations()["touch"]
	})
	a := startFiltered(t, c.Connection(), r, ns, nil, filterReconciler(&log, 0), kube.FilterUpdates(touched))
	newMemcached(t, admin.dynamic, r, ns, "m", 1)
	newMemcached(t, admin.dynamic, r, ns, "marker", 1)
	readyAt(t, admin.dynamic, r, ns, "m", 1, a)
	readyAt(t, admin.dynamic, r, ns, "marker", 1, a)
	touches := 0
	touchMarker := func() {
		t.Helper()
		touches++
		before := log.count("marker")
		patchMemcached(t, admin.dynamic, r, ns, "marker", fmt.Sprintf(`{"metadata":{"annotations":{"touch":"%d"}}}`, touches))
		wait.For(t, time.Minute, func() bool { return log.count("marker") > before }, "the touched marker is never reconciled", a)
	}
	touchMarker()
	require.Equal(t, 1, log.count("m"), "the status apply, which the filter skips, reconciled m")

	patchMemcached(t, admin.dynamic, r, ns, "m", `{"metadata":{"annotations":{"other":"x"}}}`)
	touchMarker()
	require.Equal(t, 1, log.count("m"), "an update the filter skips reconciled m")

	patchMemcached(t, admin.dynamic, r, ns, "m", `{"metadata":{"annotations":{"touch":"yes"}}}`)
	wait.For(t, time.Minute, func() bool { return log.count("m") == 2 }, "an update the filter keeps never reconciles m", a)

	patchMemcached(t, admin.dynamic, r, ns, "m", `{"metadata":{"annotations":{"panic":"yes"}}}`)
	wait.For(t, time.Minute, func() bool { return log.count("m") == 3 }, "the update the filter panicked on never reconciles m", a)
	records := mappingPanics(a)
	require.Len(t, records, 1)
	record := records[0]
	require.Equal(t, fmt.Sprintf(`filter "touched" of memcacheds.%s`, r.Group), record[loamtelemetry.MappingKey])
	require.Equal(t, "memcacheds."+r.Group, record[loamtelemetry.RelatedResourceKey])
	require.Equal(t, ns, record[loamtelemetry.NamespaceKey])
	require.Equal(t, "m", record[loamtelemetry.ObjectNameKey])
	require.Equal(t, "the filter panics on this one", record["exception.message"])
	require.Contains(t, record["exception.stacktrace"], "TestFilter_a_FilterFunc_keeps_what_it_says")
	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())
}

// Settings.LabelSelector narrows what the API server sends: an object
// outside it is never reconciled, and one relabelled into it is, as the
// watch's addition of it.
func TestFilter_a_primary_LabelSelector_reconciles_only_the_objects_inside_it(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	const managed = "filter.e2e.loam.dev/managed"
	var log filterLog
	a := startFiltered(t, c.Connection(), r, ns, func(s *kube.Settings) { s.LabelSelector = managed + "=yes" }, filterReconciler(&log, 0))
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	createWith(t, memcacheds, r, ns, "out", nil, nil)
	createWith(t, memcacheds, r, ns, "in", map[string]string{managed: "yes"}, nil)
	readyAt(t, admin.dynamic, r, ns, "in", 1, a)
	require.Zero(t, log.count("out"), "a Memcached outside the selector, created before one inside it that was reconciled, was reconciled")
	out, _ := getMemcached(t, admin.dynamic, r, ns, "out")
	require.Zero(t, out.Status.ReadyReplicas)

	patchMemcached(t, admin.dynamic, r, ns, "out", fmt.Sprintf(`{"metadata":{"labels":{%q:"yes"}}}`, managed))
	readyAt(t, admin.dynamic, r, ns, "out", 1, a)
	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())
}

// A field selector parses at NewController, but which fields a resource
// can be selected by is the API server's to say: a custom resource's are
// its name and namespace, so one of spec.size fails Serve, naming the
// resource, before anything is reconciled.
func TestFilter_a_primary_FieldSelector_the_API_server_doesn_t_support_exits_1_naming_the_resource(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	var log filterLog
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("filter-controller", ns, "pod-0")
		settings.Namespace = ns
		settings.FieldSelector = "spec.size=1"
		return kube.NewController(s, client, settings, r, filterReconciler(&log, 0))
	})
	require.Equal(t, 1, a.Wait())
	require.Equal(t, fmt.Sprintf("kube: listing %s/v1alpha1, Resource=memcacheds: field label not supported: spec.size", r.Group), a.failure())
	require.False(t, a.synced(t))
}
