package e2e

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	loamtelemetry "github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The related-objects tests run a Controller of Readers: objects that each
// depend on a ConfigMap they don't own, named in their spec or pointing
// at them with a label. The Reconciler reads the ConfigMap from the
// Controller's Cache and writes what it read into the status, so a stale
// or wrong read shows on the API server. Each test's Reader is in an API
// group of its own, named after its namespace, and its Controller is
// limited to that namespace, as the controller tests' Memcacheds are.

type (
	// readerSpec names the ConfigMap a Reader reads, in its own namespace
	// unless ConfigMapNamespace says otherwise. A Reader that names none
	// reads the ConfigMaps labelled forLabel with its name.
	readerSpec struct {
		ConfigMap          string `json:"configMap,omitempty"`
		ConfigMapNamespace string `json:"configMapNamespace,omitempty"`
	}
	// readerStatus is what the Reconciler read: whether it found the
	// ConfigMap, its data's "value", the Readers that name the same
	// ConfigMap (read through the Index, when the Controller keeps one),
	// and the error of a read that failed. Found is always written: a
	// status applied with no field at all, after one with some, is
	// stored as null, which the CRD's schema refuses.
	readerStatus struct {
		Found bool     `json:"found"`
		Value string   `json:"value,omitempty"`
		Peers []string `json:"peers,omitempty"`
		Error string   `json:"error,omitempty"`
	}
	readerObject = kube.Object[readerSpec, readerStatus]
)

// forLabel is the label of a ConfigMap that names the Reader it is for.
const forLabel = "related.e2e.loam.dev/for"

// readerSpan is the name of a Reader's reconcile span.
const readerSpan = "reconcile Reader"

// relatedGroup is the API group of a test's Readers.
func relatedGroup(ns string) string { return ns + ".related.e2e.loam.dev" }

// readerResource is the Reader resource in group.
func readerResource(group string) kube.Resource[readerSpec, readerStatus] {
	return kube.Resource[readerSpec, readerStatus]{Group: group, Version: "v1", Kind: "Reader", Plural: "readers", Scope: kube.Namespaced}
}

// installReaders installs the test's Reader CRD and returns the resource.
func installReaders(t *testing.T, c *kubetest.Cluster, ns string) kube.Resource[readerSpec, readerStatus] {
	t.Helper()
	r := readerResource(relatedGroup(ns))
	crd, err := r.CRD()
	require.NoError(t, err)
	require.NoError(t, c.InstallCRDs(t.Context(), crd))
	return r
}

// configMaps is the Kind of the related objects.
var configMaps = kube.Kind[corev1.ConfigMap]{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Scope: kube.Namespaced}

// readerKeys is the index of the ConfigMap each Reader names.
func readerKeys(m readerObject) []kube.Key {
	if m.Spec.ConfigMap == "" {
		return nil
	}
	return []kube.Key{{Namespace: cmp.Or(m.Spec.ConfigMapNamespace, m.Namespace), Name: m.Spec.ConfigMap}}
}

// byLabel is a MapFunc's function: the Reader a ConfigMap's forLabel
// names.
func byLabel(cm metav1.Object) []kube.Key {
	if name := cm.GetLabels()[forLabel]; name != "" {
		return []kube.Key{{Namespace: cm.GetNamespace(), Name: name}}
	}
	return nil
}

// readerReconciler reads each Reader's ConfigMap from cms, and its peers
// from index when not nil, writes what it read into the status, and logs
// each reconcile.
type readerReconciler struct {
	cms   *kube.Cache[corev1.ConfigMap]
	index *kube.Index[readerObject]
	log   *readerLog
}

func (r readerReconciler) Reconcile(_ context.Context, m readerObject) (kube.Result[readerStatus], error) {
	at := time.Now()
	st := r.read(m)
	r.log.add(readerEntry{
		at: at, name: m.Name, resourceVersion: m.ResourceVersion, status: st,
		unchanged: reflect.DeepEqual(st, m.Status),
	})
	// A failed read is in the status, not an error: a retry with backoff
	// would reconcile again for no cause the test made.
	return kube.Result[readerStatus]{Status: &st}, nil
}

// read returns what the Reader's status says of its ConfigMap.
func (r readerReconciler) read(m readerObject) readerStatus {
	var st readerStatus
	if m.Spec.ConfigMap == "" {
		list, err := r.cms.List(m.Namespace, labels.SelectorFromSet(labels.Set{forLabel: m.Name}))
		if err != nil {
			st.Error = err.Error()
			return st
		}
		var values []string
		for _, cm := range list {
			values = append(values, cm.Data["value"])
		}
		slices.Sort(values)
		st.Found, st.Value = len(list) > 0, strings.Join(values, ",")
		return st
	}
	key := readerKeys(m)[0]
	cm, found, err := r.cms.Get(key.Namespace, key.Name)
	if err != nil {
		st.Error = err.Error()
		return st
	}
	st.Found, st.Value = found, cm.Data["value"]
	if r.index != nil {
		peers, err := r.index.List(key)
		if err != nil {
			st.Error = err.Error()
			return st
		}
		for _, p := range peers {
			st.Peers = append(st.Peers, p.Name)
		}
		slices.Sort(st.Peers)
	}
	return st
}

