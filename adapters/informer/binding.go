package informer

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/loam-dev/loam/ports"
)

// CacheName is how the facade names a cache of a related resource in
// errors, and what its reads are checked against.
type CacheName struct {
	// Name names the cache, such as "Cache(/v1, Resource=configmaps)",
	// and Kind its objects' kind.
	Name, Kind string
	// Cluster is set for a cluster-scoped resource, whose objects are in
	// no namespace.
	Cluster bool
	// OwnNamespaces is set when the cache's options name its namespaces,
	// rather than the Controller's settings.
	OwnNamespaces bool
}

// CacheBound is what a cache reads once a Controller watches it.
type CacheBound struct {
	// Controller names the Controller that watches the cache.
	Controller string
	// Namespaces is the set of namespaces the cache holds, nil for every
	// one; Setting names, for errors, the field of the Controller's
	// Settings the set came from when the cache's options name none.
	Namespaces []string
	Setting    string
	Store      *RelatedCache
}

// CacheBinding ties a typed cache of the facade to the store of the one
// Controller that watches it, from NewController on. Its methods may be
// called from any goroutine.
type CacheBinding struct {
	name  CacheName
	bound atomic.Pointer[CacheBound]
}

// NewCacheBinding returns the unbound binding of the cache n names.
func NewCacheBinding(n CacheName) *CacheBinding { return &CacheBinding{name: n} }

// Bind binds b to what it reads, and reports false, binding nothing,
// when a Controller watches it already.
func (b *CacheBinding) Bind(v *CacheBound) bool { return b.bound.CompareAndSwap(nil, v) }

// Unbind undoes Bind.
func (b *CacheBinding) Unbind() { b.bound.Store(nil) }

// Bound returns what b reads, nil when no Controller watches it.
func (b *CacheBinding) Bound() *CacheBound {
	if b == nil {
		return nil
	}
	return b.bound.Load()
}

// Reading returns the store a read of namespace goes to, and fails when
// the cache can't be read in namespace ever, or yet: when no Controller
// watches it, for a namespace outside the ones it holds or given for a
// cluster-scoped resource, and before it has synced. A namespace it can
// never read is reported first: waiting wouldn't mend it.
func (b *CacheBinding) Reading(namespace string) (*RelatedCache, error) {
	v := b.Bound()
	switch {
	case v == nil:
		return nil, fmt.Errorf("kube: %s is watched by no Controller: pass kube.Watches with it to NewController", b.name.Name)
	case b.name.Cluster && namespace != "":
		return nil, fmt.Errorf("kube: %s: namespace %q: %s is cluster-scoped, so its objects are in no namespace: want \"\"", b.name.Name, namespace, b.name.Kind)
	case namespace != "" && v.Namespaces != nil && !slices.Contains(v.Namespaces, namespace):
		return nil, b.outside(namespace, v)
	case !v.Store.Synced():
		return nil, fmt.Errorf("kube: %s has not synced yet: read it in a reconcile, which starts once every cache of Controller %s has synced", b.name.Name, v.Controller)
	}
	return v.Store, nil
}

// outside is the error of a read of namespace, which is outside the
// namespaces v holds: an object there would read as missing when it may
// well exist. It says where the set came from, and how to widen it.
func (b *CacheBinding) outside(namespace string, v *CacheBound) error {
	holds := fmt.Sprintf("namespaces %q", v.Namespaces)
	if len(v.Namespaces) == 1 {
		holds = fmt.Sprintf("namespace %q", v.Namespaces[0])
	}
	if b.name.OwnNamespaces {
		return fmt.Errorf("kube: %s: namespace %q is outside the Cache, which holds %s only, as its CacheOptions.Namespaces say: add %q to them, or set CacheOptions.AllNamespaces in their place to watch every namespace",
			b.name.Name, namespace, holds, namespace)
	}
	return fmt.Errorf("kube: %s: namespace %q is outside the Cache, which holds %s only, as Controller %s's %s: set CacheOptions.Namespaces to the namespaces it reads, or CacheOptions.AllNamespaces to watch every namespace",
		b.name.Name, namespace, holds, v.Controller, v.Setting)
}

