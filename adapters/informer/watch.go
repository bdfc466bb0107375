package informer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

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

// Check lists the reconciled resource and each owned one once, with a
// limit of 1 and the selectors the informers will list with, so one the
// API server doesn't serve, such as a CRD that isn't installed, or a field
// selector it doesn't support for the resource, fails at once with an
// error that names it. A sharded Watch lists one Lease of ShardsNamespace
// too, with a shard selector, to find out whether the API server serves
// sharded watches, and each held shard can have informers of its own.
func (w *Watch) Check(ctx context.Context) error {
	opts := metav1.ListOptions{Limit: 1, LabelSelector: w.c.LabelSelector, FieldSelector: w.c.FieldSelector}
	for _, ns := range watched(w.c.Namespaces) {
		if _, err := w.c.Dynamic.Resource(w.c.Resource).Namespace(ns).List(ctx, opts); err != nil {
			return listError(w.c.Resource, w.c.Namespaces, ns, err)
		}
	}
	if w.shards != nil {
		if err := w.probe(ctx); err != nil {
			return err
		}
	}
	for _, oc := range w.c.Owns {
		opts := metav1.ListOptions{Limit: 1, LabelSelector: oc.LabelSelector, FieldSelector: oc.FieldSelector}
		for _, ns := range watched(w.c.Namespaces) {
			if _, err := w.c.Metadata.Resource(oc.Resource).Namespace(ns).List(ctx, opts); err != nil {
				return listError(oc.Resource, w.c.Namespaces, ns, err)
			}
		}
	}
	src := relatedSource{dynamic: w.c.Dynamic, metadata: w.c.Metadata}
	for _, r := range w.related {
		if err := r.check(ctx, src); err != nil {
			return err
		}
	}
	return nil
}

// Start runs every informer until ctx is done or Stop is called, telling
// notify of each event: when ctx is done, the Watch stops as Stop stops
// it. client-go's reflectors log through the Registry's logger, those of
// a sharded Watch's own primaries through the Watch's Logger; every
// handler of the Watch logs through its Logger.
//
// Each store is drawn from the Registry, which runs it from the first
// Start of a Watch that draws on it; the handlers of this Watch are
// registered on it now, and a running one hands them its cache first, as
// adds of its initial list.
func (w *Watch) Start(ctx context.Context, notify func(ports.Event)) {
	w.life.Lock()
	defer w.life.Unlock()
	logger := w.c.Logger
	w.mu.Lock()
	w.notify = notify
	stopped := w.stopped
	w.mu.Unlock()
	if stopped {
		// Stopped before it started: it runs nothing.
		w.running = Start(ctx)
		return
	}
	var own []cache.SharedIndexInformer
	if w.shards != nil {
		w.shards.mu.Lock()
		w.shards.ctx = klog.NewContext(ctx, logger)
		w.shards.mu.Unlock()
		// Each shard held has informers of its own, which Hold starts,
		// when the API server serves sharded watches.
		if !w.shards.isSplit() {
			own = w.startOwnPrimaries(logger)
		}
	} else {
		w.startSharedPrimaries(logger)
	}
	never := time.Duration(0)
	opts := cache.HandlerOptions{Logger: &logger, ResyncPeriod: &never}
	for _, o := range w.owned {
		w.startOwned(o, opts)
	}
	for _, r := range w.related {
		for _, rel := range r.each {
			w.startRelated(rel, opts)
		}
	}
	w.running = Start(klog.NewContext(ctx, logger), own...)
	w.unwatch = context.AfterFunc(ctx, w.Stop)
}

// startOwnPrimaries registers the handler of each of a sharded Watch's
// primaries on its own informer, and returns the informers to run.
func (w *Watch) startOwnPrimaries(logger logr.Logger) []cache.SharedIndexInformer {
	var own []cache.SharedIndexInformer
	for _, p := range w.primary.each {
		own = append(own, p.informer)
		w.register(p.informer, p.handler, cache.HandlerOptions{Logger: &logger})
	}
	return own
}

// startSharedPrimaries draws the whole store of each primary, with the
// Watch's indexes, and registers the primary's handler on it, which
// resyncs at the Watch's own period.
func (w *Watch) startSharedPrimaries(logger logr.Logger) {
	resync := w.c.Resync
	opts := cache.HandlerOptions{Logger: &logger, ResyncPeriod: &resync}
	for i, p := range w.primary.each {
		cfg := w.config
		cfg.Namespace = p.namespace
		e, err := w.registry.draw(w.claims[i], func(f form) (cache.SharedIndexInformer, error) {
			return primaryInformer(w.c.Dynamic, w.c.Resource, cfg, f.resync, f.indexes)
		}, nil)
		if err != nil {
			w.c.Logger.Error(err, "drawing the informer of the reconciled resource", "resource", w.c.Resource.String())
			continue
		}
		w.acquired = append(w.acquired, e)
		p.drawn.Store(e)
		w.register(e.informer, p.handler, opts)
	}
}

