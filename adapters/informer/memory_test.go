package informer_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/ports"
)

// The figures below are the heap a synced informer holds per cached
// object, against the object's JSON as the API server sends it. The
// objects come over HTTP from a server that speaks the API server's list
// and watch (the watch-list stream client-go asks for first, the plain
// list otherwise), so the informers decode them as they would in a
// cluster, and the heap measured is what that decoding leaves cached.
//
// Print them with
//
//	go test -run '^$' -bench CacheMemory ./adapters/informer/

// memcachedSpec and memcachedStatus are a Memcached's, as the kube
// facade's examples declare them.
type memcachedSpec struct {
	Size  int32  `json:"size"`
	Image string `json:"image"`
}

type memcachedStatus struct {
	ReadyReplicas int32              `json:"readyReplicas,omitempty"`
	Conditions    []metav1.Condition `json:"conditions,omitempty"`
}

type memcachedObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              memcachedSpec   `json:"spec"`
	Status            memcachedStatus `json:"status"`
}

var created = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

func uid(kind string, i int) types.UID {
	return types.UID(fmt.Sprintf("%08x-8a52-4a1e-9a4c-%012x", i, len(kind)))
}

func fields(raw string) *metav1.FieldsV1 { return metav1.NewFieldsV1(raw) }

// memcachedJSON is the i-th Memcached as the API server sends it: the
// metadata it fills in, labels and annotations, a controller's owner
// reference, a finalizer, a status with two conditions, and the
// managedFields of the three applies that made it so: the owner's apply of
// the object, the controller's apply of its finalizer and its apply of the
// status.
func memcachedJSON(i int) []byte {
	name := fmt.Sprintf("memcached-%05d", i)
	owner := uid("Shop", i)
	condition := func(typ, reason, message string) metav1.Condition {
		return metav1.Condition{
			Type: typ, Status: metav1.ConditionTrue, ObservedGeneration: 3,
			LastTransitionTime: created, Reason: reason, Message: message,
		}
	}
	conditionFields := `{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}`
	o := memcachedObject{
		TypeMeta: metav1.TypeMeta{APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "team-a", UID: uid("Memcached", i),
			ResourceVersion: fmt.Sprint(4821337 + i), Generation: 3, CreationTimestamp: created,
			Labels: map[string]string{
				"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": name,
				"app.kubernetes.io/managed-by": "shop-controller",
			},
			Annotations: map[string]string{
				"example.com/contact":     "team-a@example.com",
				"example.com/description": "Session cache of the shop's checkout service.",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "shop.example.com/v1", Kind: "Shop", Name: "shop", UID: owner,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
			Finalizers: []string{"cache.example.com/finalizer"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{
					Manager: "shop-controller", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "cache.example.com/v1alpha1",
					Time: &created, FieldsType: "FieldsV1",
					FieldsV1: fields(`{"f:metadata":{"f:annotations":{"f:example.com/contact":{},"f:example.com/description":{}},` +
						`"f:labels":{"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/managed-by":{},"f:app.kubernetes.io/name":{}},` +
						`"f:ownerReferences":{"k:{\"uid\":\"` + string(owner) + `\"}":{}}},"f:spec":{"f:image":{},"f:size":{}}}`),
				},
				{
					Manager: "memcached-operator", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "cache.example.com/v1alpha1",
					Time: &created, FieldsType: "FieldsV1",
					FieldsV1: fields(`{"f:metadata":{"f:finalizers":{"v:\"cache.example.com/finalizer\"":{}}}}`),
				},
				{
					Manager: "memcached-operator", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "cache.example.com/v1alpha1",
					Time: &created, FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: fields(`{"f:status":{"f:conditions":{"k:{\"type\":\"Available\"}":` + conditionFields +
						`,"k:{\"type\":\"Progressing\"}":` + conditionFields + `},"f:readyReplicas":{}}}`),
				},
			},
		},
		Spec: memcachedSpec{Size: 3, Image: "memcached:1.6.26-alpine3.19"},
		Status: memcachedStatus{ReadyReplicas: 3, Conditions: []metav1.Condition{
			condition("Available", "MinimumReplicasAvailable", "Deployment has minimum availability."),
			condition("Progressing", "NewReplicaSetAvailable", `ReplicaSet "`+name+`-5d8f7c9b4d" has successfully progressed.`),
		}},
	}
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return b
}

// deploymentJSON is the metadata of the Deployment the i-th Memcached
// controls, as the API server sends it to the metadata client: its
// controller's apply of the whole Deployment, and the deployment
// controller's update of its status, in its managedFields.
func deploymentJSON(i int) []byte {
	name := fmt.Sprintf("memcached-%05d", i)
	o := metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "team-a", UID: uid("Deployment", i),
			ResourceVersion: fmt.Sprint(4831337 + i), Generation: 1, CreationTimestamp: created,
			Labels:      map[string]string{"app": "memcached", "memcached": name},
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "1"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached", Name: name, UID: uid("Memcached", i),
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{
					Manager: "memcached-operator", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1",
					Time: &created, FieldsType: "FieldsV1",
					FieldsV1: fields(`{"f:metadata":{"f:labels":{"f:app":{},"f:memcached":{}},"f:ownerReferences":{"k:{\"uid\":\"` +
						string(uid("Memcached", i)) + `\"}":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":` +
						`{"f:labels":{"f:app":{},"f:memcached":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"memcached\"}":{".":{},` +
						`"f:command":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":11211,\"protocol\":\"TCP\"}":{".":{},` +
						`"f:containerPort":{},"f:name":{}}}}}}}}}`),
				},
				{
					Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1",
					Time: &created, FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: fields(`{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}},` +
						`"f:status":{"f:availableReplicas":{},"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},` +
						`"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},` +
						`"k:{\"type\":\"Progressing\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},` +
						`"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{},` +
						`"f:updatedReplicas":{}}}`),
				},
			},
		},
	}
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return b
}

