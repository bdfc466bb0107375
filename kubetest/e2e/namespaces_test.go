package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The namespace-set tests (issue 19): a Controller whose
// Settings.Namespaces name several namespaces, and a Cache with a set of
// its own, each as a whole App of the related-objects tests' Readers
// against the shared cluster, through the wire, which shows which
// namespaces the App listed and watched. What a test proves did not
// happen it proves with the wire, which never carried a request of the
// namespace, and by order, as the related tests do: one worker, and a
// marker Reader created after the cause, settled.

// readFunc is a Reconciler of Readers that writes what read returns into
// each Reader's status, and logs each reconcile as readerReconciler does,
// for readers.settle.
type readFunc struct {
	read func(readerObject) readerStatus
	log  *readerLog
}

func (r readFunc) Reconcile(_ context.Context, m readerObject) (kube.Result[readerStatus], error) {
	at := time.Now()
	st := r.read(m)
	r.log.add(readerEntry{
		at: at, name: m.Name, resourceVersion: m.ResourceVersion, status: st,
		unchanged: st.Found == m.Status.Found && st.Value == m.Status.Value && st.Error == m.Status.Error &&
			slices.Equal(st.Peers, m.Status.Peers),
	})
	return kube.Result[readerStatus]{Status: &st}, nil
}

// startReadersWith starts an App of one Controller of r's Readers on
// conn, with one worker and its Lease in leaseNamespace, limited as
// limit sets its Settings, and the Parts and Reconciler build returns.
func startReadersWith(t *testing.T, conn kube.Connection, r kube.Resource[readerSpec, readerStatus], leaseNamespace string,
	limit func(*kube.Settings), build func() (kube.Reconciler[readerSpec, readerStatus], []kube.Part),
) *controllerApp {
	t.Helper()
	return startController(t, conn, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("reader-controller", leaseNamespace, "pod-0")
		settings.Workers = 1 // what settle's proof of order rests on
		limit(&settings)
		rec, parts := build()
		return kube.NewController(s, client, settings, r, rec, parts...)
	})
}

// collectionsOf returns the collection path of each GET of the wire, a
// list or a watch, whose path matches resource's, in a namespace or all,
// once each: "/api/v1/namespaces/ns/configmaps", "/api/v1/configmaps".
func collectionsOf(w *wire, resource string) []string {
	var out []string
	for _, req := range w.all() {
		if req.method != http.MethodGet || !strings.HasSuffix(req.path, "/"+resource) {
			continue
		}
		if !slices.Contains(out, req.path) {
			out = append(out, req.path)
		}
	}
	slices.Sort(out)
	return out
}

// inNamespaces returns the collection paths of resource, under prefix
// (such as "/api/v1"), in each of namespaces, sorted.
func inNamespaces(prefix, resource string, namespaces ...string) []string {
	out := make([]string, len(namespaces))
	for i, ns := range namespaces {
		out[i] = prefix + "/namespaces/" + ns + "/" + resource
	}
	slices.Sort(out)
	return out
}

// requireNoRequestIn asserts that the wire carried no request of the
// namespace ns, of any resource.
func requireNoRequestIn(t *testing.T, w *wire, ns string) {
	t.Helper()
	for _, req := range w.all() {
		require.NotContains(t, req.path, "/namespaces/"+ns+"/", "a request of %s, outside the set: %v", ns, req)
	}
}

