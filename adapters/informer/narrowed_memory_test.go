package informer_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/ports"
)

// The figures below are what narrowing a cache saves: the heap a synced
// Watch holds when the cluster has 10,000 objects of a resource, 500 in
// each of 20 namespaces, and the cache keeps all of them, or the 1,000
// that a label selector or a set of 2 namespaces keeps. The objects come
// over HTTP from a server that lists and watches as the API server does,
// a namespace or all, selecting by labels, so an object outside the
// selector or the set is never sent, and the figure is what the informers
// hold once synced, as measureCache measures it.
//
// Print them with
//
//	go test -run '^$' -bench NarrowedCacheMemory -benchtime=1x -count 3 ./adapters/informer/

const (
	// narrowedNamespaces is how many namespaces the cluster has, and
	// narrowedPerNamespace how many objects of the resource each holds.
	narrowedNamespaces   = 20
	narrowedPerNamespace = 500
	// partOf is the label that 1 object in 10 of each namespace carries:
	// the one a selector keeps.
	partOf = "app.kubernetes.io/part-of"
)

var memorySecrets = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// narrowedNamespace is the name of the i-th namespace of the cluster.
func narrowedNamespace(i int) string { return fmt.Sprintf("team-%02d", i) }

// secretJSON is the i-th Secret of namespace ns, as the API server sends
// it: a database's credentials, as a Postgres operator writes them for
// its applications (user, password, host, port, database, and the URIs
// and pgpass line made of them), labels, and the managedFields of the
// apply that made it. Every tenth carries the partOf label.
func secretJSON(ns string, i int) []byte {
	name := fmt.Sprintf("db-%05d-app", i)
	lbls := map[string]string{"app.kubernetes.io/name": "postgres", "app.kubernetes.io/instance": fmt.Sprintf("db-%05d", i)}
	labelFields := `"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/name":{}`
	if i%10 == 0 {
		lbls[partOf] = "databases"
		labelFields += `,"f:app.kubernetes.io/part-of":{}`
	}
	host := fmt.Sprintf("db-%05d-rw.%s.svc", i, ns)
	password := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{byte(i)}, 48))
	values := map[string]string{
		"username": "app", "password": password, "dbname": "app", "host": host, "port": "5432",
		"uri":      fmt.Sprintf("postgresql://app:%s@%s:5432/app", password, host),
		"jdbc-uri": fmt.Sprintf("jdbc:postgresql://%s:5432/app?password=%s&user=app", host, password),
		"pgpass":   fmt.Sprintf("%s:5432:app:app:%s\n", host, password),
	}
	data := map[string][]byte{}
	dataFields := make([]string, 0, len(values))
	for k, v := range values {
		data[k] = []byte(v)
		dataFields = append(dataFields, fmt.Sprintf("%q:{}", "f:"+k))
	}
	slices.Sort(dataFields)
	o := map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/basic-auth",
		"metadata": metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: uid("Secret", i),
			ResourceVersion: fmt.Sprint(4851337 + i), CreationTimestamp: created, Labels: lbls,
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "databases-operator", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
				Time: &created, FieldsType: "FieldsV1",
				FieldsV1: fields(`{"f:data":{` + strings.Join(dataFields, ",") + `},"f:metadata":{"f:labels":{` + labelFields + `}},"f:type":{}}`),
			}},
		},
		"data": data,
	}
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return b
}

// memcachedJSONIn is the i-th Memcached of namespace ns: memcachedJSON's,
// moved there, and labelled partOf when i is a multiple of 10.
func memcachedJSONIn(ns string, i int) []byte {
	doc := bytes.Replace(memcachedJSON(i), []byte(`"namespace":"team-a"`), []byte(fmt.Sprintf("%q:%q", "namespace", ns)), 1)
	if i%10 == 0 {
		doc = bytes.Replace(doc, []byte(`"labels":{`), []byte(fmt.Sprintf(`"labels":{%q:"shop",`, partOf)), 1)
	}
	return doc
}

// clusterObject is an object the cluster server serves: its JSON, and
// the namespace and labels it is listed by.
type clusterObject struct {
	namespace string
	labels    labels.Set
	json      []byte
}

