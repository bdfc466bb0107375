package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	loamtelemetry "github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The related-objects tests: a Controller that Watches ConfigMaps its
// Readers depend on, reads them from its Cache, and finds the Readers
// that name one through its Index (issue 18), as whole Apps against the
// shared cluster. What a test proves did not happen it proves by order:
// each Controller has one worker, whose queue hands the keys changes
// queue out in the order they came, so once a Reader queued after a cause
// has settled, whatever that cause queued has been reconciled
// (readers.settle).

// reads accepts a status that found the ConfigMap with value v, and whose
// peers, read through the Index, are peers.
func reads(v string, peers ...string) func(readerStatus) bool {
	return func(st readerStatus) bool {
		return value(v)(st) && slices.Equal(st.Peers, peers)
	}
}

// notFound accepts a status that found no ConfigMap, and no error.
func notFound(st readerStatus) bool { return !st.Found && st.Error == "" }

func TestRelated_ByIndex_reconciles_exactly_the_Readers_naming_a_changed_ConfigMap_which_they_read_from_the_Cache(t *testing.T) {
	t.Parallel()
	c, ns, r, rs, cms := readerTest(t)
	cms.put(t, ns, "cm-a", "one", nil)
	cms.put(t, ns, "cm-b", "two", nil)
	rs.create(t, "a1", readerSpec{ConfigMap: "cm-a"})
	rs.create(t, "a2", readerSpec{ConfigMap: "cm-a"})
	rs.create(t, "b", readerSpec{ConfigMap: "cm-b"})

	w, conn := startWire(t, c)
	var log readerLog
	a := startReaders(t, conn, r, ns, &log, kube.CacheOptions[corev1.ConfigMap]{}, true, byIndex)
	rs.settle(t, &log, a, map[string]func(readerStatus) bool{
		"a1": reads("one", "a1", "a2"), "a2": reads("one", "a1", "a2"), "b": reads("two", "b"),
	})
	require.True(t, a.synced(t))

	// ConfigMap A changes: its two Readers reconcile and read the new
	// data from the cache. B's Reader is queued by nothing: had it been,
	// it would have read B's data as it still is, before B changes.
	mark := log.mark()
	cms.put(t, ns, "cm-a", "one-changed", nil)
	rs.settle(t, &log, a, map[string]func(readerStatus) bool{
		"a1": reads("one-changed", "a1", "a2"), "a2": reads("one-changed", "a1", "a2"),
	})
	require.NotEmpty(t, log.since(mark, "a1"))
	require.NotEmpty(t, log.since(mark, "a2"))

	// ConfigMap B changes, after A's Readers settled: B's Reader
	// reconciles, and A's don't.
	afterA := log.mark()
	cms.put(t, ns, "cm-b", "two-changed", nil)
	rs.settle(t, &log, a, map[string]func(readerStatus) bool{"b": reads("two-changed", "b")})
	for _, e := range log.since(mark, "b") {
		require.Equal(t, "two-changed", e.status.Value, "b was reconciled for ConfigMap A's change: %+v", e)
	}
	require.NotEmpty(t, log.since(afterA, "b"))
	require.Empty(t, log.since(afterA, "a1"), "a1 was reconciled for ConfigMap B's change")
	require.Empty(t, log.since(afterA, "a2"), "a2 was reconciled for ConfigMap B's change")

	// Each reconcile's span names the change that caused it; b's never
	// name A's.
	changeA, changeB := "configmaps "+ns+"/cm-a", "configmaps "+ns+"/cm-b"
	wait.For(t, time.Minute, func() bool {
		return causedBy(a, "a1", changeA) > 0 && causedBy(a, "a2", changeA) > 0 && causedBy(a, "b", changeB) > 0
	}, "no span names the ConfigMap whose change caused it", a)
	require.Zero(t, causedBy(a, "b", changeA))
	require.Zero(t, causedBy(a, "a1", changeB))

	// Every read came from the cache: the only requests of ConfigMaps
	// the App made are the served check, the informer's list and its
	// watch, all of the namespace's collection.
	requireOnlyInformerRequests(t, w, ns)

	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())
}