func TestNamespaces_a_Controller_of_a_set_reconciles_watches_and_caches_each_namespace_of_it_and_no_other(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	a, b, other := c.Namespace(t), c.Namespace(t), c.Namespace(t)
	r := installReaders(t, c, a)
	rs := map[string]readers{a: newReaders(t, c, r, a), b: newReaders(t, c, r, b), other: newReaders(t, c, r, other)}
	admin := adminClients(t, c)
	cms := configMapClient{admin.kube}
	for _, ns := range []string{a, b, other} {
		cms.put(t, ns, "cm", "in-"+ns, nil)
	}
	// Each Reader reads its namespace's ConfigMap; the one of b reads a's
	// too, so a's ConfigMap has a peer in each namespace of the set.
	rs[a].create(t, "reader-a", readerSpec{ConfigMap: "cm"})
	rs[b].create(t, "reader-b", readerSpec{ConfigMap: "cm"})
	rs[b].create(t, "reader-b-reads-a", readerSpec{ConfigMap: "cm", ConfigMapNamespace: a})
	rs[other].create(t, "reader-other", readerSpec{ConfigMap: "cm"})

	w, conn := startWire(t, c)
	var log readerLog
	secrets := corev1.SchemeGroupVersion.WithResource("secrets")
	ctl := startReadersWith(t, conn, r, a, func(s *kube.Settings) { s.Namespaces = []string{a, b} },
		func() (kube.Reconciler[readerSpec, readerStatus], []kube.Part) {
			cache := kube.NewCache(configMaps, kube.CacheOptions[corev1.ConfigMap]{})
			index := kube.NewIndex("configMap", readerKeys)
			return readerReconciler{cms: cache, index: index, log: &log},
				[]kube.Part{kube.Owns(secrets), kube.Watches(cache, kube.ByIndex(index)), kube.Indexes(index)}
		})
	rs[a].settle(t, &log, ctl, map[string]func(readerStatus) bool{"reader-a": reads("in-"+a, "reader-a", "reader-b-reads-a")})
	rs[b].settle(t, &log, ctl, map[string]func(readerStatus) bool{
		"reader-b":         reads("in-"+b, "reader-b"),
		"reader-b-reads-a": reads("in-"+a, "reader-a", "reader-b-reads-a"),
	})
	require.True(t, ctl.synced(t))

	// A change of a's ConfigMap reconciles its Readers in a and in b: the
	// Index reads both namespaces' Readers.
	cms.put(t, a, "cm", "changed-"+a, nil)
	rs[b].settle(t, &log, ctl, map[string]func(readerStatus) bool{"reader-b-reads-a": reads("changed-"+a, "reader-a", "reader-b-reads-a")})
	rs[a].settle(t, &log, ctl, map[string]func(readerStatus) bool{"reader-a": reads("changed-"+a, "reader-a", "reader-b-reads-a")})

	// A Secret that a Reader owns reconciles it when it is created, in a
	// and in b: nothing else reconciles the settled Readers.
	mark := log.mark()
	owners := map[string]string{a: "reader-a", b: "reader-b", other: "reader-other"}
	for ns, name := range owners {
		owner := rs[ns].get(t, name)
		_, err := admin.kube.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
			Name: "owned", Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: r.Group + "/" + r.Version, Kind: r.Kind, Name: owner.Name, UID: owner.UID, Controller: ptr.To(true),
			}},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, name := range []string{"reader-a", "reader-b"} {
		wait.For(t, time.Minute, func() bool { return len(log.since(mark, name)) > 0 },
			"the owned Secret's creation never reconciled "+name, ctl)
	}

	// Everything of the other namespace changes, then a marker in a and
	// one in b are created: once they settle, any reconcile those changes
	// caused would have been logged before them.
	cms.put(t, other, "cm", "changed-"+other, nil)
	_, err := admin.dynamic.Resource(r.GVR()).Namespace(other).Patch(t.Context(), "reader-other", "application/merge-patch+json",
		[]byte(`{"spec":{"configMap":"elsewhere"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, admin.kube.CoreV1().Secrets(other).Delete(t.Context(), "owned", metav1.DeleteOptions{}))
	rs[a].create(t, "marker-a", readerSpec{ConfigMap: "cm"})
	rs[b].create(t, "marker-b", readerSpec{ConfigMap: "cm"})
	rs[a].settle(t, &log, ctl, map[string]func(readerStatus) bool{"marker-a": reads("changed-"+a, "marker-a", "reader-a", "reader-b-reads-a")})
	rs[b].settle(t, &log, ctl, map[string]func(readerStatus) bool{"marker-b": reads("in-"+b, "marker-b", "reader-b")})
	require.Empty(t, log.since(0, "reader-other"), "a Reader outside the set was reconciled")
	require.Equal(t, readerStatus{}, rs[other].get(t, "reader-other").Status)

	// The App listed and watched each resource in a and in b: never in
	// the other namespace, nor in every namespace.
	readerPrefix := "/apis/" + r.Group + "/" + r.Version
	require.Equal(t, inNamespaces(readerPrefix, "readers", a, b), collectionsOf(w, "readers"))
	require.Equal(t, inNamespaces("/api/v1", "configmaps", a, b), collectionsOf(w, "configmaps"))
	require.Equal(t, inNamespaces("/api/v1", "secrets", a, b), collectionsOf(w, "secrets"))
	requireNoRequestIn(t, w, other)

	require.Equal(t, 0, ctl.Stop())
	require.Empty(t, ctl.failure())
}

func TestNamespaces_a_Cache_with_a_set_of_its_own_holds_those_namespaces_and_refuses_others_naming_the_set(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns, shared1, shared2, outside := c.Namespace(t), c.Namespace(t), c.Namespace(t), c.Namespace(t)
	r := installReaders(t, c, ns)
	rs := newReaders(t, c, r, ns)
	cms := configMapClient{adminClients(t, c).kube}
	for _, n := range []string{ns, shared1, shared2, outside} {
		cms.put(t, n, "cm", "in-"+n, nil)
	}
	rs.create(t, "reads-1", readerSpec{ConfigMap: "cm", ConfigMapNamespace: shared1})
	rs.create(t, "reads-2", readerSpec{ConfigMap: "cm", ConfigMapNamespace: shared2})
	rs.create(t, "reads-own", readerSpec{ConfigMap: "cm"})
	rs.create(t, "reads-outside", readerSpec{ConfigMap: "cm", ConfigMapNamespace: outside})

	w, conn := startWire(t, c)
	var log readerLog
	set := []string{shared1, shared2}
	a := startReadersWith(t, conn, r, ns, func(s *kube.Settings) { s.Namespace = ns },
		func() (kube.Reconciler[readerSpec, readerStatus], []kube.Part) {
			cache := kube.NewCache(configMaps, kube.CacheOptions[corev1.ConfigMap]{Namespaces: set})
			index := kube.NewIndex("configMap", readerKeys)
			return readerReconciler{cms: cache, index: index, log: &log},
				[]kube.Part{kube.Watches(cache, kube.ByIndex(index)), kube.Indexes(index)}
		})
	outsideOf := func(n string) func(readerStatus) bool {
		return func(st readerStatus) bool {
			return strings.Contains(st.Error, `namespace "`+n+`" is outside the Cache, which holds namespaces ["`+shared1+`" "`+shared2+
				`"] only, as its CacheOptions.Namespaces say: add "`+n+`" to them, or set CacheOptions.AllNamespaces in their place to watch every namespace`)
		}
	}
	rs.settle(t, &log, a, map[string]func(readerStatus) bool{
		"reads-1": reads("in-"+shared1, "reads-1"), "reads-2": reads("in-"+shared2, "reads-2"),
		// The Controller's own namespace is outside the Cache's set too.
		"reads-own": outsideOf(ns), "reads-outside": outsideOf(outside),
	})

	// A change in the set reconciles the Reader that reads it.
	cms.put(t, shared2, "cm", "changed-"+shared2, nil)
	rs.settle(t, &log, a, map[string]func(readerStatus) bool{"reads-2": reads("changed-"+shared2, "reads-2")})

	require.Equal(t, inNamespaces("/api/v1", "configmaps", shared1, shared2), collectionsOf(w, "configmaps"),
		"the ConfigMaps of the Cache's set alone")
	require.Equal(t, inNamespaces("/apis/"+r.Group+"/"+r.Version, "readers", ns), collectionsOf(w, "readers"))
	requireNoRequestIn(t, w, outside)
	require.Equal(t, 0, a.Stop())
}

