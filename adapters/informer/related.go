package informer

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/loam-dev/loam/ports"
)

// RelatedConfig is one related resource a controller watches: objects its
// own objects depend on without controlling them, such as the ConfigMap a
// Memcached names. Its cache is read by the end user's code, and each
// change to one of its objects queues the keys of the controller's objects
// that Map or Index say depend on it.
type RelatedConfig struct {
	// Resource is the related resource.
	Resource schema.GroupVersionResource
	// MetadataOnly watches the resource through the metadata client, and
	// caches each object's metadata alone, for an end user who reads no
	// more of it.
	MetadataOnly bool
	// Namespaces limits the cache to a set of namespaces, each watched on
	// its own; nil, or empty, watches every namespace with one informer.
	Namespaces []string
	// LabelSelector and FieldSelector narrow what the API server lists
	// and watches, so the cache holds only the objects that match. The
	// caller has parsed them: a bad one fails every list.
	LabelSelector, FieldSelector string
	// Reshape, when not nil, rewrites each object's JSON before it is
	// cached: the end user's transform, which keeps only what they read.
	// A panic or an error in it caches the object as it was served, and
	// is recorded.
	Reshape func(doc []byte) ([]byte, error)
	// Map, when not nil, returns the keys of the controller's objects to
	// reconcile when obj is added, changes or is deleted. A panic in it
	// queues nothing and is recorded.
	Map func(obj metav1.Object) []ports.Key
	// Index, when not "", names an index of the primary's: each change
	// queues the controller's objects whose index values hold the related
	// object's key.
	Index string
	// Filters skip updates of the related objects that not every one
	// keeps, reading the metadata of the JSON the cache holds; see Filter.
	// None queues every update.
	Filters []Filter
}

// Related watches a related resource in one namespace, and is its
// cache: Get and List read the JSON of its objects. Its informer is drawn
// from a Registry when its Watch starts, and it reads nothing before.
// Without a transform, the store is shared with every other consumer of
// the same resource, view, namespace and selectors: a whole one with the
// primaries and the Owns that read the resource whole, a metadata one
// with the Owns that read its metadata.
type Related struct {
	c   RelatedConfig
	src relatedSource
	// claim is what the Related asked of the Registry's store.
	claim *claim
	// drawn is the Registry's entry whose informer the Related reads;
	// nil before its Watch starts.
	drawn atomic.Pointer[entry]
	// static is a Snapshot's store, which the Related reads in place of
	// an informer's; nil in a watched one.
	static cache.Indexer
}

// relatedObject is an object of a related resource as its cache holds it:
// its JSON, without metadata.managedFields and as the end user's transform
// left it, and its labels, which List selects by.
type relatedObject struct {
	keyMeta
	labels map[string]string
	// json is shared with every reader: nothing modifies it once cached.
	json []byte
}

// GetLabels returns the object's labels, as the API server served them.
func (o *relatedObject) GetLabels() map[string]string { return o.labels }