// startOwned registers o's handler on the whole store of o's resource
// and selectors, when a primary or a Cache of another Watch, or of this
// one, claimed it, and else on the metadata store of o's key.
func (w *Watch) startOwned(o ownedWatch, opts cache.HandlerOptions) {
	c, handler := o.meta, cache.ResourceEventHandler(ownedHandler(o.resource, w.c.Owner, o.config))
	if w.registry.claimed(o.whole.key) {
		c, handler = o.whole, sharedOwned(o.resource, w.c.Owner, o.config)
	}
	e, err := w.registry.draw(c, w.standard(c.key, o.config), nil)
	if err != nil {
		w.c.Logger.Error(err, "drawing an owned informer", "resource", o.resource.String())
		return
	}
	w.acquired = append(w.acquired, e)
	w.register(e.informer, handler, opts)
}

// startRelated draws rel's informer and registers rel's handler on it.
func (w *Watch) startRelated(rel *Related, opts cache.HandlerOptions) {
	build := rel.newInformer
	if rel.c.Reshape == nil {
		build = w.standard(rel.claim.key, rel.src.config)
	}
	namespaces := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	e, err := w.registry.draw(rel.claim, build, namespaces)
	if err != nil {
		w.c.Logger.Error(err, "drawing a related informer", "resource", rel.c.Resource.String())
		return
	}
	w.acquired = append(w.acquired, e)
	rel.drawn.Store(e)
	w.register(e.informer, rel.handler(), opts)
}

// standard returns the builder of the shared store of key, a whole or a
// metadata one, in cfg's namespace.
func (w *Watch) standard(key registryKey, cfg Config) func(form) (cache.SharedIndexInformer, error) {
	cfg.LabelSelector, cfg.FieldSelector = key.labels, key.fields
	cfg.Namespace = key.namespace
	if key.view == viewMeta {
		return func(f form) (cache.SharedIndexInformer, error) {
			return newOwnedInformer(w.c.Metadata, key.gvr, cfg, f.meta)
		}
	}
	return func(f form) (cache.SharedIndexInformer, error) {
		return primaryInformer(w.c.Dynamic, key.gvr, cfg, f.resync, f.indexes)
	}
}

// register adds handler to inf, for Stop to remove. client-go refuses it
// only on an informer that stopped, which a Watch that counts itself its
// user never meets: the informer is then left out of WaitForSync's wait
// and the error recorded through the Watch's logger.
func (w *Watch) register(inf cache.SharedIndexInformer, handler cache.ResourceEventHandler, opts cache.HandlerOptions) {
	h, err := inf.AddEventHandlerWithOptions(handler, opts)
	if err != nil {
		w.c.Logger.Error(err, "registering a handler")
		return
	}
	w.registrations = append(w.registrations, registration{informer: inf, handle: h})
}

// WaitForSync waits until every informer's cache holds what its first
// list returned, and each handler of this Watch has been handed it, and
// reports whether they did before ctx was done and the Watch stopped: a
// Stop, or the end of Start's context, ends the wait at once with false,
// since the handlers it removed are never handed the rest. It is called
// after Start, on the same goroutine.
func (w *Watch) WaitForSync(ctx context.Context) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(w.ended, cancel)()
	checkers := make([]cache.DoneChecker, 0, len(w.registrations))
	for _, r := range w.registrations {
		checkers = append(checkers, r.handle.HasSyncedChecker())
	}
	return w.running.WaitForSync(ctx) && cache.WaitFor(ctx, "", checkers...) && w.ended.Err() == nil
}

// Stop removes this Watch's handlers, stops every informer it runs, and
// every shared one it was the last user of, waits for their goroutines to
// return, and withdraws what the Watch claimed of the Registry, started
// or not; from its start, the Watch's cache holds nothing. Called while
// Start runs, it waits for Start to return and undoes what it did. A
// second Stop, or one called as Start's context ends, waits for the first
// to return and does nothing more: the shared stores are released once,
// since a second release would stop one under the other Watches that
// still draw on it.
func (w *Watch) Stop() {
	w.mu.Lock()
	again := w.stopped
	w.stopped = true
	w.mu.Unlock()
	if again {
		<-w.stopDone
		return
	}
	defer close(w.stopDone)
	w.end()
	w.primary.stopped.Store(true)
	w.life.Lock()
	defer w.life.Unlock()
	for _, c := range w.claims {
		w.registry.withdraw(c)
	}
	if w.running == nil {
		return
	}
	if w.unwatch != nil {
		w.unwatch()
	}
	for _, r := range w.registrations {
		_ = r.informer.RemoveEventHandler(r.handle)
	}
	w.shards.stopShards()
	w.running.Stop()
	for _, e := range w.acquired {
		w.registry.release(e)
	}
}

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
