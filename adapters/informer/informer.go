// Package informer watches a controller's resources with client-go's
// informers: a dynamic informer for the resource the controller
// reconciles, whose cache is the controller's ports.ObjectSource, and a
// metadata informer for each resource it owns. Every change to an object
// queues its key; every change to an owned resource queues the key of the
// object that controls it.
//
// The caches hold what the controller reads and no more. A primary
// object is cached as its JSON, decoded on demand, with the few metadata
// fields the informer and the domain read beside it, in place of the maps
// of interface values the dynamic client decodes, which take several times
// the JSON's size. Through NewDynamicClient, a listed or watched object
// never becomes those maps at all: it is read from the bytes the API
// server sent straight into the cache's form, and what that reading can't
// be sure to read as client-go does is left to client-go's own decoding.
// An owned object is cached as the metadata its handler reads. Neither holds metadata.managedFields, which no controller
// decision reads and which is often the larger half of an object.
package informer

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/loam-dev/loam/ports"
)

// Config is what both kinds of informer share.
type Config struct {
	// Namespace limits the informer to one namespace's objects; "" watches
	// every namespace.
	Namespace string
	// Resync hands every cached object to the informer's handler again
	// that often, as if it had changed; 0 never does.
	Resync time.Duration
	// Notify is told of each event: the key of an object to reconcile, and
	// whether the event is a resync. It is called from the informer's own
	// goroutines and must not block for long.
	Notify func(ports.Event)
	// Logger receives the log lines of the informer's event handler.
	Logger logr.Logger
	// LabelSelector and FieldSelector narrow what the API server lists and
	// watches, so the cache holds only the objects that match; "" selects
	// every object. The caller has parsed them: a bad one fails every
	// list.
	LabelSelector, FieldSelector string
	// Filters skip updates of the informer's objects that not every one
	// keeps; see Filter. None notifies every update.
	Filters []Filter
	// Recorder records the panics of Filters, which the informer
	// recovers. It may be nil without Filters.
	Recorder ports.Recorder
	// Holds, when not nil, reports whether a sharded replica holds the
	// shard of the object of a uid: a primary informer then notifies only
	// the changes of its objects it holds, and an owned informer only
	// those of the objects whose owner it holds. The informers still
	// cache the others.
	Holds func(uid types.UID) bool
	// shard, when its selector isn't "", narrows a primary informer to
	// one shard's objects.
	shard shardFilter
}

// holdsObject reports whether Holds holds obj, a cached object or the
// tombstone of one, or no Holds is set.
func (c Config) holdsObject(obj any) bool {
	if c.Holds == nil {
		return true
	}
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	u, ok := obj.(interface{ GetUID() types.UID })
	return !ok || c.Holds(u.GetUID())
}

// tweak sets c's selectors in opts, the options of a list or a watch.
func (c Config) tweak(opts *metav1.ListOptions) {
	opts.LabelSelector = c.LabelSelector
	opts.FieldSelector = c.FieldSelector
}

// Running is a set of informers started together, each in a goroutine of
// its own, until Stop.
type Running struct {
	informers []cache.SharedIndexInformer
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// Start runs each informer until ctx is done or Stop is called. ctx also
// carries the logger client-go's reflectors log through (klog.NewContext).
// An informer runs once: Start must not be given one that ran before.
func Start(ctx context.Context, informers ...cache.SharedIndexInformer) *Running {
	ctx, cancel := context.WithCancel(ctx)
	r := &Running{informers: informers, cancel: cancel}
	for _, inf := range informers {
		r.wg.Go(func() { inf.RunWithContext(ctx) })
	}
	return r
}

// WaitForSync waits until every informer's cache holds what its first
// list returned, and reports whether they did before ctx was done.
func (r *Running) WaitForSync(ctx context.Context) bool {
	checkers := make([]cache.DoneChecker, len(r.informers))
	for i, inf := range r.informers {
		checkers[i] = inf.HasSyncedChecker()
	}
	return cache.WaitFor(ctx, "", checkers...)
}

// Stop stops every informer and waits for their goroutines to return.
func (r *Running) Stop() {
	r.cancel()
	r.wg.Wait()
}

// resynced reports whether an update from old to obj is a resync: the
// same resourceVersion handed again, rather than a change. Objects without
// one, which only a fake API server sends, are changes: a change dropped
// for a resync would be lost, and a resync taken for a change only drops
// a pending timer whose key is queued anyway.
func resynced(old, obj any) bool {
	o, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	n, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	return o.GetResourceVersion() != "" && o.GetResourceVersion() == n.GetResourceVersion()
}

// keyOf returns the key of obj, which an informer's handler was handed: a
// cached object, or the tombstone of one deleted while its watch was down.
func keyOf(obj any) (ports.Key, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		ns, name, err := cache.SplitMetaNamespaceKey(t.Key)
		if err != nil {
			return ports.Key{}, false
		}
		return ports.Key{Namespace: ns, Name: name}, true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ports.Key{}, false
	}
	return ports.Key{Namespace: m.GetNamespace(), Name: m.GetName()}, true
}
