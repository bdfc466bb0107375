package informer

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loam-dev/loam/ports"
)

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