// records is a list that goroutines append to and a test reads, in the
// order they were added.
type records[T any] struct {
	mu    sync.Mutex
	items []T
}

func (r *records[T]) add(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, v)
}

// from returns every record from mark on, which len gave: 0 for all.
func (r *records[T]) from(mark int) []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.items[mark:])
}

// len returns how many records there are, a mark for from.
func (r *records[T]) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.items)
}

// readerLog records the Reconciler's reconciles.
type readerLog struct{ records[readerEntry] }

// readerEntry is one reconcile: when it began, the Reader and the
// resourceVersion it was handed, the status it returned, and whether that
// was the status the Reader had already, so the reconcile wrote nothing
// new.
type readerEntry struct {
	at              time.Time
	name            string
	resourceVersion string
	status          readerStatus
	unchanged       bool
}

// mark returns a mark of the log's end, for since.
func (l *readerLog) mark() int { return l.len() }

// since returns the reconciles of name after mark, in order; "" returns
// every Reader's.
func (l *readerLog) since(mark int, name string) []readerEntry {
	var out []readerEntry
	for _, e := range l.from(mark) {
		if name == "" || e.name == name {
			out = append(out, e)
		}
	}
	return out
}

// last returns the last reconcile of name, and false when there was none.
func (l *readerLog) last(name string) (readerEntry, bool) {
	all := l.since(0, name)
	if len(all) == 0 {
		return readerEntry{}, false
	}
	return all[len(all)-1], true
}

// readerTest starts what most related-objects tests start from: the
// shared cluster, a namespace of the test's own with the Reader CRD
// installed, its Readers, and the admin's ConfigMaps.
func readerTest(t *testing.T) (*kubetest.Cluster, string, kube.Resource[readerSpec, readerStatus], readers, configMapClient) {
	t.Helper()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installReaders(t, c, ns)
	return c, ns, r, newReaders(t, c, r, ns), configMapClient{adminClients(t, c).kube}
}

// readers reaches a test's Readers in its namespace.
type readers struct {
	r       kube.Resource[readerSpec, readerStatus]
	objects dynamic.ResourceInterface
	ns      string
}

func newReaders(t *testing.T, c *kubetest.Cluster, r kube.Resource[readerSpec, readerStatus], ns string) readers {
	t.Helper()
	return readers{r: r, objects: adminClients(t, c).dynamic.Resource(r.GVR()).Namespace(ns), ns: ns}
}

// create creates the Reader name of spec.
func (rs readers) create(t *testing.T, name string, spec readerSpec) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rs.r.Group + "/" + rs.r.Version,
		"kind":       rs.r.Kind,
		"metadata":   map[string]any{"name": name},
	}}
	s, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&spec)
	require.NoError(t, err)
	u.Object["spec"] = s
	_, err = rs.objects.Create(t.Context(), u, metav1.CreateOptions{})
	require.NoError(t, err)
}

// get returns the Reader name as the API server has it.
func (rs readers) get(t *testing.T, name string) readerObject {
	t.Helper()
	u, err := rs.objects.Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	var m readerObject
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &m))
	return m
}

// settle waits until each Reader of want has a status that want's
// function accepts and the App is done with it: its last reconcile was
// handed the Reader as the API server has it now and returned the status
// it had already, so it wrote nothing that reconciles it again. With one
// worker, the work queue hands the keys changes queue out in the order
// they came (the initial list's, the retries' and the resync's wait
// behind them), so every key a change queued before the last cause of a
// settled Reader's reconcile has been reconciled too.
func (rs readers) settle(t *testing.T, log *readerLog, a wait.Watched, want map[string]func(readerStatus) bool) {
	t.Helper()
	var seen string
	wait.For(t, time.Minute, func() bool {
		for name, ok := range want {
			m := rs.get(t, name)
			e, reconciled := log.last(name)
			seen = fmt.Sprintf("%s: status %+v at resourceVersion %s; last reconcile %+v", name, m.Status, m.ResourceVersion, e)
			if !ok(m.Status) || !reconciled || e.resourceVersion != m.ResourceVersion || !e.unchanged {
				return false
			}
		}
		return true
	}, "the Readers never settled", a, wait.LastSeen(func() string { return seen }))
}

// value accepts a status that found the ConfigMap with value.
func value(v string) func(readerStatus) bool {
	return func(st readerStatus) bool { return st.Found && st.Value == v && st.Error == "" }
}