// GetObjectKind returns an empty kind: nothing that reads the cache asks
// for it.
func (o *relatedObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject returns a copy of o, which shares its labels and JSON:
// nothing modifies either.
func (o *relatedObject) DeepCopyObject() runtime.Object {
	cp := *o
	return &cp
}

// relatedSource is what the related informers read through besides the
// config: the clients, the primary whose indexes a mapping may look up,
// the recorder of the end user's panics, and the informers' Config, whose
// Namespace is the one namespace an informer watches.
type relatedSource struct {
	dynamic  dynamic.Interface
	metadata metadata.Interface
	primary  *PrimaryCache
	recorder ports.Recorder
	config   Config
}

// newRelated returns the Related of c's resource in src.config's
// Namespace, with no informer yet: its Watch draws one when it starts.
func newRelated(src relatedSource, c RelatedConfig) *Related {
	return &Related{c: c, src: src}
}

// key returns what r's informer lists and watches: a Related with a
// transform of its own keys a store of its own.
func (r *Related) key() registryKey {
	k := registryKey{gvr: r.c.Resource, view: viewFull, namespace: r.src.config.Namespace, labels: r.c.LabelSelector, fields: r.c.FieldSelector}
	if r.c.MetadataOnly {
		k.view = viewMeta
	}
	if r.c.Reshape != nil {
		k.transform = r
	}
	return k
}

// newInformer returns the informer of r's key when r has a transform of
// its own, caching related objects, not yet running, with no handler. A
// transform's panics are recorded through r's recorder: a store with a
// transform has one consumer. The form is r's own.
func (r *Related) newInformer(form) (cache.SharedIndexInformer, error) {
	c, src := r.c, r.src
	tweak := func(opts *metav1.ListOptions) {
		opts.LabelSelector = c.LabelSelector
		opts.FieldSelector = c.FieldSelector
	}
	var inf cache.SharedIndexInformer
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	if c.MetadataOnly {
		inf = metadatainformer.NewFilteredMetadataInformer(src.metadata, c.Resource, src.config.Namespace, 0, indexers, tweak).Informer()
	} else {
		resource := src.dynamic.Resource(c.Resource).Namespace(src.config.Namespace)
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				tweak(&opts)
				return resource.List(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				tweak(&opts)
				return resource.Watch(ctx, opts)
			},
		}
		inf = cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, src.dynamic), nil,
			cache.SharedIndexInformerOptions{Indexers: indexers, ObjectDescription: c.Resource.String()})
	}
	if err := inf.SetTransform(r.compact(src.recorder)); err != nil {
		return nil, fmt.Errorf("informer of %s: %w", c.Resource, err)
	}
	return inf, nil
}

// handler returns r's handler of its informer's events, which queues the
// keys of the controller's objects that depend on each object.
func (r *Related) handler() cache.ResourceEventHandlerDetailedFuncs {
	skips := newFilters(r.c.Filters, r.c.Resource, r.src.recorder)
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) { r.notify(r.src, obj, nil, initial) },
		UpdateFunc: func(old, obj any) {
			// Related informers never resync, so every update is a
			// change, but for a relist's objects that didn't change,
			// which no filter sees; both states are mapped, since a change
			// may move the object from one dependant to another.
			if !resynced(old, obj) && skips.skipRelated(old, obj) {
				return
			}
			r.notify(r.src, obj, old, false)
		},
		DeleteFunc: func(obj any) { r.notify(r.src, obj, nil, false) },
	}
}

// standalone gives r an informer of its own, with its handler, which its
// caller runs: for the tests that measure a related cache alone.
func (r *Related) standalone() error {
	inf, err := r.newInformer(form{})
	if err != nil {
		return err
	}
	logger := r.src.config.Logger
	if _, err := inf.AddEventHandlerWithOptions(r.handler(), cache.HandlerOptions{Logger: &logger}); err != nil {
		return fmt.Errorf("informer of %s: %w", r.c.Resource, err)
	}
	r.drawn.Store(&entry{informer: inf})
	return nil
}

// Informer returns the client-go informer, nil before r's Watch starts.
func (r *Related) Informer() cache.SharedIndexInformer {
	if e := r.drawn.Load(); e != nil {
		return e.informer
	}
	return nil
}

// Synced reports whether the cache holds what its first list returned:
// false before r's Watch starts.
func (r *Related) Synced() bool {
	if r.static != nil {
		return true
	}
	inf := r.Informer()
	return inf != nil && inf.HasSynced()
}

// indexer returns the store r reads, and fails before r's Watch starts.
func (r *Related) indexer() (cache.Indexer, error) {
	if r.static != nil {
		return r.static, nil
	}
	inf := r.Informer()
	if inf == nil {
		return nil, fmt.Errorf("the cache of %s has not started", r.c.Resource)
	}
	return inf.GetIndexer(), nil
}