// apiServer serves one resource's objects as the API server does: a
// list, and a watch that first streams every object when asked for its
// initial events, then stays open sending nothing.
type apiServer struct {
	path     string // the collection's path, /apis/group/version/resource
	listKind string
	itemKind string // the kind of the watch-list's closing bookmark
	version  string // its apiVersion
	items    [][]byte
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != s.path {
		http.NotFound(w, r)
		return
	}
	const rv = "9999999"
	q := r.URL.Query()
	w.Header().Set("Content-Type", "application/json")
	if q.Get("watch") != "true" {
		bw := bufio.NewWriter(w)
		fmt.Fprintf(bw, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":%q},"items":[`, s.listKind, s.version, rv)
		for i, item := range s.items {
			if i > 0 {
				_ = bw.WriteByte(',')
			}
			_, _ = bw.Write(item)
		}
		_, _ = bw.WriteString("]}")
		_ = bw.Flush()
		return
	}
	flusher, _ := w.(http.Flusher)
	if q.Get("sendInitialEvents") == "true" {
		bw := bufio.NewWriter(w)
		for _, item := range s.items {
			_, _ = bw.WriteString(`{"type":"ADDED","object":`)
			_, _ = bw.Write(item)
			_, _ = bw.WriteString("}\n")
		}
		fmt.Fprintf(bw, `{"type":"BOOKMARK","object":{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":%q,"annotations":{%q:"true"}}}}`+"\n",
			s.itemKind, s.version, rv, metav1.InitialEventsAnnotationKey)
		_ = bw.Flush()
	} else {
		w.WriteHeader(http.StatusOK)
	}
	if flusher != nil {
		flusher.Flush()
	}
	<-r.Context().Done()
}

// cacheVariant builds one kind of informer over the server's objects.
type cacheVariant struct {
	name string
	// owned is true for a variant of the metadata informer of
	// Deployments, and related for one of ConfigMaps.
	owned, related bool
	build          func(t testing.TB, c testClients, enqueue func()) cache.SharedIndexInformer
}

// testClients are the clients a cacheVariant may build its informer on.
type testClients struct {
	// dynamic is client-go's dynamic client, and wire the one of
	// informer.NewDynamicClient, which decodes watched objects straight
	// into the cache's form.
	dynamic, wire dynamic.Interface
	metadata      metadata.Interface
}

var (
	memoryMemcacheds  = schema.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"}
	memoryDeployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// counting is an event handler that counts the objects it is told of.
func counting(enqueue func()) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: func(any) { enqueue() }}
}

