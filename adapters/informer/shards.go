package informer

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/loam-dev/loam/domain/shard"
	"github.com/loam-dev/loam/ports"
)

// How a sharded controller's Watch caches the resource it reconciles.
//
// When the API server serves sharded list and watch (KEP-5866), each shard
// the replica holds has informers of its own, which list and watch that
// shard's objects alone: taking a shard lists its objects, and its initial
// list queues them in the background as a start-up's does; giving it up
// stops its informers and drops its cache. Neither touches the other
// shards' watches, so a rebalance never leaves a replica blind to the
// shards it keeps. Each also keeps only its shard's objects client-side,
// so an API server that answers some requests without the selector (one
// of several during an upgrade) changes the cost, never the cache.
//
// A server that ignores the selector, which Check finds out from whether
// its list of Leases echoes the selector in metadata.shardInfo, would send every
// shard's informers every object. The Watch then caches the whole
// resource with one informer, as an unsharded one does, notifies only the
// changes of the shards held, and queues a shard's cached objects when it
// takes the shard: every replica pays an unsharded controller's memory and
// watch, and shares the reconciles.

// shardFilter narrows a primary informer to one shard's objects.
type shardFilter struct {
	// selector is the ShardSelector of its lists and watches.
	selector string
	// keep reports whether an object of a uid is in the shard.
	keep func(uid types.UID) bool
}

// narrow returns lw with the filter's selector on its lists and watches,
// and every object outside the shard dropped from what they return.
func (f shardFilter) narrow(lw *cache.ListWatch) *cache.ListWatch {
	list, open := lw.ListWithContextFunc, lw.WatchFuncWithContext
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.ShardSelector = f.selector
			obj, err := list(ctx, opts)
			if err != nil {
				return nil, err
			}
			switch l := obj.(type) {
			case *unstructured.UnstructuredList:
				kept := l.Items[:0]
				for _, item := range l.Items {
					if f.keep(item.GetUID()) {
						kept = append(kept, item)
					}
				}
				l.Items = kept
			case *compactList:
				kept := l.Items[:0]
				for _, item := range l.Items {
					if f.keep(item.uid) {
						kept = append(kept, item)
					}
				}
				l.Items = kept
			}
			return obj, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.ShardSelector = f.selector
			w, err := open(ctx, opts)
			if err != nil {
				return nil, err
			}
			return newShardWatch(w, f), nil
		},
	}
}

// shardWatch is a watch that passes on only the events f keeps. Unlike
// apimachinery's watch.Filter, whose goroutine stays blocked on an event
// nobody reads once the reflector stops the watch, Stop ends it.
type shardWatch struct {
	in     watch.Interface
	out    chan watch.Event
	done   chan struct{}
	once   sync.Once
	filter shardFilter
}

func newShardWatch(in watch.Interface, f shardFilter) *shardWatch {
	w := &shardWatch{in: in, out: make(chan watch.Event), done: make(chan struct{}), filter: f}
	go w.loop()
	return w
}

// ResultChan returns the events kept, closed once the watch ends.
func (w *shardWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop stops the watch it filters, and its goroutine.
func (w *shardWatch) Stop() {
	w.once.Do(func() {
		close(w.done)
		w.in.Stop()
	})
}

func (w *shardWatch) loop() {
	defer close(w.out)
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.in.ResultChan():
			if !ok {
				return
			}
			if ev, keep := w.filter.event(ev); keep {
				select {
				case w.out <- ev:
				case <-w.done:
					return
				}
			}
		}
	}
}

// event keeps a watch event unless it is of an object outside the shard:
// bookmarks and errors carry no object of the resource, and pass.
func (f shardFilter) event(ev watch.Event) (watch.Event, bool) {
	if ev.Type == watch.Bookmark || ev.Type == watch.Error {
		return ev, true
	}
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return ev, true
	}
	return ev, f.keep(m.GetUID())
}

// shardState is a sharded Watch's shards: those the replica holds, and,
// when the API server serves sharded watches, each one's own cache.
type shardState struct {
	count int

	mu sync.RWMutex
	// split reports whether each held shard has informers of its own, as
	// Check found the API server allows.
	split bool
	held  map[int]*heldShard
	// holdings counts each held shard's Holds not yet Released: a shard is
	// given up at its last Release, so a Hold that runs before the
	// Release of the holding before it (a shard taken back while it
	// drains) never leaves it held but unwatched.
	holdings map[int]int
	// ctx is Start's, which the shards' informers run in, and stopped
	// whether Stop has begun, after which Hold starts nothing.
	ctx     context.Context
	stopped bool
}

// heldShard is one held shard's informers, in a split Watch: nil in one
// that caches the whole resource.
type heldShard struct {
	cache         spread[*Primary]
	running       *Running
	registrations []registration
}

func newShardState(count int) *shardState {
	return &shardState{count: count, held: map[int]*heldShard{}, holdings: map[int]int{}}
}

// holds reports whether the replica holds the shard of uid.
func (s *shardState) holds(uid types.UID) bool {
	i := shard.Of(string(uid), s.count)
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.held[i]
	return ok
}

// isSplit reports whether each held shard has informers of its own.
func (s *shardState) isSplit() bool {
	if s == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.split
}