func TestNamespaces_a_Secret_outside_the_Cache_s_selector_is_never_sent_nor_cached(t *testing.T) {
	t.Parallel()
	c, ns, r, rs, _ := readerTest(t)
	const selected = "e2e.loam.dev/cached"
	secretsKind := kube.Kind[corev1.Secret]{GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret", Scope: kube.Namespaced}
	secrets := adminClients(t, c).kube.CoreV1().Secrets(ns)
	create := func(name string, lbls map[string]string) {
		t.Helper()
		_, err := secrets.Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
			StringData: map[string]string{"password": name},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	create("in", map[string]string{selected: "yes"})
	create("out", nil)
	rs.create(t, "lister", readerSpec{})

	w, conn := startWire(t, c)
	var log readerLog
	a := startReadersWith(t, conn, r, ns, func(s *kube.Settings) { s.Namespace = ns },
		func() (kube.Reconciler[readerSpec, readerStatus], []kube.Part) {
			cache := kube.NewCache(secretsKind, kube.CacheOptions[corev1.Secret]{LabelSelector: selected + "=yes"})
			// The Reconciler lists the Cache's Secrets, whatever their
			// labels, and looks "out" up by name.
			read := func(m readerObject) readerStatus {
				list, err := cache.List(m.Namespace, labels.Everything())
				if err != nil {
					return readerStatus{Error: err.Error()}
				}
				var names []string
				for _, s := range list {
					names = append(names, s.Name)
				}
				slices.Sort(names)
				_, found, err := cache.Get(m.Namespace, "out")
				if err != nil {
					return readerStatus{Error: err.Error()}
				}
				return readerStatus{Found: found, Value: strings.Join(names, ",")}
			}
			// Every Secret's change reconciles the lister.
			lister := kube.MapFunc(func(s metav1.Object) []kube.Key { return []kube.Key{{Namespace: s.GetNamespace(), Name: "lister"}} })
			return readFunc{read: read, log: &log}, []kube.Part{kube.Watches(cache, lister)}
		})
	listed := func(v string) func(readerStatus) bool {
		return func(st readerStatus) bool { return !st.Found && st.Value == v && st.Error == "" }
	}
	rs.settle(t, &log, a, map[string]func(readerStatus) bool{"lister": listed("in")})

	// A Secret created outside the selector, then one inside it: the
	// second is listed, the first never.
	create("out-2", nil)
	create("in-2", map[string]string{selected: "yes"})
	rs.settle(t, &log, a, map[string]func(readerStatus) bool{"lister": listed("in,in-2")})

	// The API server was asked for the selected Secrets alone: each list
	// and watch of Secrets carried the selector.
	var asked int
	for _, req := range w.all() {
		if !strings.HasSuffix(req.path, "/secrets") {
			continue
		}
		asked++
		require.Equal(t, []string{selected + "=yes"}, req.query["labelSelector"], "%v", req)
	}
	require.GreaterOrEqual(t, asked, 2, "the served check, and the informer's list or watch")
	require.Equal(t, 0, a.Stop())
}
