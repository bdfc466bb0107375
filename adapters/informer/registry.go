package informer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loam-dev/loam/domain/owners"
	"github.com/loam-dev/loam/ports"
)

// Registry is one Client's informers, shared by every Watch built on the
// Client: each informer lists and watches one resource in one view —
// whole objects, or their metadata alone —, one namespace, with one label
// and one field selector, and, for a related resource, through one
// transform, and every consumer of exactly that draws on it with a
// handler of its own, so the API server serves the Client one list and one
// watch of it, and the process caches its objects once. A Registry is per
// Client, never per process: Clients differ in identity, and so in what
// they may list.
//
// The consumers of a whole store are the primaries of every unsharded
// Watch of the resource, each with its indexes (named apart, so two
// Watches' indexes of one name don't meet) and its resync on its own
// handler, the Owns that read the resource whole because a primary or a
// Cache does, and the related caches without a transform. The consumers
// of a metadata store are the other Owns, with their update filters or
// without, and the metadata-only related caches. A cache with a transform
// of its own keys a store of its own: client-go allows one transform per
// informer.
//
// What a store keeps — a metadata store each object's metadata or only
// its controller reference, a whole store a resync check or none, and the
// indexes of each primary — is what the consumers that claimed it and
// haven't drawn on a store yet asked for (NewWatch claims, Stop
// withdraws), decided when the store is built at the first one's Start.
// A consumer that no running store of its key serves, a Watch built after
// they started that asks for more, draws on a new store, built for it and
// for every other consumer of the key that hasn't started yet, and shared
// from then on like the first. A primary's indexes are never added to a
// store that runs: client-go can't remove an indexer, so each Watch's
// would stay on a long-lived store after its Stop, and every event would
// call it.
//
// An informer runs from the first Start of a Watch that draws on it until
// the last one's Stop, in a goroutine the Registry owns and stops, and
// logs through the Registry's logger, with the key it lists: it is no one
// Controller's. An informer that stopped never runs again, so a Watch
// that starts after it stopped draws on a new one.
type Registry struct {
	logger logr.Logger
	mu     sync.Mutex
	// entries is the running stores of each key, oldest first.
	entries map[registryKey][]*entry
	claims  map[*claim]struct{}
	// ids names the Watches apart, in their index names.
	ids int
}

// NewRegistry returns an empty registry, whose informers log client-go's
// records through logger.
func NewRegistry(logger logr.Logger) *Registry {
	return &Registry{logger: logger, entries: map[registryKey][]*entry{}, claims: map[*claim]struct{}{}}
}

// view is the form of a store's objects, and the client that lists them.
type view uint8

const (
	// viewFull is whole objects, listed through the dynamic client: in a
	// shared store compact objects, in a store with a transform related
	// objects.
	viewFull view = iota + 1
	// viewMeta is metadata, listed through the metadata client: in a
	// shared store owned objects, in a store with a transform related
	// objects.
	viewMeta
)

// registryKey is what an informer lists and watches, and how it caches
// it.
type registryKey struct {
	gvr                       schema.GroupVersionResource
	view                      view
	namespace, labels, fields string
	// transform is the identity of the end user's transform the store's
	// objects went through; nil for none.
	transform any
}

// String names the key in errors and logs.
func (k registryKey) String() string {
	v := "whole objects"
	if k.view == viewMeta {
		v = "metadata"
	}
	return fmt.Sprintf("%s (%s) in namespace %q, labels %q, fields %q", k.gvr, v, k.namespace, k.labels, k.fields)
}

// canonical returns k with its selectors as the API server reads them,
// each requirement once, sorted: "a=1,b=2" and "b=2, a=1" select the same
// objects, and so key one store. A selector that doesn't parse, which the
// Settings' and Caches' checks refuse before any Watch is built, is kept
// as written.
func (k registryKey) canonical() registryKey {
	if l, err := labels.Parse(k.labels); err == nil {
		k.labels = l.String()
	}
	if f, err := fields.ParseSelector(k.fields); err == nil {
		k.fields = f.String()
	}
	return k
}