// Get returns the JSON of the cached object key names, and false when the
// cache holds none. The JSON is the cache's own: nothing may modify it.
func (r *Related) Get(key ports.Key) ([]byte, bool, error) {
	ix, err := r.indexer()
	if err != nil {
		return nil, false, err
	}
	item, found, err := ix.GetByKey(key.String())
	if err != nil || !found {
		return nil, false, err
	}
	doc, _, ok := docOf(item)
	if !ok {
		return nil, false, fmt.Errorf("the cache of %s holds a %T, not a related object", r.c.Resource, item)
	}
	return doc, true, nil
}

// docOf returns the JSON of item, an object of a related cache's store, as
// the cache reads it, and its labels when the store keeps them apart:
// a related object, an object of a whole store, or of a metadata store
// that keeps the metadata.
func docOf(item any) (doc []byte, labels map[string]string, ok bool) {
	switch o := item.(type) {
	case *relatedObject:
		return o.json, o.labels, true
	case *packed:
		doc := o.json()
		return doc, readLabels(doc), true
	case *packedOwned:
		doc := o.metaJSON()
		return doc, readLabels(doc), doc != nil
	}
	return nil, nil, false
}

// List returns the JSON of every cached object in namespace, or in every
// namespace the cache holds when namespace is "", whose labels selector
// matches; a nil selector matches every object. The JSON is the cache's
// own: nothing may modify it.
func (r *Related) List(namespace string, selector labels.Selector) ([][]byte, error) {
	ix, err := r.indexer()
	if err != nil {
		return nil, err
	}
	var items []any
	if namespace == "" {
		items = ix.List()
	} else if items, err = ix.ByIndex(cache.NamespaceIndex, namespace); err != nil {
		return nil, fmt.Errorf("the cache of %s: %w", r.c.Resource, err)
	}
	var out [][]byte
	for _, item := range items {
		doc, set, ok := docOf(item)
		if !ok {
			return nil, fmt.Errorf("the cache of %s holds a %T, not a related object", r.c.Resource, item)
		}
		if selector != nil && !selector.Empty() && !selector.Matches(labels.Set(set)) {
			continue
		}
		out = append(out, doc)
	}
	return out, nil
}

// compact is the related informer's transform: it turns what the client
// decoded into a *relatedObject, reshaped by the end user's transform. It
// is idempotent, as client-go asks.
func (r *Related) compact(rec ports.Recorder) func(obj any) (any, error) {
	return func(obj any) (any, error) {
		var o *relatedObject
		switch v := obj.(type) {
		case *relatedObject:
			return v, nil
		case *cached:
			o = &relatedObject{keyMeta: v.keyMeta, json: v.json}
			o.labels = readLabels(v.json)
		case *unstructured.Unstructured:
			c, err := compactUnstructured(v)
			if err != nil {
				return nil, err
			}
			o = &relatedObject{keyMeta: c.keyMeta, json: c.json, labels: v.GetLabels()}
		case *metav1.PartialObjectMetadata:
			v.ManagedFields = nil
			doc, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("encoding %s/%s: %w", v.Namespace, v.Name, err)
			}
			o = &relatedObject{
				keyMeta: keyMeta{namespace: v.Namespace, name: v.Name, resourceVersion: v.ResourceVersion},
				labels:  v.Labels, json: doc,
			}
		default:
			return nil, fmt.Errorf("the informer of %s was handed a %T", r.c.Resource, obj)
		}
		if r.c.Reshape != nil {
			o.json = r.reshape(rec, o)
		}
		return o, nil
	}
}

// reshape returns o's JSON as the end user's transform leaves it, or as it
// is when the transform fails or panics, which it records: an object
// cached whole is better than one missing.
func (r *Related) reshape(rec ports.Recorder, o *relatedObject) []byte {
	cause := r.cause(o)
	var doc []byte
	var err error
	p := protect(func() { doc, err = r.c.Reshape(o.json) })
	switch {
	case p != nil:
		rec.MappingPanicked(context.Background(), fmt.Sprintf("the transform of %s", r.c.Resource.GroupResource()), cause, p)
		return o.json
	case err != nil:
		rec.MappingPanicked(context.Background(), fmt.Sprintf("the transform of %s", r.c.Resource.GroupResource()), cause,
			&ports.Panic{Value: err})
		return o.json
	}
	return doc[:len(doc):len(doc)]
}