// clusterServer serves objects of one resource as the API server does:
// a namespace's collection or every namespace's, selected by the request's
// labelSelector. It counts each list and watch it serves.
type clusterServer struct {
	// prefix is the resource's API path, /api/v1 or /apis/group/version,
	// and resource its name.
	prefix, resource   string
	listKind, itemKind string
	version            string
	objects            []clusterObject
	requests           atomic.Int64
}

func (s *clusterServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	namespace, ok := s.namespaceOf(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	selector, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.requests.Add(1)
	served := &apiServer{path: r.URL.Path, listKind: s.listKind, itemKind: s.itemKind, version: s.version}
	for _, o := range s.objects {
		if (namespace == "" || o.namespace == namespace) && selector.Matches(o.labels) {
			served.items = append(served.items, o.json)
		}
	}
	served.ServeHTTP(w, r)
}

// namespaceOf returns the namespace of a collection's path, "" for every
// namespace's, and false for any other path.
func (s *clusterServer) namespaceOf(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, s.prefix+"/")
	if !ok {
		return "", false
	}
	if rest == s.resource {
		return "", true
	}
	ns, res, ok := strings.Cut(strings.TrimPrefix(rest, "namespaces/"), "/")
	return ns, ok && strings.HasPrefix(rest, "namespaces/") && res == s.resource
}

// narrowing is one way to cache the cluster's objects: a Watch whose
// primary or related cache is narrowed as configure says.
type narrowing struct {
	name string
	// related says the cache measured is a related one, of Secrets; else
	// it is the primary's, of Memcacheds.
	related bool
	// namespaces and selector narrow the cache; nil and "" keep all.
	namespaces []string
	selector   string
}

// everyNamespace returns the name of each of the cluster's namespaces.
func everyNamespace() []string {
	out := make([]string, narrowedNamespaces)
	for i := range out {
		out[i] = narrowedNamespace(i)
	}
	return out
}

// kept returns how many of the cluster's objects n keeps.
func (n narrowing) kept() int {
	perNamespace := narrowedPerNamespace
	if n.selector != "" {
		perNamespace /= 10
	}
	if n.namespaces != nil {
		return len(n.namespaces) * perNamespace
	}
	return narrowedNamespaces * perNamespace
}

var narrowings = []narrowing{
	{name: "related/every namespace", related: true},
	{name: "related/label selector", related: true, selector: partOf + "=databases"},
	{name: "related/2 of 20 namespaces", related: true, namespaces: []string{narrowedNamespace(0), narrowedNamespace(1)}},
	// Every object again, through an informer per namespace: what a set's
	// informers cost beyond the objects they hold.
	{name: "related/each of 20 namespaces", related: true, namespaces: everyNamespace()},
	{name: "primary/every namespace"},
	{name: "primary/label selector", selector: partOf + "=shop"},
	{name: "primary/2 of 20 namespaces", namespaces: []string{narrowedNamespace(0), narrowedNamespace(1)}},
}

// narrowedFigures is what measureNarrowed finds.
type narrowedFigures struct {
	// kept is how many objects the cache holds, and heap the heap its
	// informers hold in all.
	kept int
	heap float64
	// wire is the JSON of the objects kept, as the API server sends it.
	wire float64
}

