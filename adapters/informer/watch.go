package informer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/loam-dev/loam/domain/owners"
	"github.com/loam-dev/loam/domain/shard"
	"github.com/loam-dev/loam/ports"
)

// WatchConfig is what NewWatch watches.
type WatchConfig struct {
	// Dynamic lists and watches the reconciled resource.
	Dynamic dynamic.Interface
	// Metadata lists and watches the owned resources.
	Metadata metadata.Interface
	// Resource is the reconciled resource, and Owner its objects' kind,
	// which owned objects name in their controller owner reference.
	Resource schema.GroupVersionResource
	Owner    owners.Owner
	// LabelSelector and FieldSelector narrow the reconciled resource's
	// list and watch, and Filters its updates; see Config.
	LabelSelector, FieldSelector string
	Filters                      []Filter
	// Owns is the owned resources.
	Owns []OwnedConfig
	// Namespaces limits the reconciled and the owned resources' informers
	// to a set of namespaces, each watched on its own: the API server
	// lists and watches one namespace or all, so a set costs an informer,
	// a list and a watch per namespace and resource. nil, or empty,
	// watches every namespace with one informer of each. Related
	// resources have sets of their own: RelatedConfig.Namespaces.
	Namespaces []string
	// Resync is the reconciled resource's resync period; 0 never resyncs.
	// Owned resources never resync: the reconciled resource's own resync
	// reconciles every owner already.
	Resync time.Duration
	// Related is the related resources, which never resync either.
	Related []RelatedConfig
	// Indexes is the indexes kept over the reconciled resource's objects.
	Indexes []Index
	// Recorder records the panics of the end user's mappings, indexes and
	// transforms, which the informers recover.
	Recorder ports.Recorder
	// Logger receives client-go's records of the informers.
	Logger logr.Logger
	// Registry, when it is not nil, is the registry of the informers of
	// the Watches built on one client: this Watch offers its reconciled
	// resource's informers to the others' Owns, each of its Owns reads
	// such an informer of another Watch, or of its own, that lists and
	// watches exactly what the Owns does, or else draws on the owned
	// informer every Owns of that resource, view, namespace and selectors
	// shares, and each related cache draws on the informer of its
	// resource, view, namespace, selectors and transform. nil gives the
	// Watch a registry of its own, shared with no other.
	Registry *Registry
	// Shards, when above zero, is a sharded controller's number of
	// shards, a power of two: the Watch notifies only the changes of the
	// objects of the shards Hold holds, and of the owned objects whose
	// owner is one, and, when the API server serves sharded watches,
	// caches only those objects (shards.go). Such a Watch offers its
	// informers to no other, since they may not hold every object.
	Shards int
	// ShardsNamespace is the namespace of a sharded controller's Leases,
	// where Check lists one Lease to find out whether the API server
	// serves sharded watches.
	ShardsNamespace string
}

// OwnedConfig is one owned resource a controller watches.
type OwnedConfig struct {
	// Resource is the owned resource.
	Resource schema.GroupVersionResource
	// LabelSelector and FieldSelector narrow its list and watch, and
	// Filters its updates; see Config.
	LabelSelector, FieldSelector string
	Filters                      []Filter
}

// Watch is a controller's informers, a ports.Watch: those of the
// reconciled resource, whose cache it reads objects from, of each owned
// resource, and of each related one; one of each per namespace of its set.
type Watch struct {
	c       WatchConfig
	primary *PrimaryCache
	// shards is a sharded Watch's shards; nil in an unsharded one.
	shards *shardState
	// config and indexes are what the primary informers are built with,
	// indexes named with the Watch's suffix.
	config  Config
	indexes []Index
	// registry is the one the Watch draws its informers from, and claims
	// what each of its consumers asked of it, one per primary, Owns and
	// related informer, in Start's order.
	registry *Registry
	claims   []*claim
	owned    []ownedWatch
	related  []*RelatedCache
	// notify is set by Start, before any informer runs or any handler is
	// registered on a shared one, and called by their handlers.
	notify  func(ports.Event)
	running *Running
	// mu guards stopped and notify: a handler removed from a shared
	// informer, which keeps running, may still be handing over one event
	// when Stop returns, and tell drops it once Stop has begun. Its
	// indexes, which stay on a shared store until the store stops, index
	// nothing from then on. stopDone is closed when the first Stop has
	// returned; ended is done when it begins, ending WaitForSync's wait.
	mu       sync.RWMutex
	stopped  bool
	stopDone chan struct{}
	ended    context.Context
	end      context.CancelFunc
	// life is held by Start throughout, and by Stop while it undoes what
	// Start did: a Stop called while Start runs, from another goroutine
	// or from Start's own context ending, undoes all of it once Start
	// returns, and a Start after a Stop runs nothing. It guards running
	// and what follows: registrations are the handlers Start registered,
	// and acquired the shared informers it counted itself a user of, for
	// Stop to undo; unwatch stops Stop from being called when Start's
	// context ends.
	life          sync.Mutex
	registrations []registration
	acquired      []*entry
	unwatch       func() bool
}

// ownedWatch is one owned resource in one namespace: the key of the
// whole store it reads when a primary or a Cache of its resource claims
// one, and else of the metadata store it draws on.
type ownedWatch struct {
	config      Config
	resource    schema.GroupVersionResource
	whole, meta *claim
}

