package informer

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/loam-dev/loam/ports"
)

// Primary watches the resource a controller reconciles through the dynamic
// client, and is the controller's cache of its objects: a
// ports.ObjectSource. Every object it adds, changes or deletes notifies
// the object's key as a change, unless Config.Filters skip the change,
// and the resync notifies it as a resync.
type Primary struct {
	gvr       schema.GroupVersionResource
	namespace string
	informer  cache.SharedIndexInformer
	// handler notifies c.Notify of the informer's events, and logger
	// receives its records; a Watch that shares the informer registers
	// handler when it starts.
	handler cache.ResourceEventHandlerDetailedFuncs
	logger  logr.Logger
	// drawn is the Registry's whole store the Primary reads, for an
	// unsharded Watch's, whose informer is nil: set when its Watch starts.
	drawn atomic.Pointer[entry]
}

var _ ports.ObjectSource = (*Primary)(nil)

// NewPrimary returns the informer of gvr's objects, listed and watched
// through client, not yet running: Start runs it. A client from
// NewDynamicClient decodes each listed and watched object straight into
// the cache's form; any other dynamic client's objects are converted as
// they arrive. It fails only when client-go refuses its transform or
// handler, which it does only for an informer that has run.
//
// Each of indexes is kept over the cached objects, for related informers
// to look up and for the end user to read through ByIndex.
func NewPrimary(client dynamic.Interface, gvr schema.GroupVersionResource, c Config, indexes ...Index) (*Primary, error) {
	p, err := newPrimary(client, gvr, c, indexes...)
	if err != nil {
		return nil, err
	}
	logger := p.logger
	if _, err := p.informer.AddEventHandlerWithOptions(p.handler, cache.HandlerOptions{Logger: &logger}); err != nil {
		return nil, fmt.Errorf("informer of %s: %w", gvr, err)
	}
	return p, nil
}

// newPrimary returns the Primary NewPrimary does, with its handler not
// yet registered.
func newPrimary(client dynamic.Interface, gvr schema.GroupVersionResource, c Config, indexes ...Index) (*Primary, error) {
	inf, err := primaryInformer(client, gvr, c, c.Resync, indexers(indexes))
	if err != nil {
		return nil, err
	}
	p := sharedPrimary(gvr, c)
	p.informer = inf
	return p, nil
}

// sharedPrimary returns the Primary of gvr's objects in c.Namespace, with
// its handler and no informer: its Watch draws one when it starts.
func sharedPrimary(gvr schema.GroupVersionResource, c Config) *Primary {
	return &Primary{gvr: gvr, namespace: c.Namespace, handler: primaryHandler(gvr, c), logger: c.Logger}
}

// primaryInformer returns the informer of gvr's objects in c.Namespace,
// narrowed by c's selectors and shard, caching packed objects, with
// indexers, checking for resyncs every resync, not yet running and with no
// handler. It fails only when client-go refuses its transform.
func primaryInformer(client dynamic.Interface, gvr schema.GroupVersionResource, c Config, resync time.Duration, indexers cache.Indexers) (cache.SharedIndexInformer, error) {
	resource := client.Resource(gvr).Namespace(c.Namespace)
	list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return resource.List(ctx, opts)
	}
	if l, ok := client.(compactLister); ok {
		// Each item straight into the compact form, as a watch's.
		list = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			out, err := l.listCompact(ctx, gvr, c.Namespace, opts)
			if err != nil {
				return nil, err
			}
			return out, nil
		}
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			c.tweak(&opts)
			return list(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			c.tweak(&opts)
			return resource.Watch(ctx, opts)
		},
	}
	if c.shard.selector != "" {
		lw = c.shard.narrow(lw)
	}
	// No example object: a list and a watch through NewDynamicClient hand
	// the informer *cached objects, any other client
	// *unstructured.Unstructured ones, which the transform makes *cached
	// too, and so does NewDynamicClient's for an object client-go's
	// serializer reads in a way of its own, so the reflector must not hold
	// events to one type.
	// The store's own copy: indexers added to it later must not change
	// the caller's.
	own := cache.Indexers{}
	maps.Copy(own, indexers)
	inf := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), nil,
		cache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: own, ObjectDescription: gvr.String()})
	// The store's objects are packed into a slab of its own, whose
	// compactions move the records of the objects the store holds.
	s := &slab{refs: storeRefs(inf.GetIndexer().List)}
	if err := inf.SetTransform(packing(s)); err != nil {
		return nil, fmt.Errorf("informer of %s: %w", gvr, err)
	}
	return inf, nil
}

// primaryHandler returns the handler of the primary informer of gvr's
// objects: each add, change or deletion of an object c holds notifies
// its key, unless c's filters skip the change.
func primaryHandler(gvr schema.GroupVersionResource, c Config) cache.ResourceEventHandlerDetailedFuncs {
	notify := func(obj any, ev ports.Event) {
		if !c.holdsObject(obj) {
			return
		}
		if key, ok := keyOf(obj); ok {
			ev.Key = key
			c.Notify(ev)
		}
	}
	skips := newFilters(c.Filters, gvr, c.Recorder)
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) { notify(obj, ports.Event{Initial: initial}) },
		UpdateFunc: func(old, obj any) {
			resync := resynced(old, obj)
			if !resync && skips.skipCached(old, obj) {
				return
			}
			notify(obj, ports.Event{Resync: resync})
		},
		DeleteFunc: func(obj any) { notify(obj, ports.Event{}) },
	}
}