// measureNarrowed serves the cluster's objects of n's resource, fills a
// Watch whose cache of them n narrows, and returns the heap it holds: the
// live heap with the synced Watch, less the live heap once it is stopped
// and dropped, as measureCache measures one informer's.
func measureNarrowed(t testing.TB, n narrowing) narrowedFigures {
	t.Helper()
	secrets := &clusterServer{prefix: "/api/v1", resource: "secrets", listKind: "SecretList", itemKind: "Secret", version: "v1"}
	memcachedsServer := &clusterServer{
		prefix: "/apis/cache.example.com/v1alpha1", resource: "memcacheds",
		listKind: "MemcachedList", itemKind: "Memcached", version: "cache.example.com/v1alpha1",
	}
	measured, encode := memcachedsServer, memcachedJSONIn
	if n.related {
		measured, encode = secrets, secretJSON
	}
	selector, err := labels.Parse(n.selector)
	require.NoError(t, err)
	figures := narrowedFigures{kept: n.kept()}
	for ns := range narrowedNamespaces {
		for i := range narrowedPerNamespace {
			doc := encode(narrowedNamespace(ns), i)
			var m struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			require.NoError(t, json.Unmarshal(doc, &m))
			o := clusterObject{namespace: m.Metadata.Namespace, labels: m.Metadata.Labels, json: doc}
			measured.objects = append(measured.objects, o)
			if selector.Matches(o.labels) && (n.namespaces == nil || slices.Contains(n.namespaces, o.namespace)) {
				figures.wire += float64(len(doc))
			}
		}
	}

	mux := http.NewServeMux()
	mux.Handle("/api/v1/", secrets)
	mux.Handle("/apis/cache.example.com/v1alpha1/", memcachedsServer)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	config := &rest.Config{Host: srv.URL}
	wire, err := informer.NewDynamicClient(config)
	require.NoError(t, err)
	meta, err := metadata.NewForConfigAndClient(config, srv.Client())
	require.NoError(t, err)

	var told atomic.Int64
	c := informer.WatchConfig{Dynamic: wire, Metadata: meta, Resource: memoryMemcacheds, Owner: memcached, Logger: logr.Discard()}
	if n.related {
		c.Related = []informer.RelatedConfig{{
			Resource: memorySecrets, Namespaces: n.namespaces, LabelSelector: n.selector,
			// Each Secret is a database's, which it queues, as the
			// count of events counts.
			Map: func(obj metav1.Object) []ports.Key {
				return []ports.Key{{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
			},
		}}
	} else {
		c.Namespaces, c.LabelSelector = n.namespaces, n.selector
	}
	w, err := informer.NewWatch(c)
	require.NoError(t, err)
	w.Start(t.Context(), func(ports.Event) { told.Add(1) })
	require.True(t, w.WaitForSync(t.Context()))
	require.Eventually(t, func() bool { return told.Load() == int64(figures.kept) }, time.Minute, time.Millisecond,
		"every object kept reaches the handler")
	require.EqualValues(t, figures.kept, told.Load(), "no object outside the cache reaches it")

	held := heapInUse()
	runtime.KeepAlive(w)
	// Stopped, and no longer referenced, so the collection frees the
	// caches.
	w.Stop()
	released := heapInUse()
	runtime.KeepAlive(wire)
	runtime.KeepAlive(meta)
	figures.heap = float64(held) - float64(released)
	return figures
}

// BenchmarkNarrowedCacheMemory reports the heap a Watch's cache of
// 10,000 objects across 20 namespaces holds, whole or narrowed to 1,000 of
// them by a label selector or a set of 2 namespaces: MB in all, objects
// kept, B/object per object kept, and heap/wire its heap against the JSON
// of the objects kept. Each iteration lists and caches the objects, so
// ns/op is the time to fill the cache.
func BenchmarkNarrowedCacheMemory(b *testing.B) {
	for _, n := range narrowings {
		b.Run(n.name, func(b *testing.B) {
			var f narrowedFigures
			for b.Loop() {
				f = measureNarrowed(b, n)
			}
			b.ReportMetric(f.heap/1e6, "MB")
			b.ReportMetric(float64(f.kept), "objects")
			b.ReportMetric(f.heap/float64(f.kept), "B/object")
			b.ReportMetric(f.heap/f.wire, "heap/wire")
		})
	}
}

// TestNarrowed_caches_hold_what_they_keep_and_nothing_of_the_rest holds a
// narrowed related cache to the memory goal for the objects it keeps
// alone: of 10,000 Secrets, a cache narrowed to 1,000 by a selector or a
// namespace set holds no more heap than those 1,000 Secrets' JSON on the
// wire plus half, so the 9,000 outside it cost nothing. The benchmark
// measures the primary's too.
func TestNarrowed_caches_hold_what_they_keep_and_nothing_of_the_rest(t *testing.T) {
	for _, n := range narrowings {
		if !n.related || n.kept() == narrowedNamespaces*narrowedPerNamespace {
			continue
		}
		t.Run(n.name, func(t *testing.T) {
			f := measureNarrowed(t, n)
			t.Logf("%d objects kept of %d: %.2f MB, %.0f B/object, %.2f× their JSON on the wire",
				f.kept, narrowedNamespaces*narrowedPerNamespace, f.heap/1e6, f.heap/float64(f.kept), f.heap/f.wire)
			require.LessOrEqual(t, f.heap, 1.5*f.wire)
		})
	}
}
