package informer

import (
	"context"
	"fmt"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/ports"
)

// The API server lists and watches one namespace, or every one: there is
// no list of "namespace in (a, b)". So a resource watched over a set of
// namespaces has an informer of each, and a cache that reads as one:
// a read of a key goes to the informer of its namespace, a read of every
// namespace to each in turn.

// spread is one resource's informers over a namespace set: one per
// namespace of the set, in its order, or, for a nil set, one of every
// namespace.
type spread[T any] struct {
	// namespaces is the set, nil for every namespace.
	namespaces []string
	each       []T
	// index maps each namespace of the set to its informer's place in
	// each.
	index map[string]int
}

// watched returns the namespace of each informer a set needs: the set's,
// or "" for every namespace when the set is nil or empty.
func watched(namespaces []string) []string {
	if len(namespaces) == 0 {
		return []string{""}
	}
	return namespaces
}

// spreadOver returns the informers build returns for each namespace of
// namespaces, or for every namespace when it is nil or empty, and the
// first error build returns.
func spreadOver[T any](namespaces []string, build func(namespace string) (T, error)) (spread[T], error) {
	s := spread[T]{}
	if len(namespaces) > 0 {
		s.namespaces = namespaces
		s.index = make(map[string]int, len(namespaces))
	}
	for i, ns := range watched(namespaces) {
		v, err := build(ns)
		if err != nil {
			return spread[T]{}, err
		}
		s.each = append(s.each, v)
		if s.index != nil {
			s.index[ns] = i
		}
	}
	return s, nil
}

// of returns the informer that holds namespace's objects, and false when
// namespace is outside the set.
func (s spread[T]) of(namespace string) (T, bool) {
	if s.index == nil {
		return s.each[0], true
	}
	i, ok := s.index[namespace]
	if !ok {
		var zero T
		return zero, false
	}
	return s.each[i], true
}

// listError is the error of the served check's list of gvr in namespace,
// one of namespaces: it names the namespace when there are several, since
// the settings name it when there is one.
func listError(gvr schema.GroupVersionResource, namespaces []string, namespace string, err error) error {
	if len(namespaces) > 1 {
		return fmt.Errorf("listing %s in namespace %q: %w", gvr, namespace, err)
	}
	return fmt.Errorf("listing %s: %w", gvr, err)
}

// PrimaryCache is the controller's cache of the resource it reconciles, a
// ports.ObjectSource: a Primary of each namespace of a set, or one of
// every namespace, read as one cache. A sharded Watch whose API server
// serves sharded watches has such a set of each shard it holds, and reads
// them as one cache instead (shards.go).
type PrimaryCache struct {
	gvr schema.GroupVersionResource
	spread[*Primary]
	// shards is a sharded Watch's shards; nil in an unsharded one.
	shards *shardState
	// suffix ends the name of each index of the Watch's in the store, so
	// that the indexes of the Watches that share one never meet.
	suffix string
	// stopped is set when the Watch stops, from when the cache holds
	// nothing: the store it read may run on under other Watches, while
	// its indexes index nothing more, so its reads would disagree.
	stopped atomic.Bool
}

var _ ports.ObjectSource = (*PrimaryCache)(nil)

// newPrimaryCache returns the cache of gvr's objects in each of
// namespaces, or in every namespace when namespaces is nil: a Primary of
// each, with its handler not yet registered: the Watch registers it when
// it starts. Each is built as NewPrimary builds one of c.Namespace, with
// indexes kept over each, when own is set; else it has no informer until
// its Watch draws one from the Registry. It fails as NewPrimary does.
func newPrimaryCache(client dynamic.Interface, gvr schema.GroupVersionResource, namespaces []string, own bool, c Config, indexes ...Index) (*PrimaryCache, error) {
	s, err := spreadOver(namespaces, func(ns string) (*Primary, error) {
		cfg := c
		cfg.Namespace = ns
		if !own {
			return sharedPrimary(gvr, cfg), nil
		}
		return newPrimary(client, gvr, cfg, indexes...)
	})
	if err != nil {
		return nil, err
	}
	return &PrimaryCache{gvr: gvr, spread: s}, nil
}

// reading returns the caches a read goes through, one after the other:
// the held shards', or the whole resource's.
func (p *PrimaryCache) reading() []spread[*Primary] {
	if p.shards.isSplit() {
		return p.shards.caches()
	}
	return []spread[*Primary]{p.spread}
}

// Get returns the cached object key names, as Primary's Get does, from
// the informer of the key's namespace; an object of a namespace outside
// the set, or of a shard not held, is never cached, so the cache holds
// none. Once its Watch has stopped, it holds none.
func (p *PrimaryCache) Get(key ports.Key) (ports.Object, bool, error) {
	if p.stopped.Load() {
		return ports.Object{}, false, nil
	}
	if !p.shards.isSplit() {
		return getFrom(p.spread, key)
	}
	for _, s := range p.shards.caches() {
		if obj, found, err := getFrom(s, key); found || err != nil {
			return obj, found, err
		}
	}
	return ports.Object{}, false, nil
}

// getFrom returns key's object from s, as PrimaryCache's Get does.
func getFrom(s spread[*Primary], key ports.Key) (ports.Object, bool, error) {
	pr, ok := s.of(key.Namespace)
	if !ok {
		return ports.Object{}, false, nil
	}
	return pr.Get(key)
}