// notify queues the keys of the controller's objects that depend on obj,
// and on old, its state before an update, when not nil; initial says the
// informer's first list handed obj.
func (r *Related) notify(src relatedSource, obj, old any, initial bool) {
	key, ok := keyOf(obj)
	if !ok {
		return
	}
	cause := ports.Cause{Resource: r.c.Resource.GroupResource().String(), Key: key}
	var keys []ports.Key
	if r.c.Index != "" {
		keys = append(keys, src.primary.indexKeys(r.c.Index, key)...)
	}
	if r.c.Map != nil {
		keys = append(keys, r.mapped(src.recorder, cause, obj)...)
		if old != nil {
			keys = append(keys, r.mapped(src.recorder, cause, old)...)
		}
	}
	// A key mapped twice, from the old state and the new, is told once.
	slices.SortFunc(keys, func(a, b ports.Key) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, k := range slices.Compact(keys) {
		src.config.Notify(ports.Event{Key: k, Cause: cause, Initial: initial})
	}
}

// mapped returns the keys Map returns for obj, a cached object or the
// tombstone of one, or none when Map panics, which it records.
func (r *Related) mapped(rec ports.Recorder, cause ports.Cause, obj any) []ports.Key {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	doc, _, ok := docOf(obj)
	if !ok {
		// A tombstone without its object: nothing to map but its key,
		// which an index mapping has used already.
		return nil
	}
	meta, err := decodeMeta(doc)
	if err != nil {
		rec.MappingPanicked(context.Background(), fmt.Sprintf("the mapping of %s", r.c.Resource.GroupResource()), cause,
			&ports.Panic{Value: fmt.Errorf("decoding the metadata: %w", err)})
		return nil
	}
	var keys []ports.Key
	if p := protect(func() { keys = r.c.Map(meta) }); p != nil {
		rec.MappingPanicked(context.Background(), fmt.Sprintf("the mapping of %s", r.c.Resource.GroupResource()), cause, p)
		return nil
	}
	return keys
}

// skipRelated is skip for the related objects, whose metadata is decoded
// from the JSON the cache holds only when there is a filter to read it.
func (f filters) skipRelated(old, obj any) bool {
	if len(f.list) == 0 {
		return false
	}
	o, _, okOld := docOf(old)
	n, _, okNew := docOf(obj)
	key, okKey := keyOf(obj)
	if !okOld || !okNew || !okKey {
		return false
	}
	return f.skipJSON(key, o, n)
}

// cause names o as the cause of what its change queues.
func (r *Related) cause(o *relatedObject) ports.Cause {
	return ports.Cause{Resource: r.c.Resource.GroupResource().String(), Key: ports.Key{Namespace: o.namespace, Name: o.name}}
}

// protect calls f, and returns what it panicked with, or nil.
func protect(f func()) (p *ports.Panic) {
	defer func() {
		if v := recover(); v != nil {
			p = &ports.Panic{Value: v, Stack: debug.Stack()}
		}
	}()
	f()
	return nil
}

// readLabels returns the labels in doc's metadata, or nil when it has none
// or they don't read as labels. doc is JSON the cache accepted, so any
// error here is only a type the API server never sends.
func readLabels(doc []byte) map[string]string {
	s := scanner{data: doc}
	var out map[string]string
	_ = s.object(0, func(m member) error {
		if !m.key(doc, "metadata") || doc[m.valueStart] != '{' {
			return nil
		}
		ms := scanner{data: doc, pos: m.valueStart}
		return ms.object(1, func(l member) error {
			if l.key(doc, "labels") {
				if json.Unmarshal(doc[l.valueStart:l.valueEnd], &out) != nil {
					out = nil
				}
			}
			return nil
		})
	})
	return out
}