// stripOnly is the transform loam's informers had before their cache was
// compact: it drops managedFields and keeps the rest as decoded.
func stripOnly(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

var cacheVariants = []cacheVariant{
	{
		name: "primary/unstructured with managedFields",
		build: func(t testing.TB, c testClients, enqueue func()) cache.SharedIndexInformer {
			inf := dynamicinformer.NewFilteredDynamicInformer(c.dynamic, memoryMemcacheds, "", 0, cache.Indexers{}, nil).Informer()
			_, err := inf.AddEventHandler(counting(enqueue))
			require.NoError(t, err)
			return inf
		},
	},
	{
		name: "primary/unstructured without managedFields",
		build: func(t testing.TB, c testClients, enqueue func()) cache.SharedIndexInformer {
			inf := dynamicinformer.NewFilteredDynamicInformer(c.dynamic, memoryMemcacheds, "", 0, cache.Indexers{}, nil).Informer()
			require.NoError(t, inf.SetTransform(stripOnly))
			_, err := inf.AddEventHandler(counting(enqueue))
			require.NoError(t, err)
			return inf
		},
	},
	{
		name: "primary/loam, converted from client-go's objects",
		build: func(t testing.TB, c testClients, enqueue func()) cache.SharedIndexInformer {
			p, err := informer.NewPrimary(c.dynamic, memoryMemcacheds, informer.Config{Notify: func(ports.Event) { enqueue() }, Logger: logr.Discard()})
			require.NoError(t, err)
			return p.Informer()
		},
	},
	{
		name: "primary/loam",
		build: func(t testing.TB, c testClients, enqueue func()) cache.SharedIndexInformer {
			p, err := informer.NewPrimary(c.wire, memoryMemcacheds, informer.Config{Notify: func(ports.Event) { enqueue() }, Logger: logr.Discard()})
			require.NoError(t, err)
			return p.Informer()
		},
	},
	{
		name:  "owned/metadata with managedFields",
		owned: true,
		build: func(t testing.TB, c testClients, enqueue func()) cache.SharedIndexInformer {
			inf := metadatainformer.NewFilteredMetadataInformer(c.metadata, memoryDeployments, "", 0, cache.Indexers{}, nil).Informer()
			_, err := inf.AddEventHandler(counting(enqueue))
			require.NoError(t, err)
			return inf
		},
	},
	{
		name:  "owned/loam",
		owned: true,
		build: func(t testing.TB, c testClients, enqueue func()) cache.SharedIndexInformer {
			// Every Deployment is controlled by a Memcached, so each one
			// queues a key, as the handler counts.
			o, err := informer.NewOwned(c.metadata, memoryDeployments, memcached, informer.Config{Notify: func(ports.Event) { enqueue() }, Logger: logr.Discard()})
			require.NoError(t, err)
			return o.Informer()
		},
	},
	{
		name: "related/unstructured with managedFields", related: true,
		build: func(t testing.TB, c testClients, enqueue func()) cache.SharedIndexInformer {
			inf := dynamicinformer.NewFilteredDynamicInformer(c.dynamic, memoryConfigMaps, "", 0, cache.Indexers{}, nil).Informer()
			_, err := inf.AddEventHandler(counting(enqueue))
			require.NoError(t, err)
			return inf
		},
	},
	{
		name: "related/loam", related: true,
		build: func(t testing.TB, c testClients, enqueue func()) cache.SharedIndexInformer {
			return relatedConfigMaps(t, c, enqueue, false)
		},
	},
	{
		name: "related/loam, metadata only", related: true,
		build: func(t testing.TB, c testClients, enqueue func()) cache.SharedIndexInformer {
			return relatedConfigMaps(t, c, enqueue, true)
		},
	},
}

// relatedConfigMaps is a related informer of ConfigMaps through the
// client c picks, caching metadata alone when metadataOnly.
func relatedConfigMaps(t testing.TB, c testClients, enqueue func(), metadataOnly bool) cache.SharedIndexInformer {
	r, err := informer.NewRelated(c.wire, c.metadata, informer.Config{Notify: func(ports.Event) { enqueue() }, Logger: logr.Discard()},
		informer.RelatedConfig{
			Resource: memoryConfigMaps, MetadataOnly: metadataOnly,
			// Every ConfigMap is named by one Memcached, so each one
			// queues a key, as the handler counts.
			Map: func(obj metav1.Object) []ports.Key {
				return []ports.Key{{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
			},
		})
	require.NoError(t, err)
	return r.Informer()
}

var memoryConfigMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// configMapJSON is the i-th ConfigMap a Memcached names, as the API server
// sends it: a handful of memcached's flags, labels, and the managedFields
// of the kubectl apply that made it.
func configMapJSON(i int) []byte {
	name := fmt.Sprintf("memcached-%05d-flags", i)
	o := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": metav1.ObjectMeta{
			Name: name, Namespace: "team-a", UID: uid("ConfigMap", i),
			ResourceVersion: fmt.Sprint(4841337 + i), CreationTimestamp: created,
			Labels: map[string]string{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": fmt.Sprintf("memcached-%05d", i)},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","data":{"conn-limit":"1024","max-item-size":"2m","memory-limit":"512","threads":"4"},"kind":"ConfigMap"}`,
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				Time: &created, FieldsType: "FieldsV1",
				FieldsV1: fields(`{"f:data":{".":{},"f:conn-limit":{},"f:max-item-size":{},"f:memory-limit":{},"f:threads":{}},` +
					`"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},` +
					`"f:labels":{".":{},"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/name":{}}}}`),
			}},
		},
		"data": map[string]string{"conn-limit": "1024", "max-item-size": "2m", "memory-limit": "512", "threads": "4"},
	}
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return b
}