// registration is a handler registered on an informer.
type registration struct {
	informer cache.SharedIndexInformer
	handle   cache.ResourceEventHandlerRegistration
}

var _ ports.Watch = (*Watch)(nil)

// NewWatch returns the informers c describes, not yet running, and
// claims from the Registry what each of them asks of its store. It fails
// only when client-go refuses an informer's transform or handler.
func NewWatch(c WatchConfig) (*Watch, error) {
	w := &Watch{c: c, registry: c.Registry, stopDone: make(chan struct{})}
	// ended belongs to no request: it only says the Watch has stopped.
	w.ended, w.end = context.WithCancel(context.Background())
	if w.registry == nil {
		w.registry = NewRegistry(c.Logger)
	}
	cfg := Config{Resync: c.Resync, Notify: w.tell, Logger: c.Logger, Recorder: c.Recorder}
	if c.Shards > 0 {
		w.shards = newShardState(c.Shards)
		cfg.Holds = w.shards.holds
	}
	suffix := fmt.Sprintf("#%d", w.registry.newID())
	indexes := make([]Index, len(c.Indexes))
	for i, ix := range c.Indexes {
		indexes[i] = Index{Name: ix.Name + suffix, Keys: w.indexing(ix.Keys), Panicked: panicked(c.Recorder, c.Resource, ix.Name)}
	}
	primary := cfg
	primary.LabelSelector, primary.FieldSelector, primary.Filters = c.LabelSelector, c.FieldSelector, c.Filters
	w.config, w.indexes = primary, indexes
	var err error
	// A sharded Watch's informers may not hold every object: they are its
	// own.
	if w.primary, err = newPrimaryCache(c.Dynamic, c.Resource, c.Namespaces, w.shards != nil, primary, indexes...); err != nil {
		return nil, err
	}
	w.primary.shards, w.primary.suffix = w.shards, suffix
	if w.shards == nil {
		for _, ns := range watched(c.Namespaces) {
			key := registryKey{gvr: c.Resource, view: viewFull, namespace: ns, labels: c.LabelSelector, fields: c.FieldSelector}
			w.claims = append(w.claims, w.registry.claim(key, form{resync: c.Resync, indexes: indexers(indexes)}))
		}
	}
	cfg.Resync = 0
	for _, oc := range c.Owns {
		owned := cfg
		owned.LabelSelector, owned.FieldSelector, owned.Filters = oc.LabelSelector, oc.FieldSelector, oc.Filters
		for _, ns := range watched(c.Namespaces) {
			owned.Namespace = ns
			key := registryKey{gvr: oc.Resource, view: viewFull, namespace: ns, labels: oc.LabelSelector, fields: oc.FieldSelector}
			ow := ownedWatch{config: owned, resource: oc.Resource, whole: &claim{key: key.canonical()}}
			key.view = viewMeta
			ow.meta = w.registry.claim(key, form{meta: len(oc.Filters) > 0})
			w.claims = append(w.claims, ow.meta)
			w.owned = append(w.owned, ow)
		}
	}
	src := relatedSource{dynamic: c.Dynamic, metadata: c.Metadata, primary: w.primary, recorder: c.Recorder, config: cfg}
	for _, rc := range c.Related {
		rel := newRelatedCache(src, rc)
		for _, r := range rel.each {
			r.claim = w.registry.claim(r.key(), form{meta: rc.MetadataOnly})
			w.claims = append(w.claims, r.claim)
		}
		w.related = append(w.related, rel)
	}
	return w, nil
}

// indexing returns keys, which indexes nothing once the Watch has
// stopped: its index stays on a shared store until the store stops.
func (w *Watch) indexing(keys func([]byte) []ports.Key) func([]byte) []ports.Key {
	return func(doc []byte) []ports.Key {
		w.mu.RLock()
		stopped := w.stopped
		w.mu.RUnlock()
		if stopped {
			return nil
		}
		return keys(doc)
	}
}

// panicked returns the recorder of a panic in the end user's index
// name over gvr's objects.
func panicked(rec ports.Recorder, gvr schema.GroupVersionResource, name string) func(ports.Key, *ports.Panic) {
	what := fmt.Sprintf("index %q", name)
	return func(key ports.Key, p *ports.Panic) {
		rec.MappingPanicked(context.Background(), what, ports.Cause{Resource: gvr.GroupResource().String(), Key: key}, p)
	}
}

// Primary returns the cache of the reconciled resource, whose indexes
// the end user reads.
func (w *Watch) Primary() *PrimaryCache { return w.primary }

// Related returns the caches of the related resources, in the order of
// WatchConfig.Related.
func (w *Watch) Related() []*RelatedCache { return w.related }

func (w *Watch) tell(ev ports.Event) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if !w.stopped {
		w.notify(ev)
	}
}

// Get returns the cached object key names, as Primary's Get does, from
// the informer of its namespace.
func (w *Watch) Get(key ports.Key) (ports.Object, bool, error) { return w.primary.Get(key) }

// ShardOf returns what tells the shard, of count, that the object a key
// names is in, as the Watch caches it, from the hash of its uid; false
// when the cache holds no such object.
func (w *Watch) ShardOf(count int) func(ports.Key) (int, bool) {
	return func(key ports.Key) (int, bool) {
		obj, found, err := w.Get(key)
		if err != nil || !found {
			return 0, false
		}
		return shard.Of(string(obj.UID), count), true
	}
}
