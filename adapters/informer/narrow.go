package informer

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Narrowing is the ShardSelector (KEP-5866) of a sharded controller's
// primary informers: the API server lists and watches only the objects of
// the shards the replica holds. Set changes it, and the informers list
// again with the new selector, each ending its watch so its reflector
// relists, leaving the other informers alone. A server without sharded
// list and watch ignores the selector and sends every object: the cache
// is then whole, and the controller's own shard check, which never
// depends on the selector, still reconciles only the replica's shards.
type Narrowing struct {
	mu       sync.Mutex
	selector string
	watchers []*narrowed
}

// NewNarrowing returns the Narrowing whose first selector is selector,
// which must not be "": the API server reads "" as every object.
func NewNarrowing(selector string) *Narrowing { return &Narrowing{selector: selector} }

// Set makes selector the informers' ShardSelector from their next list
// on, and ends their watches so they list again. A selector equal to the
// current one changes nothing.
func (n *Narrowing) Set(selector string) {
	n.mu.Lock()
	if selector == n.selector {
		n.mu.Unlock()
		return
	}
	n.selector = selector
	watchers := n.watchers
	n.mu.Unlock()
	for _, w := range watchers {
		w.restart()
	}
}

// Selector returns the current ShardSelector.
func (n *Narrowing) Selector() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.selector
}

// watcher returns the narrowing of one informer's lists and watches.
func (n *Narrowing) watcher() *narrowed {
	w := &narrowed{n: n}
	n.mu.Lock()
	n.watchers = append(n.watchers, w)
	n.mu.Unlock()
	return w
}

// narrowed is one informer's lists and watches under a Narrowing: its
// open watch, and whether the selector changed since its last list.
type narrowed struct {
	n *Narrowing

	mu    sync.Mutex
	stale bool
	open  watch.Interface
}

// restart ends the open watch, and makes the next watch that doesn't
// list fail as expired, so the reflector lists again.
func (w *narrowed) restart() {
	w.mu.Lock()
	w.stale = true
	open := w.open
	w.open = nil
	w.mu.Unlock()
	if open != nil {
		open.Stop()
	}
}

// list sets the selector in the options of a list.
func (w *narrowed) list(opts *metav1.ListOptions) {
	w.mu.Lock()
	w.stale = false
	w.mu.Unlock()
	opts.ShardSelector = w.n.Selector()
}

// watch opens a watch with opts, under the selector, through open; it
// fails as expired when the selector changed since the informer last
// listed, unless the watch lists itself (client-go's watch-list).
func (w *narrowed) watch(ctx context.Context, gvr schema.GroupVersionResource, opts metav1.ListOptions, open func(context.Context, metav1.ListOptions) (watch.Interface, error)) (watch.Interface, error) {
	lists := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	w.mu.Lock()
	stale := w.stale && !lists
	if lists {
		w.stale = false
	}
	w.mu.Unlock()
	if stale {
		return nil, apierrors.NewResourceExpired("the shards of " + gvr.String() + " this replica holds changed: list them again")
	}
	opts.ShardSelector = w.n.Selector()
	wi, err := open(ctx, opts)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.open = wi
	w.mu.Unlock()
	return wi, nil
}