// cacheFigures is what measureCache finds, per cached object.
type cacheFigures struct {
	// heap is the heap the informer holds per object.
	heap float64
	// wire is the object's JSON as the API server sends it.
	wire float64
	// stripped is that JSON without metadata.managedFields.
	stripped float64
}

// heapInUse returns the bytes of live heap objects after a full
// collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// measureCache fills v's informer with n objects, and returns the heap
// its cache holds per object: the live heap with the synced informer,
// less the live heap once it is stopped and dropped. The server, its
// encoded objects and the clients live through both measurements, so
// the difference is the informer's own.
func measureCache(t testing.TB, v cacheVariant, n int) cacheFigures {
	t.Helper()
	s := &apiServer{
		path: "/apis/cache.example.com/v1alpha1/memcacheds", listKind: "MemcachedList",
		itemKind: "Memcached", version: "cache.example.com/v1alpha1", items: make([][]byte, n),
	}
	encode := memcachedJSON
	switch {
	case v.owned:
		s.path, s.listKind, s.itemKind, s.version = "/apis/apps/v1/deployments", "PartialObjectMetadataList", "PartialObjectMetadata", "meta.k8s.io/v1"
		encode = deploymentJSON
	case v.related:
		s.path, s.listKind, s.itemKind, s.version = "/api/v1/configmaps", "ConfigMapList", "ConfigMap", "v1"
		encode = configMapJSON
	}
	var figures cacheFigures
	for i := range n {
		s.items[i] = encode(i)
		figures.wire += float64(len(s.items[i]))
		figures.stripped += float64(len(withoutManagedFields(t, s.items[i])))
	}
	figures.wire /= float64(n)
	figures.stripped /= float64(n)

	srv := httptest.NewServer(s)
	defer srv.Close()
	config := &rest.Config{Host: srv.URL}
	dyn, err := dynamic.NewForConfigAndClient(config, srv.Client())
	require.NoError(t, err)
	meta, err := metadata.NewForConfigAndClient(config, srv.Client())
	require.NoError(t, err)
	wire, err := informer.NewDynamicClient(config)
	require.NoError(t, err)

	var added atomic.Int64
	inf := v.build(t, testClients{dynamic: dyn, wire: wire, metadata: meta}, func() { added.Add(1) })
	r := informer.Start(t.Context(), inf)
	require.True(t, r.WaitForSync(t.Context()))
	require.Eventually(t, func() bool { return added.Load() == int64(n) }, time.Minute, time.Millisecond,
		"every object reaches the handler")
	require.Len(t, inf.GetIndexer().ListKeys(), n)

	held := heapInUse()
	runtime.KeepAlive(inf)
	// Stopped, and no longer referenced, so the collection frees the cache.
	r.Stop()
	released := heapInUse()
	runtime.KeepAlive(dyn)
	runtime.KeepAlive(wire)
	runtime.KeepAlive(meta)
	figures.heap = (float64(held) - float64(released)) / float64(n)
	return figures
}