func TestRelated_MapFunc_reconciles_both_Readers_when_a_ConfigMap_s_label_moves_it_from_one_to_the_other(t *testing.T) {
	t.Parallel()
	c, ns, r, rs, cms := readerTest(t)
	cms.put(t, ns, "moving", "m1", map[string]string{forLabel: "x"})
	rs.create(t, "x", readerSpec{})
	rs.create(t, "y", readerSpec{})

	var log readerLog
	a := startReaders(t, c.Connection(), r, ns, &log, kube.CacheOptions[corev1.ConfigMap]{}, false,
		func(*kube.Index[readerObject]) kube.Mapping { return kube.MapFunc(byLabel) })
	rs.settle(t, &log, a, map[string]func(readerStatus) bool{"x": value("m1"), "y": notFound})

	// The label moves the ConfigMap from x to y: its state before the
	// change maps to x, which no longer finds it, and its state after to
	// y, which does.
	change := "configmaps " + ns + "/moving"
	xBefore, yBefore := causedBy(a, "x", change), causedBy(a, "y", change)
	cms.put(t, ns, "moving", "m1", map[string]string{forLabel: "y"})
	rs.settle(t, &log, a, map[string]func(readerStatus) bool{"x": notFound, "y": value("m1")})
	wait.For(t, time.Minute, func() bool {
		return causedBy(a, "x", change) > xBefore && causedBy(a, "y", change) > yBefore
	}, "no span of x and y names the moved ConfigMap", a)
	require.Equal(t, 0, a.Stop())
}

func TestRelated_Cache_selectors(t *testing.T) {
	t.Parallel()
	t.Run("a ConfigMap outside the LabelSelector isn't cached and its changes reconcile nothing", func(t *testing.T) {
		c, ns, r, rs, cms := readerTest(t)
		selected := map[string]string{"related.e2e.loam.dev/selected": "yes"}
		cms.put(t, ns, "in", "i1", selected)
		cms.put(t, ns, "out", "o1", nil)
		rs.create(t, "reads-in", readerSpec{ConfigMap: "in"})
		rs.create(t, "reads-out", readerSpec{ConfigMap: "out"})

		var log readerLog
		a := startReaders(t, c.Connection(), r, ns, &log,
			kube.CacheOptions[corev1.ConfigMap]{LabelSelector: "related.e2e.loam.dev/selected=yes"}, true, byIndex)
		// Get finds no "out", which exists, without an error.
		rs.settle(t, &log, a, map[string]func(readerStatus) bool{"reads-in": reads("i1", "reads-in"), "reads-out": notFound})

		// "out" changes, then "in": once in's Reader has settled, out's
		// change, which came first, would have been reconciled.
		mark := log.mark()
		cms.put(t, ns, "out", "o2", nil)
		cms.put(t, ns, "in", "i2", selected)
		rs.settle(t, &log, a, map[string]func(readerStatus) bool{"reads-in": reads("i2", "reads-in")})
		require.Empty(t, log.since(mark, "reads-out"), "a change of a ConfigMap outside the selector reconciled its Reader")
		require.True(t, notFound(rs.get(t, "reads-out").Status))
		require.Equal(t, 0, a.Stop())
	})

	// A Reader names a ConfigMap in another namespace than the
	// Controller's Settings.Namespace: only a Cache of all namespaces
	// holds it, and a change of it reconciles the Reader.
	for _, tc := range []struct {
		name          string
		allNamespaces bool
		want          func(ns, other, value string) func(readerStatus) bool
	}{{
		name: "without AllNamespaces a read of another namespace fails naming it",
		want: func(ns, other, _ string) func(readerStatus) bool {
			msg := fmt.Sprintf("namespace %q is outside the Cache, which holds namespace %q only", other, ns)
			return func(st readerStatus) bool { return strings.Contains(st.Error, msg) }
		},
	}, {
		name:          "with AllNamespaces another namespace's ConfigMap is read",
		allNamespaces: true,
		want:          func(_, _, v string) func(readerStatus) bool { return reads(v, "reader") },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster.Cluster(t)
			ns, other := c.Namespace(t), c.Namespace(t)
			r := installReaders(t, c, ns)
			rs := newReaders(t, c, r, ns)
			cms := configMapClient{adminClients(t, c).kube}
			cms.put(t, other, "shared", "s1", nil)
			rs.create(t, "reader", readerSpec{ConfigMap: "shared", ConfigMapNamespace: other})

			var log readerLog
			a := startReaders(t, c.Connection(), r, ns, &log,
				kube.CacheOptions[corev1.ConfigMap]{AllNamespaces: tc.allNamespaces}, true, byIndex)
			rs.settle(t, &log, a, map[string]func(readerStatus) bool{"reader": tc.want(ns, other, "s1")})
			cms.put(t, other, "shared", "s2", nil)
			rs.settle(t, &log, a, map[string]func(readerStatus) bool{"reader": tc.want(ns, other, "s2")})
			require.Equal(t, 0, a.Stop())
		})
	}
}

