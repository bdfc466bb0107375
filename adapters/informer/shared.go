package informer

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/loam-dev/loam/domain/owners"
	"github.com/loam-dev/loam/ports"
)

// Shared is the registry of one Client's shareable informers: each
// Watch built with it offers the informers of its reconciled resource,
// and an Owns of another Watch that lists and watches exactly what one of
// them does (the same resource, namespace, label and field selector)
// reads that informer's cache and events in place of a metadata informer
// of its own, so the API server serves the App one list and one watch of
// the resource, and the App caches its objects once. Anything short of an
// exact match keeps informers of its own: two Owns of one resource, and
// the informers of related resources, are not shared.
//
// The shared informer runs from the first Start of a Watch that uses it
// until the last one's Stop, in a goroutine Shared owns; an informer
// that stopped never runs again, so an Owns that starts after it stopped
// runs its own.
type Shared struct {
	mu      sync.Mutex
	entries map[sharedKey]*sharedEntry
}

// NewShared returns an empty registry.
func NewShared() *Shared { return &Shared{entries: map[sharedKey]*sharedEntry{}} }

// sharedKey is what an informer lists and watches.
type sharedKey struct {
	gvr                       schema.GroupVersionResource
	namespace, labels, fields string
}

// sharedEntry is one offered informer and who runs it.
type sharedEntry struct {
	informer cache.SharedIndexInformer
	// users counts the Watches that started with it and haven't
	// stopped; ended is set when the last of them stopped it. Both are
	// guarded by Shared.mu.
	users  int
	ended  bool
	cancel context.CancelFunc
	done   chan struct{}
}

// offer registers inf, a primary informer of a Watch, as the informer of
// key, and returns its entry, or nil when another informer has the key.
func (s *Shared) offer(key sharedKey, inf cache.SharedIndexInformer) *sharedEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.entries[key]; taken {
		return nil
	}
	e := &sharedEntry{informer: inf}
	s.entries[key] = e
	return e
}

// find returns the entry of key, or nil when no Watch offered one.
func (s *Shared) find(key sharedKey) *sharedEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries[key]
}

// acquire counts a user of e, and runs its informer when it is the
// first, until the last user releases it; ctx carries the logger, not
// the informer's lifetime, which outlives the Watch that started it. It
// returns false, counting none, when e's informer ran and stopped.
func (s *Shared) acquire(ctx context.Context, e *sharedEntry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.ended {
		return false
	}
	if e.users == 0 {
		run, cancel := context.WithCancel(context.WithoutCancel(ctx))
		e.cancel, e.done = cancel, make(chan struct{})
		go func(done chan struct{}) {
			defer close(done)
			e.informer.RunWithContext(run)
		}(e.done)
	}
	e.users++
	return true
}

// release counts one user of e fewer, and stops its informer, waiting
// for it, when it was the last.
func (s *Shared) release(e *sharedEntry) {
	s.mu.Lock()
	e.users--
	last := e.users == 0
	if last {
		e.ended = true
	}
	cancel, done := e.cancel, e.done
	s.mu.Unlock()
	if last {
		cancel()
		<-done
	}
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