// form is what a store keeps beyond its objects' keys.
type form struct {
	// resync is a whole store's resync check period, the shortest resync
	// of its primaries; 0 never resyncs any.
	resync time.Duration
	// meta is set when a metadata store keeps each object's metadata, for
	// an Owns' filters or a metadata-only Cache, and not its controller
	// reference alone.
	meta bool
	// indexes is a whole store's primaries' indexes, each named apart
	// with its Watch's suffix.
	indexes cache.Indexers
}

// serves reports whether a store of form f serves a consumer that claimed
// want: it keeps the metadata the consumer reads, checks for resyncs at
// least as often as the consumer resyncs, and keeps its indexes.
func (f form) serves(want form) bool {
	for name := range want.indexes {
		if _, ok := f.indexes[name]; !ok {
			return false
		}
	}
	return (!want.meta || f.meta) && (want.resync == 0 || (f.resync > 0 && f.resync <= want.resync))
}

// union returns the form that serves both f and g.
func (f form) union(g form) form {
	if g.resync > 0 && (f.resync == 0 || g.resync < f.resync) {
		f.resync = g.resync
	}
	f.meta = f.meta || g.meta
	if len(g.indexes) > 0 {
		indexes := make(cache.Indexers, len(f.indexes)+len(g.indexes))
		maps.Copy(indexes, f.indexes)
		maps.Copy(indexes, g.indexes)
		f.indexes = indexes
	}
	return f
}

// claim is what one consumer of a Watch asks of the store of its key;
// drawn, guarded by Registry.mu, is set once the consumer draws on one,
// from when new stores of the key no longer need to serve it.
type claim struct {
	key   registryKey
	want  form
	drawn bool
}

// entry is one informer of the Registry and who runs it.
type entry struct {
	key      registryKey
	form     form
	informer cache.SharedIndexInformer
	// users counts the Watches that drew on it and haven't stopped. It is
	// guarded by Registry.mu, as are the indexers added to the informer.
	users  int
	cancel context.CancelFunc
	done   chan struct{}
}

// newID returns a number no other Watch of the Registry has.
func (s *Registry) newID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return s.ids
}

// claim records what a consumer asks of the store of key, for the store
// to keep it when it is built.
func (s *Registry) claim(key registryKey, want form) *claim {
	c := &claim{key: key.canonical(), want: want}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims[c] = struct{}{}
	return c
}

// withdraw forgets c.
func (s *Registry) withdraw(c *claim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.claims, c)
}

// claimed reports whether a store of key runs, or a consumer claimed one.
func (s *Registry) claimed(key registryKey) bool {
	key = key.canonical()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.entries[key]) > 0 {
		return true
	}
	for c := range s.claims {
		if c.key == key {
			return true
		}
	}
	return false
}

// draw counts c's consumer a user of a store of c's key, and runs it
// when this is its first user. The oldest running store of the key that
// serves c is shared; when none does, build builds one, of the form c and
// every other claim of the key that hasn't drawn yet ask, shared from then
// on. shared are indexers every consumer of a store may share, such as the
// namespace index, added to the store once each, running or not. draw
// fails only when build or client-go does.
func (s *Registry) draw(c *claim, build func(form) (cache.SharedIndexInformer, error), shared cache.Indexers) (*entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var e *entry
	for _, running := range s.entries[c.key] {
		if running.form.serves(c.want) {
			e = running
			break
		}
	}
	if e == nil {
		f := c.want
		for other := range s.claims {
			if other.key == c.key && !other.drawn {
				f = f.union(other.want)
			}
		}
		inf, err := build(f)
		if err != nil {
			return nil, err
		}
		e = &entry{key: c.key, form: f, informer: inf}
	}
	if err := e.addIndexers(shared); err != nil {
		return nil, err
	}
	if e.users == 0 {
		s.run(e)
		s.entries[c.key] = append(s.entries[c.key], e)
	}
	e.users++
	c.drawn = true
	return e, nil
}