func TestRelated_Watches_of_a_resource_that_isn_t_served_exits_1_naming_it_before_any_reconcile(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installReaders(t, c, ns)
	newReaders(t, c, r, ns).create(t, "waiting", readerSpec{})
	missing := readerResource("missing-" + relatedGroup(ns)) // no CRD

	var reconciles atomic.Int32
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("reader-controller", ns, "pod-0")
		settings.Namespace = ns
		return kube.NewController(s, client, settings, r,
			kube.ReconcilerFunc[readerSpec, readerStatus](func(context.Context, readerObject) (kube.Result[readerStatus], error) {
				reconciles.Add(1)
				return kube.Result[readerStatus]{}, nil
			}),
			kube.Watches(kube.NewResourceCache(missing, kube.CacheOptions[readerObject]{}), kube.MapFunc(byLabel)))
	})
	wait.For(t, time.Minute, func() bool {
		select {
		case <-a.Done():
			return true
		default:
			return false
		}
	}, "the App serves a Controller whose related resource isn't served", a)
	require.Equal(t, 1, a.Wait())
	require.Equal(t, fmt.Sprintf("kube: listing %s/v1, Resource=readers: the server could not find the requested resource", missing.Group), a.failure())
	require.Zero(t, reconciles.Load(), "a Reader was reconciled")
	require.False(t, a.synced(t))
}

func TestRelated_a_MapFunc_that_panics_is_recorded_and_the_Controller_goes_on(t *testing.T) {
	t.Parallel()
	c, ns, r, rs, cms := readerTest(t)
	cms.put(t, ns, "fine", "f1", map[string]string{forLabel: "x"})
	rs.create(t, "x", readerSpec{})

	var log readerLog
	a := startReaders(t, c.Connection(), r, ns, &log, kube.CacheOptions[corev1.ConfigMap]{}, false,
		func(*kube.Index[readerObject]) kube.Mapping {
			return kube.MapFunc(func(cm metav1.Object) []kube.Key {
				if cm.GetName() == "boom" {
					panic("no mapping for boom")
				}
				return byLabel(cm)
			})
		})
	rs.settle(t, &log, a, map[string]func(readerStatus) bool{"x": value("f1")})

	cms.put(t, ns, "boom", "b", nil)
	var record map[attribute.Key]string
	wait.For(t, time.Minute, func() bool {
		records := mappingPanics(a)
		if len(records) == 0 {
			return false
		}
		record = records[0]
		return true
	}, "no mapping panicked record", a)
	require.Equal(t, "the mapping of configmaps", record[loamtelemetry.MappingKey])
	require.Equal(t, "configmaps", record[loamtelemetry.RelatedResourceKey])
	require.Equal(t, ns, record[loamtelemetry.NamespaceKey])
	require.Equal(t, "boom", record[loamtelemetry.ObjectNameKey])
	require.Equal(t, "no mapping for boom", record["exception.message"])
	require.Equal(t, "string", record["exception.type"])
	require.Contains(t, record["exception.stacktrace"], "TestRelated_a_MapFunc_that_panics")

	// The informer goes on: a later change of another ConfigMap
	// reconciles its Reader.
	cms.put(t, ns, "fine", "f2", map[string]string{forLabel: "x"})
	rs.settle(t, &log, a, map[string]func(readerStatus) bool{"x": value("f2")})
	require.Len(t, mappingPanics(a), 1)
	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())
}