// primaries returns every Primary a read of every namespace goes through.
func (p *PrimaryCache) primaries() []*Primary {
	var out []*Primary
	for _, s := range p.reading() {
		out = append(out, s.each...)
	}
	return out
}

// ByIndex returns the JSON of the cached objects, of every namespace,
// whose index name holds key, as Primary's ByIndex does: an object may
// name a related object in another namespace than its own. Once its
// Watch has stopped, it returns none.
func (p *PrimaryCache) ByIndex(name string, key ports.Key) ([][]byte, error) {
	if p.stopped.Load() {
		return nil, nil
	}
	var out [][]byte
	for _, pr := range p.primaries() {
		docs, err := pr.ByIndex(name+p.suffix, key)
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
	}
	return out, nil
}

// indexKeys returns the keys of the cached objects, of every namespace,
// whose index name holds key; none once its Watch has stopped.
func (p *PrimaryCache) indexKeys(name string, key ports.Key) []ports.Key {
	if p.stopped.Load() {
		return nil
	}
	var out []ports.Key
	for _, pr := range p.primaries() {
		out = append(out, pr.indexKeys(name+p.suffix, key)...)
	}
	return out
}

// eachObject calls f with the key and uid of every cached object, namespace
// by namespace.
func (p *PrimaryCache) eachObject(f func(key ports.Key, uid string)) {
	for _, one := range p.primaries() {
		ix, started := one.indexer()
		if !started {
			continue
		}
		for _, item := range ix.List() {
			if c, ok := item.(*packed); ok {
				rec := c.record()
				f(ports.Key{Namespace: string(recordText(rec, textNamespace)), Name: string(recordText(rec, textName))},
					string(recordText(rec, textUID)))
			}
		}
	}
}

// Synced reports whether every namespace's cache holds what its first
// list returned: every held shard's, in a sharded Watch whose shards have
// informers of their own. A stopped Watch's cache never is.
func (p *PrimaryCache) Synced() bool {
	if p.stopped.Load() {
		return false
	}
	for _, pr := range p.primaries() {
		if !pr.Synced() {
			return false
		}
	}
	return true
}

// RelatedCache is the cache of a related resource: a Related of each
// namespace of a set, or one of every namespace, read as one cache.
type RelatedCache struct {
	c RelatedConfig
	spread[*Related]
}

// newRelatedCache returns the cache of c's resource, with a Related of
// each of c.Namespaces, whose informers its Watch draws when it starts.
func newRelatedCache(src relatedSource, c RelatedConfig) *RelatedCache {
	s, _ := spreadOver(c.Namespaces, func(ns string) (*Related, error) {
		nsrc := src
		nsrc.config.Namespace = ns
		return newRelated(nsrc, c), nil
	})
	return &RelatedCache{c: c, spread: s}
}

// Synced reports whether every namespace's cache holds what its first
// list returned.
func (r *RelatedCache) Synced() bool {
	for _, rel := range r.each {
		if !rel.Synced() {
			return false
		}
	}
	return true
}

// outside is the error of a read of namespace, which the set doesn't
// hold.
func (r *RelatedCache) outside(namespace string) error {
	return fmt.Errorf("the cache of %s holds namespaces %q, not %q", r.c.Resource, r.namespaces, namespace)
}

// Get returns the JSON of the cached object key names, as Related's Get
// does, from the informer of the key's namespace. It fails for a
// namespace outside the set, whose objects the cache can't tell about.
func (r *RelatedCache) Get(key ports.Key) ([]byte, bool, error) {
	rel, ok := r.of(key.Namespace)
	if !ok {
		return nil, false, r.outside(key.Namespace)
	}
	return rel.Get(key)
}

// List returns the JSON of every cached object in namespace, or in every
// namespace the cache holds when namespace is "", whose labels selector
// matches, as Related's List does. It fails for a namespace outside the
// set.
func (r *RelatedCache) List(namespace string, selector labels.Selector) ([][]byte, error) {
	if namespace != "" {
		rel, ok := r.of(namespace)
		if !ok {
			return nil, r.outside(namespace)
		}
		return rel.List(namespace, selector)
	}
	var out [][]byte
	for _, rel := range r.each {
		docs, err := rel.List("", selector)
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
	}
	return out, nil
}

// check lists the resource in each namespace once, with a limit of 1 and
// the selectors, as the informers will.
func (r *RelatedCache) check(ctx context.Context, src relatedSource) error {
	opts := metav1.ListOptions{Limit: 1, LabelSelector: r.c.LabelSelector, FieldSelector: r.c.FieldSelector}
	for _, ns := range watched(r.namespaces) {
		var err error
		if r.c.MetadataOnly {
			_, err = src.metadata.Resource(r.c.Resource).Namespace(ns).List(ctx, opts)
		} else {
			_, err = src.dynamic.Resource(r.c.Resource).Namespace(ns).List(ctx, opts)
		}
		if err != nil {
			return listError(r.c.Resource, r.namespaces, ns, err)
		}
	}
	return nil
}

// Namespaces returns the set of namespaces the cache holds, nil for
// every namespace.
func (r *RelatedCache) Namespaces() []string { return r.namespaces }