// addIndexers adds to e each of indexers it lacks, with the Registry's
// lock held, under which alone indexers are added: an indexer added to a
// running store indexes what it holds.
func (e *entry) addIndexers(indexers cache.Indexers) error {
	has := e.informer.GetIndexer().GetIndexers()
	add := cache.Indexers{}
	for name, f := range indexers {
		if _, ok := has[name]; !ok {
			add[name] = f
		}
	}
	if len(add) == 0 {
		return nil
	}
	if err := e.informer.AddIndexers(add); err != nil {
		return fmt.Errorf("the informer of %s: %w", e.key, err)
	}
	return nil
}

// run runs e's informer until its last user releases it, logging
// through the Registry's logger; s.mu is held.
func (s *Registry) run(e *entry) {
	ctx := klog.NewContext(context.Background(), s.logger.WithValues("informer", e.key.String()))
	ctx, e.cancel = context.WithCancel(ctx)
	e.done = make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		e.informer.RunWithContext(ctx)
	}(e.done)
}

// release counts one user of e fewer, and stops its informer, waiting
// for it, when it was the last: the Registry then forgets it, and its
// store with it.
func (s *Registry) release(e *entry) {
	s.mu.Lock()
	e.users--
	last := e.users == 0
	if last {
		s.entries[e.key] = slices.DeleteFunc(s.entries[e.key], func(r *entry) bool { return r == e })
		if len(s.entries[e.key]) == 0 {
			delete(s.entries, e.key)
		}
	}
	cancel, done := e.cancel, e.done
	s.mu.Unlock()
	if last {
		cancel()
		<-done
	}
}

// running returns the number of informers the Registry runs, for tests.
func (s *Registry) running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, running := range s.entries {
		n += len(running)
	}
	return n
}

// sharedOwned returns the handler of an Owns that reads a whole store's
// objects: each add, change or deletion notifies the key of the object of
// owner's kind its controller owner reference names, as Owned's handler
// does, the reference read from the cached JSON.
func sharedOwned(gvr schema.GroupVersionResource, owner owners.Owner, c Config) cache.ResourceEventHandlerDetailedFuncs {
	skips := newFilters(c.Filters, gvr, c.Recorder)
	notify := func(key ports.Key, initial, resync bool) {
		c.Notify(ports.Event{Key: key, Initial: initial, Resync: resync})
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if key, ok := c.owner(cachedOwner(owner, obj)); ok {
				notify(key, initial, false)
			}
		},
		UpdateFunc: func(old, obj any) {
			prev, hadPrev := c.owner(cachedOwner(owner, old))
			next, hasNext := c.owner(cachedOwner(owner, obj))
			resync := resynced(old, obj)
			stayed := hadPrev == hasNext && prev == next
			if stayed && !resync && skips.skipCached(old, obj) {
				return
			}
			if hadPrev && (!hasNext || prev != next) {
				notify(prev, false, resync)
			}
			if hasNext {
				notify(next, false, resync)
			}
		},
		DeleteFunc: func(obj any) {
			if key, ok := c.owner(cachedOwner(owner, obj)); ok {
				notify(key, false, false)
			}
		},
	}
}

// cachedOwner returns the key and uid of the object of owner's kind that
// controls obj, a whole store's cached object or the tombstone of one,
// from the owner references of its JSON.
func cachedOwner(owner owners.Owner, obj any) (ports.Key, types.UID, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	c, ok := obj.(*packed)
	if !ok {
		return ports.Key{}, "", false
	}
	m, err := decodeMeta(c.json())
	if err != nil {
		return ports.Key{}, "", false
	}
	return owner.Controller(c.GetNamespace(), m.OwnerReferences)
}