// caches returns the held shards' caches, in a split Watch.
func (s *shardState) caches() []spread[*Primary] {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]spread[*Primary], 0, len(s.held))
	for _, h := range s.held {
		if h != nil {
			out = append(out, h.cache)
		}
	}
	return out
}

// leases is the resource the probe lists.
var leases = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// probe finds out whether the API server serves sharded lists, from a
// list of one Lease of the controller's namespace with a shard selector:
// one that does echoes the selector in the list's metadata.shardInfo. It
// lists Leases, which a sharded replica lists anyway, because in
// Kubernetes v1.36 a list of custom resources is filtered by the selector
// but never echoes it; the feature gate is the API server's, so what
// holds for Leases holds for every resource.
func (w *Watch) probe(ctx context.Context) error {
	opts := metav1.ListOptions{Limit: 1, ShardSelector: shard.Selector([]int{0}, w.shards.count)}
	l, err := w.c.Dynamic.Resource(leases).Namespace(w.c.ShardsNamespace).List(ctx, opts)
	if err != nil {
		return fmt.Errorf("listing leases in namespace %q, to find out whether the API server serves sharded lists: %w", w.c.ShardsNamespace, err)
	}
	echoed, _, _ := unstructured.NestedString(l.Object, "metadata", "shardInfo", "selector")
	split := echoed != ""
	w.shards.mu.Lock()
	w.shards.split = split
	w.shards.mu.Unlock()
	if !split {
		w.c.Logger.Info("the API server ignores shard selectors (the ShardedListAndWatch feature gate is off): every replica caches every object of the resource, and reconciles only those of the shards it holds",
			"resource", w.c.Resource.String())
	}
	return nil
}

// Hold makes the replica hold shard s of a sharded Watch, and notifies
// its objects as initial events: those its new informers list, when the
// API server serves sharded watches, or those the whole cache holds. A
// shard held already is held once more, until as many Releases, and its
// cached objects are notified again. It does nothing in an unsharded
// Watch, or once Stop has begun.
func (w *Watch) Hold(s int) {
	st := w.shards
	if st == nil {
		return
	}
	st.mu.Lock()
	if st.stopped {
		st.mu.Unlock()
		return
	}
	st.holdings[s]++
	if h, ok := st.held[s]; ok || !st.split {
		// h is nil in a Watch that caches the whole resource.
		st.held[s] = h
		st.mu.Unlock()
		w.primary.eachObject(func(key ports.Key, uid string) {
			if shard.Of(uid, st.count) == s {
				w.tell(ports.Event{Key: key, Initial: true})
			}
		})
		return
	}
	h, err := w.startShard(st.ctx, s)
	if err != nil {
		st.holdings[s]--
		st.mu.Unlock()
		w.c.Logger.Error(err, "starting the informers of a shard", "shard", s)
		return
	}
	st.held[s] = h
	st.mu.Unlock()
}

// startShard builds and runs shard s's informers, in ctx.
func (w *Watch) startShard(ctx context.Context, s int) (*heldShard, error) {
	cfg := w.config
	cfg.shard = shardFilter{
		selector: shard.Selector([]int{s}, w.shards.count),
		keep:     func(uid types.UID) bool { return shard.Of(string(uid), w.shards.count) == s },
	}
	cfg.Holds = nil
	c, err := spreadOver(w.c.Namespaces, func(ns string) (*Primary, error) {
		one := cfg
		one.Namespace = ns
		return newPrimary(w.c.Dynamic, w.c.Resource, one, w.indexes...)
	})
	if err != nil {
		return nil, fmt.Errorf("shard %d of %d: %w", s, w.shards.count, err)
	}
	h := &heldShard{cache: c}
	informers := make([]cache.SharedIndexInformer, len(c.each))
	for i, p := range c.each {
		logger := p.logger
		reg, err := p.informer.AddEventHandlerWithOptions(p.handler, cache.HandlerOptions{Logger: &logger})
		if err != nil {
			return nil, fmt.Errorf("shard %d of %d: %w", s, w.shards.count, err)
		}
		h.registrations = append(h.registrations, registration{informer: p.informer, handle: reg})
		informers[i] = p.informer
	}
	h.running = Start(ctx, informers...)
	return h, nil
}

// Release makes the replica give up shard s of a sharded Watch, at the
// last Release of its Holds: its objects' changes are no longer notified
// and, when it has informers of its own, they stop and its cache is
// dropped. It does nothing for a shard not held.
func (w *Watch) Release(s int) {
	st := w.shards
	if st == nil {
		return
	}
	st.mu.Lock()
	if st.holdings[s] > 1 {
		st.holdings[s]--
		st.mu.Unlock()
		return
	}
	delete(st.holdings, s)
	h, ok := st.held[s]
	delete(st.held, s)
	st.mu.Unlock()
	if ok && h != nil {
		h.stop()
	}
}

// stop removes the shard's handlers and stops its informers.
func (h *heldShard) stop() {
	for _, r := range h.registrations {
		_ = r.informer.RemoveEventHandler(r.handle)
	}
	h.running.Stop()
}

// stopShards stops every held shard's informers, and any Hold after.
func (s *shardState) stopShards() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.stopped = true
	held := s.held
	s.held = map[int]*heldShard{}
	s.holdings = map[int]int{}
	s.mu.Unlock()
	for _, h := range held {
		if h != nil {
			h.stop()
		}
	}
}