// withoutManagedFields returns doc, an object's JSON, without
// metadata.managedFields.
func withoutManagedFields(t testing.TB, doc []byte) []byte {
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc, &m))
	var md map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(m["metadata"], &md))
	delete(md, "managedFields")
	var err error
	m["metadata"], err = json.Marshal(md)
	require.NoError(t, err)
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

// BenchmarkCacheMemory reports the heap each kind of cache holds per
// object, at 1,000 and 10,000 objects: B/object, with wire-B/object the
// object's JSON as the API server sends it and stripped-B/object that JSON
// without managedFields. Each iteration lists and caches every object, so
// ns/op is the time to fill the cache.
func BenchmarkCacheMemory(b *testing.B) {
	for _, v := range cacheVariants {
		for _, n := range []int{1_000, 10_000} {
			b.Run(fmt.Sprintf("%s/%d", v.name, n), func(b *testing.B) {
				var f cacheFigures
				for b.Loop() {
					f = measureCache(b, v, n)
				}
				b.ReportMetric(f.heap, "B/object")
				b.ReportMetric(f.wire, "wire-B/object")
				b.ReportMetric(f.stripped, "stripped-B/object")
				b.ReportMetric(f.heap/f.wire, "heap/wire")
			})
		}
	}
}

// TestPrimary_caches_an_object_in_at_most_one_and_a_half_times_its_JSON
// holds the cache to the memory goal: a cached primary object takes no
// more heap than its JSON on the wire plus half.
func TestPrimary_caches_an_object_in_at_most_one_and_a_half_times_its_JSON(t *testing.T) {
	i := indexOf(t, "primary/loam")
	f := measureCache(t, cacheVariants[i], 1_000)
	t.Logf("%.0f B/object cached, %.0f B/object on the wire, %.0f B/object without managedFields: %.2f× the wire",
		f.heap, f.wire, f.stripped, f.heap/f.wire)
	require.LessOrEqual(t, f.heap, 1.5*f.wire)
}

func indexOf(t *testing.T, name string) int {
	for i, v := range cacheVariants {
		if v.name == name {
			return i
		}
	}
	t.Fatalf("no variant %q", name)
	return -1
}

// TestRelated_caches_an_object_in_at_most_one_and_a_half_times_its_JSON
// holds a related cache to the primary's memory goal: a cached ConfigMap
// takes no more heap than its JSON on the wire plus half.
func TestRelated_caches_an_object_in_at_most_one_and_a_half_times_its_JSON(t *testing.T) {
	f := measureCache(t, cacheVariants[indexOf(t, "related/loam")], 1_000)
	t.Logf("%.0f B/object cached, %.0f B/object on the wire, %.0f B/object without managedFields: %.2f× the wire",
		f.heap, f.wire, f.stripped, f.heap/f.wire)
	require.LessOrEqual(t, f.heap, 1.5*f.wire)
}