// mappingPanics returns the attributes of each "mapping panicked" record
// of the App, an ERROR, as strings.
func mappingPanics(a *controllerApp) []map[attribute.Key]string {
	var out []map[attribute.Key]string
	for _, r := range a.Telemetry().Records() {
		if r.Body().AsString() != "mapping panicked" || r.Severity().String() != "ERROR" {
			continue
		}
		attrs := map[attribute.Key]string{}
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			attrs[kv.Key] = kv.Value.String()
			return true
		})
		out = append(out, attrs)
	}
	return out
}

// TestRelated_nothing_is_reconciled_until_the_related_Cache_has_synced
// holds the informer's list of ConfigMaps at a proxy. Meanwhile a control
// App, started after the held App's list of ConfigMaps was sent, goes all
// the way from its served check to a settled Reader: had the held App
// not waited for its ConfigMaps, it would have reconciled by then too,
// since its Readers' own cache has no list held.
func TestRelated_nothing_is_reconciled_until_the_related_Cache_has_synced(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns, controlNS := c.Namespace(t), c.Namespace(t)
	r := installReaders(t, c, ns)
	admin := adminClients(t, c)
	cms := configMapClient{admin.kube}
	rs, control := newReaders(t, c, r, ns), newReaders(t, c, r, controlNS)
	for _, x := range []readers{rs, control} {
		cms.put(t, x.ns, "flags", "f1", nil)
		x.create(t, "reader", readerSpec{ConfigMap: "flags"})
	}

	var heldOnce, releaseOnce sync.Once
	held, release := make(chan struct{}), make(chan struct{})
	conn := startProxy(t, c, func(rw http.ResponseWriter, r *http.Request, next http.Handler) {
		// Every request of ConfigMaps but the served check's.
		if configMapPath.MatchString(r.URL.Path) && r.URL.Query().Get("limit") != "1" {
			heldOnce.Do(func() { close(held) })
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		next.ServeHTTP(rw, r)
	})
	conn.Token = c.Connection().Token
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })

	var log, controlLog readerLog
	a := startReaders(t, conn, r, ns, &log, kube.CacheOptions[corev1.ConfigMap]{}, true, byIndex)
	wait.For(t, time.Minute, func() bool {
		select {
		case <-held:
			return true
		default:
			return false
		}
	}, "the App never listed ConfigMaps", a)
	ca := startReaders(t, c.Connection(), r, controlNS, &controlLog, kube.CacheOptions[corev1.ConfigMap]{}, true, byIndex)
	control.settle(t, &controlLog, ca, map[string]func(readerStatus) bool{"reader": reads("f1", "reader")})

	require.False(t, a.synced(t), "Synced before the ConfigMaps' cache")
	require.Zero(t, log.mark(), "a reconcile before the ConfigMaps' cache synced")
	require.Nil(t, lease(t, admin.kube, ns, "reader-controller"), "leading before every cache synced")

	released := time.Now()
	releaseOnce.Do(func() { close(release) })
	rs.settle(t, &log, a, map[string]func(readerStatus) bool{"reader": reads("f1", "reader")})
	require.True(t, a.synced(t))
	for _, e := range log.since(0, "") {
		require.False(t, e.at.Before(released), "a reconcile began before the list was released: %+v", e)
		require.Empty(t, e.status.Error)
	}
	require.Equal(t, 0, ca.Stop())
	require.Equal(t, 0, a.Stop())
}