// Informer returns the client-go informer the Primary reads: its own,
// or the store its Watch drew; nil before an unsharded Watch starts.
func (p *Primary) Informer() cache.SharedIndexInformer {
	if e := p.drawn.Load(); e != nil {
		return e.informer
	}
	return p.informer
}

// indexer returns the store p reads, and false before its Watch starts.
func (p *Primary) indexer() (cache.Indexer, bool) {
	inf := p.Informer()
	if inf == nil {
		return nil, false
	}
	return inf.GetIndexer(), true
}

// Get returns the cached object key names, and false when the cache holds
// none. The Object's JSON and Status are the cache's own, shared with
// every other reader: nothing may modify them, which is why the
// controller decodes the JSON into a value of the end user's own. Its
// UID, Finalizers and Annotations are copies, read from the object's
// record: all Get allocates.
func (p *Primary) Get(key ports.Key) (ports.Object, bool, error) {
	ix, started := p.indexer()
	if !started {
		return ports.Object{}, false, nil
	}
	item, found, err := ix.GetByKey(key.String())
	if err != nil || !found {
		return ports.Object{}, false, err
	}
	c, ok := item.(*packed)
	if !ok {
		return ports.Object{}, false, fmt.Errorf("the cache of %s holds a %T, not a packed object", p.gvr, item)
	}
	// One load of the ref: a compaction may move the record meanwhile,
	// to a copy of the same bytes.
	rec := c.record()
	finalizers, annotations, err := recordLists(rec)
	if err != nil {
		return ports.Object{}, false, fmt.Errorf("the cache of %s: %s: %w", p.gvr, key, err)
	}
	return ports.Object{
		UID:         types.UID(recordText(rec, textUID)),
		Deleting:    recordDeleting(rec),
		Finalizers:  finalizers,
		Annotations: annotations,
		Status:      recordStatus(rec),
		JSON:        recordJSON(rec),
	}, true, nil
}

// Index is an index over the primary's objects, by the related objects
// each names: Keys returns the keys of those an object's JSON names. A
// panic in Keys indexes none of the object's, and is handed to Panicked
// when it is not nil, with the object's key.
type Index struct {
	Name     string
	Keys     func(doc []byte) []ports.Key
	Panicked func(key ports.Key, p *ports.Panic)
}

// indexers returns client-go's indexers of indexes: an object's values
// are the keys its index names, as strings.
func indexers(indexes []Index) cache.Indexers {
	out := cache.Indexers{}
	for _, ix := range indexes {
		out[ix.Name] = func(obj any) ([]string, error) {
			c, ok := obj.(*packed)
			if !ok {
				return nil, fmt.Errorf("index %q was handed a %T, not a packed object", ix.Name, obj)
			}
			var keys []ports.Key
			if p := protect(func() { keys = ix.Keys(c.json()) }); p != nil {
				if ix.Panicked != nil {
					ix.Panicked(ports.Key{Namespace: c.GetNamespace(), Name: c.GetName()}, p)
				}
				return nil, nil
			}
			values := make([]string, len(keys))
			for i, k := range keys {
				values[i] = k.String()
			}
			return values, nil
		}
	}
	return out
}

// indexKeys returns the keys of the cached objects whose index name holds
// key.
func (p *Primary) indexKeys(name string, key ports.Key) []ports.Key {
	ix, started := p.indexer()
	if !started {
		return nil
	}
	stored, err := ix.IndexKeys(name, key.String())
	if err != nil {
		return nil
	}
	keys := make([]ports.Key, 0, len(stored))
	for _, s := range stored {
		ns, n, err := cache.SplitMetaNamespaceKey(s)
		if err == nil {
			keys = append(keys, ports.Key{Namespace: ns, Name: n})
		}
	}
	return keys
}

// ByIndex returns the JSON of the cached objects whose index name holds
// key. The JSON is the cache's own: nothing may modify it. It fails when
// the primary keeps no index of that name.
func (p *Primary) ByIndex(name string, key ports.Key) ([][]byte, error) {
	ix, started := p.indexer()
	if !started {
		return nil, fmt.Errorf("the cache of %s has not started", p.gvr)
	}
	items, err := ix.ByIndex(name, key.String())
	if err != nil {
		return nil, fmt.Errorf("the cache of %s: %w", p.gvr, err)
	}
	out := make([][]byte, 0, len(items))
	for _, item := range items {
		c, ok := item.(*packed)
		if !ok {
			return nil, fmt.Errorf("the cache of %s holds a %T, not a packed object", p.gvr, item)
		}
		out = append(out, c.json())
	}
	return out, nil
}

// Synced reports whether the cache holds what its first list returned.
func (p *Primary) Synced() bool {
	inf := p.Informer()
	return inf != nil && inf.HasSynced()
}

// skipCached is skip for the primary's objects, which the cache holds as
// JSON: their metadata is decoded only when there is a filter to read it.
func (f filters) skipCached(old, obj any) bool {
	if len(f.list) == 0 {
		return false
	}
	o, okOld := old.(*packed)
	n, okNew := obj.(*packed)
	if !okOld || !okNew {
		return false
	}
	return f.skipJSON(ports.Key{Namespace: n.GetNamespace(), Name: n.GetName()}, o.json(), n.json())
}