// ReadError names the cache in err, a read's error; nil stays nil.
func (b *CacheBinding) ReadError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("kube: %s: %w", b.name.Name, err)
}

// Get returns the JSON of the cached object key names, checked as
// Reading checks a read, with its errors named.
func (b *CacheBinding) Get(key ports.Key) ([]byte, bool, error) {
	store, err := b.Reading(key.Namespace)
	if err != nil {
		return nil, false, err
	}
	doc, found, err := store.Get(key)
	return doc, found, b.ReadError(err)
}

// List returns the JSON of the cached objects of namespace, or of every
// namespace the cache holds, whose labels selector matches, checked as
// Reading checks a read, with its errors named.
func (b *CacheBinding) List(namespace string, selector labels.Selector) ([][]byte, error) {
	store, err := b.Reading(namespace)
	if err != nil {
		return nil, err
	}
	docs, err := store.List(namespace, selector)
	return docs, b.ReadError(err)
}

// IndexBound is what an index reads once a Controller keeps it.
type IndexBound struct {
	Controller string
	Primary    *PrimaryCache
}

// IndexBinding ties an index of the facade, named as errors name it, to
// the primary cache of the one Controller that keeps it. Its methods may
// be called from any goroutine.
type IndexBinding struct {
	name, index string
	bound       atomic.Pointer[IndexBound]
}

// NewIndexBinding returns the unbound binding of the index named index,
// which errors call name.
func NewIndexBinding(name, index string) *IndexBinding {
	return &IndexBinding{name: name, index: index}
}

// Bind binds b to what it reads, and reports false, binding nothing,
// when a Controller keeps it already.
func (b *IndexBinding) Bind(v *IndexBound) bool { return b.bound.CompareAndSwap(nil, v) }

// Unbind undoes Bind.
func (b *IndexBinding) Unbind() { b.bound.Store(nil) }

// Bound returns what b reads, nil when no Controller keeps it.
func (b *IndexBinding) Bound() *IndexBound {
	if b == nil {
		return nil
	}
	return b.bound.Load()
}

// List returns the JSON of the Controller's cached objects whose index
// holds key. It fails when no Controller keeps the index, or before the
// Controller's caches have synced.
func (b *IndexBinding) List(key ports.Key) ([][]byte, error) {
	v := b.Bound()
	if v == nil {
		return nil, fmt.Errorf("kube: %s is kept by no Controller: pass kube.Indexes with it to NewController", b.name)
	}
	if !v.Primary.Synced() {
		return nil, fmt.Errorf("kube: %s has not synced yet: read it in a reconcile, which starts once every cache of Controller %s has synced", b.name, v.Controller)
	}
	docs, err := v.Primary.ByIndex(b.index, key)
	if err != nil {
		return nil, b.ReadError(err)
	}
	return docs, nil
}

// ReadError names the index in err; nil stays nil.
func (b *IndexBinding) ReadError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("kube: %s: %w", b.name, err)
}

// DecodeAll decodes each of docs into a new T with decode, naming the
// source of any error through wrap.
func DecodeAll[T any](docs [][]byte, decode func([]byte) (T, error), wrap func(error) error) ([]T, error) {
	out := make([]T, 0, len(docs))
	for _, doc := range docs {
		v, err := decode(doc)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, v)
	}
	return out, nil
}

// Reshape returns the related informers' Reshape of the end user's
// transform of T values: each object's JSON decoded into a new T with
// decode, transformed in place, and encoded again. It returns nil for a
// nil transform.
func Reshape[T any](transform func(*T), decode func([]byte) (T, error)) func(doc []byte) ([]byte, error) {
	if transform == nil {
		return nil
	}
	return func(doc []byte) ([]byte, error) {
		v, err := decode(doc)
		if err != nil {
			return nil, err
		}
		transform(&v)
		return json.Marshal(v)
	}
}