// startReaders starts an App of one Controller of r's Readers in ns, on
// conn, with one worker: its Reconciler reads a ConfigMaps Cache made
// with opts, watched with the Mapping mapping returns, and, when
// indexed, reads and keeps an Index of readerKeys.
func startReaders(t *testing.T, conn kube.Connection, r kube.Resource[readerSpec, readerStatus], ns string, log *readerLog,
	opts kube.CacheOptions[corev1.ConfigMap], indexed bool, mapping func(*kube.Index[readerObject]) kube.Mapping,
) *controllerApp {
	t.Helper()
	return startController(t, conn, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		cms := kube.NewCache(configMaps, opts)
		rec := readerReconciler{cms: cms, log: log}
		var parts []kube.Part
		var index *kube.Index[readerObject]
		if indexed {
			index = kube.NewIndex("configMap", readerKeys)
			rec.index = index
			parts = append(parts, kube.Indexes(index))
		}
		parts = append(parts, kube.Watches(cms, mapping(index)))
		settings := settingsFor("reader-controller", ns, "pod-0")
		settings.Namespace = ns
		settings.Workers = 1 // what settle's proof of order rests on
		return kube.NewController(s, client, settings, r, rec, parts...)
	})
}

// byIndex is the Mapping of the Controller's Index.
func byIndex(idx *kube.Index[readerObject]) kube.Mapping { return kube.ByIndex(idx) }

// configMapClient is how a test writes its ConfigMaps, as the admin.
type configMapClient struct {
	k kubernetes.Interface
}

// put creates or replaces the ConfigMap ns/name with data's "value" and
// labels.
func (c configMapClient) put(t *testing.T, ns, name, v string, lbls map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbls},
		Data:       map[string]string{"value": v},
	}
	cms := c.k.CoreV1().ConfigMaps(ns)
	got, err := cms.Get(t.Context(), name, metav1.GetOptions{})
	if err == nil {
		cm.ResourceVersion = got.ResourceVersion
		_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	} else {
		_, err = cms.Create(t.Context(), cm, metav1.CreateOptions{})
	}
	require.NoError(t, err)
}

// configMapPath matches the paths of ConfigMaps: the collection, in a
// namespace or all, and one ConfigMap.
var configMapPath = regexp.MustCompile(`^/api/v1/(namespaces/[^/]+/)?configmaps(/.*)?$`)

// configMapRequests returns the requests of ConfigMaps the wire passed
// on, in the order they came.
func configMapRequests(w *wire) []wireRequest {
	var cms []wireRequest
	for _, r := range w.all() {
		if configMapPath.MatchString(r.path) {
			cms = append(cms, r)
		}
	}
	return cms
}

// requireOnlyInformerRequests asserts that the only requests of ConfigMaps
// the wire passed on are a Controller's served check, its informer's list
// and its watch, all GETs of ns's collection: whatever else of the App's
// read a ConfigMap read it from the Cache, or sent nothing.
func requireOnlyInformerRequests(t *testing.T, w *wire, ns string) {
	t.Helper()
	collection := "/api/v1/namespaces/" + ns + "/configmaps"
	var lists, checks, watches int
	requests := configMapRequests(w)
	for _, req := range requests {
		require.Equal(t, http.MethodGet, req.method, "%v", req)
		require.Equal(t, collection, req.path, "%v", req)
		switch {
		case req.isWatch():
			watches++
		case slices.Equal(req.query["limit"], []string{"1"}):
			checks++
		default:
			lists++
		}
	}
	require.Equal(t, 1, checks, "the served check: %v", requests)
	require.LessOrEqual(t, lists, 1, "at most the informer's list (none when it lists with a watch): %v", requests)
	require.GreaterOrEqual(t, watches, 1, "the informer watches: %v", requests)
}

// spansOf returns the attribute loam.kube.controller.related.changes of
// each ended reconcile span of the Reader name, in the order they ended,
// nil for a span without it.
func spansOf(a *controllerApp, name string) [][]string {
	var out [][]string
	for _, s := range a.Telemetry().SpansNamed(readerSpan) {
		var object string
		var changes []string
		for _, kv := range s.Attributes {
			switch kv.Key {
			case loamtelemetry.ObjectNameKey:
				object = kv.Value.AsString()
			case loamtelemetry.RelatedChangesKey:
				changes = kv.Value.AsStringSlice()
			}
		}
		if object == name {
			out = append(out, changes)
		}
	}
	return out
}

// causedBy counts the reconcile spans of the Reader name whose related
// changes hold change, such as "configmaps ns/flags".
func causedBy(a *controllerApp, name, change string) int {
	n := 0
	for _, changes := range spansOf(a, name) {
		if slices.Contains(changes, change) {
			n++
		}
	}
	return n
}
