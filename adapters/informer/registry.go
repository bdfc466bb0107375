package informer

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/loam-dev/loam/domain/owners"
	"github.com/loam-dev/loam/ports"
)

// Registry is one Client's informers, shared by every Watch built on the
// Client: each informer lists and watches one resource in one form (a
// view), one namespace, with one label and one field selector, and, for a
// related resource, through one transform, and every consumer of exactly
// that draws on it with a handler of its own, so the API server serves the
// Client one list and one watch of it, and the process caches its objects
// once. A Registry is per Client, never per process: Clients differ in
// identity, and so in what they may list.
//
// The views are the forms a store's objects take. A primary informer
// caches compact objects, decoded by its own dynamic client, with the
// indexes and the resync of the Watch that reconciles them: it is the
// Watch's own, which it offers to the Owns of every Watch that read the
// same resource and selectors (an owned handler reads the owner reference
// of the cached JSON). Owned informers cache the slimmed metadata of
// metadata-only lists, with the metadata filters read or without it, and
// related informers the JSON of their objects, as the end user's
// transform left it: a cache with a transform of its own keys a store of
// its own.
//
// An informer runs from the first Start of a Watch that draws on it until
// the last one's Stop, in a goroutine the Registry owns and stops; an
// informer that stopped never runs again, so a Watch that starts after it
// stopped draws on a new one.
type Registry struct {
	mu      sync.Mutex
	entries map[registryKey]*entry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{entries: map[registryKey]*entry{}} }

// view is the form of a store's objects, and the client that lists them.
type view uint8

const (
	// viewCompact is a primary informer's: compact objects, listed through
	// the dynamic client.
	viewCompact view = iota + 1
	// viewOwned and viewOwnedMeta are an Owns': an object's key and
	// controller reference, listed through the metadata client, and its
	// metadata too for the Owns' filters.
	viewOwned
	viewOwnedMeta
	// viewRelated and viewRelatedMeta are a related cache's: the JSON of
	// each object, listed through the dynamic client, or of its metadata
	// alone, through the metadata client.
	viewRelated
	viewRelatedMeta
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

// String names the key in errors.
func (k registryKey) String() string {
	return fmt.Sprintf("%s in namespace %q, labels %q, fields %q", k.gvr, k.namespace, k.labels, k.fields)
}

// entry is one informer of the Registry and who runs it.
type entry struct {
	key      registryKey
	informer cache.SharedIndexInformer
	// users counts the Watches that started with it and haven't
	// stopped; ended is set when the last of them stopped it. Both are
	// guarded by Registry.mu.
	users  int
	ended  bool
	cancel context.CancelFunc
	done   chan struct{}
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

// offer registers inf, a primary informer of a Watch, as the informer of
// key, and returns its entry, or nil when another informer has the key.
func (s *Registry) offer(key registryKey, inf cache.SharedIndexInformer) *entry {
	key = key.canonical()
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, taken := s.entries[key]; taken && !e.ended {
		return nil
	}
	e := &entry{key: key, informer: inf}
	s.entries[key] = e
	return e
}

// find returns the entry of key, or nil when there is none.
func (s *Registry) find(key registryKey) *entry {
	key = key.canonical()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries[key]
}

// draw counts a user of the informer of key, building it with build when
// there is none, or only one that stopped, and running it when this is
// its first user. It fails only when build does.
func (s *Registry) draw(ctx context.Context, key registryKey, build func() (cache.SharedIndexInformer, error)) (*entry, error) {
	key = key.canonical()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	if e == nil || e.ended {
		inf, err := build()
		if err != nil {
			return nil, err
		}
		e = &entry{key: key, informer: inf}
		s.entries[key] = e
	}
	s.acquireLocked(ctx, e)
	return e, nil
}

// acquire counts a user of e, and runs its informer when it is the
// first, until the last user releases it; ctx carries the logger, not
// the informer's lifetime, which outlives the Watch that started it. It
// returns false, counting none, when e's informer ran and stopped.
func (s *Registry) acquire(ctx context.Context, e *entry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.ended {
		return false
	}
	s.acquireLocked(ctx, e)
	return true
}

// acquireLocked is acquire, with s.mu held and e running or not yet run.
func (s *Registry) acquireLocked(ctx context.Context, e *entry) {
	if e.users == 0 {
		run, cancel := context.WithCancel(context.WithoutCancel(ctx))
		e.cancel, e.done = cancel, make(chan struct{})
		go func(done chan struct{}) {
			defer close(done)
			e.informer.RunWithContext(run)
		}(e.done)
	}
	e.users++
}

// release counts one user of e fewer, and stops its informer, waiting
// for it, when it was the last: the Registry then forgets it, and its
// store with it.
func (s *Registry) release(e *entry) {
	s.mu.Lock()
	e.users--
	last := e.users == 0
	if last {
		e.ended = true
		if s.entries[e.key] == e {
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
	for _, e := range s.entries {
		if e.users > 0 {
			n++
		}
	}
	return n
}

// sharedOwned returns the handler of an Owns that reads a primary
// informer's objects: each add, change or deletion notifies the key of
// the object of owner's kind its controller owner reference names, as
// Owned's handler does, the reference read from the cached JSON.
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
// controls obj, a primary informer's cached object or the tombstone of
// one, from the owner references of its JSON.
func cachedOwner(owner owners.Owner, obj any) (ports.Key, types.UID, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	c, ok := obj.(*cached)
	if !ok {
		return ports.Key{}, "", false
	}
	m, err := decodeMeta(c.json)
	if err != nil {
		return ports.Key{}, "", false
	}
	return owner.Controller(c.namespace, m.OwnerReferences)
}
