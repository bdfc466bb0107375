package kube

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/ports"
)

// Key names one object: its namespace, "" for a cluster-scoped object, and
// its name.
type Key = ports.Key

// Cache is a Controller's cache of a related resource: objects its own
// objects depend on without controlling them, such as the ConfigMap a
// Memcached names or the Secret holding a Database's password. The
// Controller lists and watches the resource, Watches says which of its
// own objects each change reconciles, and the Reconciler reads the cache
// with Get and List, which send no request.
//
// NewCache and NewResourceCache make one; Watches gives it to exactly one
// Controller, which fills it from Serve on. Its T is the type each read
// decodes a new copy into: client-go's struct for Kubernetes' own kinds,
// such as corev1.ConfigMap, an Object[Spec, Status] for a custom
// resource, or metav1.PartialObjectMetadata for a cache of metadata alone.
//
// A Cache holds the namespaces the Controller watches, Settings.Namespace
// or Settings.Namespaces, unless its CacheOptions name a set of its own
// or every namespace; a read of a namespace outside them fails, rather
// than report as missing an object that may exist. A set is watched a
// namespace at a time, one list and watch each, and reads as one cache.
type Cache[T any] struct {
	gvr   schema.GroupVersionResource
	kind  string
	scope Scope
	opts  CacheOptions[T]
	// mistakes are NewCache's findings, which NewController reports.
	mistakes []error
	// bound ties the Cache to the store of the Controller that watches
	// it; nil in a Cache NewCache didn't make.
	bound *informer.CacheBinding
}

// CacheOptions narrows what a Cache holds.
type CacheOptions[T any] struct {
	// LabelSelector and FieldSelector narrow what the API server lists and
	// watches, such as "app.kubernetes.io/part-of=memcached" or
	// "type=kubernetes.io/tls": a watch of Secrets need not cache every
	// Secret of the cluster. "" selects every object.
	LabelSelector, FieldSelector string
	// AllNamespaces watches the resource in every namespace, for objects
	// that name related objects in other namespaces. Without it, or
	// Namespaces, a Cache holds the objects of Settings.Namespace or
	// Settings.Namespaces, as the Controller's own informers do. A
	// cluster-scoped resource is watched whole either way.
	AllNamespaces bool
	// Namespaces, when not empty, is the Cache's own set of namespaces,
	// in place of the Controller's: such as the one namespace where the
	// Secrets every object reads live. Each is watched on its own, a list
	// and a watch per namespace, which is why a set holds at most 100:
	// from 1 to 100 namespaces' names, none twice (CheckNamespaces).
	// Setting it with AllNamespaces, or for a cluster-scoped resource, is
	// a mistake.
	Namespaces []string
	// Transform, when not nil, is called on each object before it is
	// cached, to drop the fields the Reconciler never reads, such as every
	// key of a Secret's data but one. It must not panic: a panic caches
	// the object whole, and is recorded. Labels are selected by as the
	// API server served them, whatever Transform leaves.
	Transform func(obj *T)
}

// cacheBinding is what a Cache reads, once a Controller watches it: the
// Controller's name and the store it fills.
type cacheBinding struct {
	controller string
	store      *informer.RelatedCache
}

// NewCache returns a Cache of k's objects, narrowed as opts say. It
// reports nothing itself: NewController reports each mistake in k and
// opts, with every other.
func NewCache[T any](k Kind[T], opts CacheOptions[T]) *Cache[T] {
	c := newCache(k.GVR, k.Kind, k.Scope, opts)
	for _, m := range k.mistakes() {
		c.mistakes = append(c.mistakes, fmt.Errorf("Kind %s: %w", k.name(), m))
	}
	c.mistakes = append(c.mistakes, selectorMistakes(opts.LabelSelector, opts.FieldSelector)...)
	c.mistakes = append(c.mistakes, namespacesMistakes(opts.Namespaces, opts.AllNamespaces, k.Scope, k.Kind)...)
	return c
}

// NewResourceCache returns a Cache of r's objects, decoded as
// Object[Spec, Status], narrowed as opts say. NewController reports each
// mistake in r and opts, with every other.
func NewResourceCache[Spec, Status any](r Resource[Spec, Status], opts CacheOptions[Object[Spec, Status]]) *Cache[Object[Spec, Status]] {
	c := newCache(r.GVR(), r.Kind, r.Scope, opts)
	for _, m := range r.controllerMistakes() {
		c.mistakes = append(c.mistakes, fmt.Errorf("Resource %s: %w", r.name(), m))
	}
	c.mistakes = append(c.mistakes, selectorMistakes(opts.LabelSelector, opts.FieldSelector)...)
	c.mistakes = append(c.mistakes, namespacesMistakes(opts.Namespaces, opts.AllNamespaces, r.Scope, r.Kind)...)
	return c
}

// newCache returns the Cache of gvr's objects, of kind and scope, with
// its binding.
func newCache[T any](gvr schema.GroupVersionResource, kind string, scope Scope, opts CacheOptions[T]) *Cache[T] {
	c := &Cache[T]{gvr: gvr, kind: kind, scope: scope, opts: opts}
	c.bound = informer.NewCacheBinding(informer.CacheName{
		Name: c.String(), Kind: kind, Cluster: scope == Cluster, OwnNamespaces: len(opts.Namespaces) > 0,
	})
	return c
}

// selectorMistakes returns what is wrong with a label and a field
// selector.
func selectorMistakes(label, field string) []error {
	var errs []error
	if err := CheckLabelSelector(label); err != nil {
		errs = append(errs, fmt.Errorf("CacheOptions.LabelSelector: %w", err))
	}
	if err := CheckFieldSelector(field); err != nil {
		errs = append(errs, fmt.Errorf("CacheOptions.FieldSelector: %w", err))
	}
	return errs
}

// String names the Cache by its resource, as errors do.
func (c *Cache[T]) String() string {
	if c == nil {
		return "Cache(nil)"
	}
	return fmt.Sprintf("Cache(%s)", c.gvr)
}

// Get returns a new copy of the cached object namespace/name, and false
// when the cache holds none: no such object exists, as far as the watch
// has seen, or it doesn't match the Cache's selectors. It sends no
// request. It fails when no Controller watches the Cache, for a namespace
// outside the ones the Cache holds or given for a cluster-scoped
// resource, and before the Controller's caches have synced.
func (c *Cache[T]) Get(namespace, name string) (T, bool, error) {
	var zero T
	if c.bound == nil {
		return zero, false, c.unmade()
	}
	doc, found, err := c.bound.Get(Key{Namespace: namespace, Name: name})
	if err != nil || !found {
		return zero, false, err
	}
	v, err := decode[T](doc)
	return v, true, c.bound.ReadError(err)
}

// List returns a new copy of every cached object in namespace, or in
// every namespace the Cache holds when namespace is "" (each of its set,
// when it holds a set), whose labels selector matches; a nil selector
// matches all. It sends no request, and fails as Get does.
func (c *Cache[T]) List(namespace string, selector labels.Selector) ([]T, error) {
	if c.bound == nil {
		return nil, c.unmade()
	}
	docs, err := c.bound.List(namespace, selector)
	if err != nil {
		return nil, err
	}
	return informer.DecodeAll(docs, decode[T], c.bound.ReadError)
}

// unmade is the error of a read of a Cache NewCache didn't make, which no
// Controller can watch.
func (c *Cache[T]) unmade() error {
	return fmt.Errorf("kube: %v is watched by no Controller: make it with kube.NewCache or kube.NewResourceCache, and pass kube.Watches with it to NewController", c)
}

// related returns the informer's config of c, watched within namespaces,
// the Controller's (nil for every namespace), unless c says otherwise,
// and reconciling as m says.
func (c *Cache[T]) related(namespaces []string, m Mapping) informer.RelatedConfig {
	switch {
	case c.opts.AllNamespaces || c.scope == Cluster:
		namespaces = nil
	case len(c.opts.Namespaces) > 0:
		// The Cache's own copy: the end user's slice may change.
		namespaces = slices.Clone(c.opts.Namespaces)
	}
	rc := informer.RelatedConfig{
		Resource:      c.gvr,
		MetadataOnly:  reflect.TypeFor[T]() == reflect.TypeFor[metav1.PartialObjectMetadata](),
		Namespaces:    namespaces,
		LabelSelector: c.opts.LabelSelector,
		FieldSelector: c.opts.FieldSelector,
		Map:           m.fn,
	}
	if m.index != nil {
		rc.Index = m.index.indexName()
	}
	rc.Reshape = informer.Reshape(c.opts.Transform, decode[T])
	return rc
}

// Mapping says which of a Controller's objects a change to a related
// object reconciles: MapFunc's function, or ByIndex's index. The zero
// Mapping is a mistake.
type Mapping struct {
	fn    func(metav1.Object) []Key
	index indexHandle
	// kind tells a Mapping made by MapFunc or ByIndex from the zero one,
	// and ByIndex(nil) from MapFunc(nil).
	kind mappingKind
}

type mappingKind int

const (
	mappingNone mappingKind = iota
	mappingFunc
	mappingIndex
)

// MapFunc reconciles the objects f returns for each related object that is
// added, changes or is deleted: its state before and after a change both,
// since a change may move it from one dependant to another. f is handed
// the related object's metadata, and runs on the informer's goroutine, so
// it must be quick and must not block; a panic in it reconciles nothing
// and is recorded, as a Reconciler's panic is.
func MapFunc(f func(related metav1.Object) []Key) Mapping {
	return Mapping{fn: f, kind: mappingFunc}
}

// ByIndex reconciles, for each related object that is added, changes or
// is deleted, exactly the Controller's objects whose index idx holds the
// related object's key: the common mapping of a reference by name, with
// no function to write. The Controller must keep idx: pass Indexes(idx)
// to NewController too.
func ByIndex[T any](idx *Index[T]) Mapping {
	m := Mapping{kind: mappingIndex}
	if idx != nil {
		m.index = idx
	}
	return m
}

// String describes the Mapping as the end user wrote it, for errors.
func (m Mapping) String() string {
	switch m.kind {
	case mappingFunc:
		return "MapFunc(...)"
	case mappingIndex:
		if m.index == nil {
			return "ByIndex(nil)"
		}
		return fmt.Sprintf("ByIndex(%q)", m.index.indexName())
	}
	return "Mapping{}"
}

// mistakes returns what is wrong with m.
func (m Mapping) mistakes() []string {
	switch m.kind {
	case mappingFunc:
		if m.fn == nil {
			return []string{"the mapping function is nil"}
		}
	case mappingIndex:
		if m.index == nil {
			return []string{"the Index is nil"}
		}
	default:
		return []string{"the zero Mapping: make one with kube.MapFunc or kube.ByIndex"}
	}
	return nil
}

// Watches reconciles the Controller's objects that m names whenever an
// object of c's resource is added, changes or is deleted, and fills c for
// the Reconciler to read. The Controller lists and watches the resource
// as c's options say, checks at Serve that it is served, and reconciles
// nothing until c has synced; it needs list and watch on it. A Cache is
// watched by one Controller.
//
// An update queues only when every one of filters keeps it (see
// UpdateFilter). They read the metadata of the JSON the Cache holds,
// which is decoded for them on each update, as the Cache's Transform
// leaves it.
func Watches[T any](c *Cache[T], m Mapping, filters ...UpdateFilter) Part {
	p := Part{kind: partWatches, mapping: m, filters: filters}
	if c != nil {
		p.cache = c
	}
	return p
}

// cacheHandle is a Cache of any type, as a Part holds it.
type cacheHandle interface {
	handle
	cacheMistakes() []error
	related(namespaces []string, m Mapping) informer.RelatedConfig
	binding() *cacheBinding
	bind(b *informer.CacheBound) bool
	unbind()
}

func (c *Cache[T]) handlePointer() uintptr { return reflect.ValueOf(c).Pointer() }

// cacheMistakes returns NewCache's findings, and that c wasn't made by
// NewCache.
func (c *Cache[T]) cacheMistakes() []error {
	if c.bound == nil {
		return append(c.mistakes, errors.New("the zero Cache: make one with kube.NewCache or kube.NewResourceCache"))
	}
	return c.mistakes
}

// binding returns what c reads, nil when no Controller watches it.
func (c *Cache[T]) binding() *cacheBinding {
	v := c.bound.Bound()
	if v == nil {
		return nil
	}
	return &cacheBinding{controller: v.Controller, store: v.Store}
}

// bind binds c to b, and reports false when another Controller took it.
func (c *Cache[T]) bind(b *informer.CacheBound) bool { return c.bound != nil && c.bound.Bind(b) }

// unbind undoes bind.
func (c *Cache[T]) unbind() { c.bound.Unbind() }

// handle is a Cache or an Index, which NewController finds in the
// Reconciler to check the Controller watches or keeps it.
type handle interface {
	fmt.Stringer
	handlePointer() uintptr
}

var (
	_ handle      = (*Cache[struct{}])(nil)
	_ handle      = (*Index[struct{}])(nil)
	_ cacheHandle = (*Cache[struct{}])(nil)
	_ indexHandle = (*Index[struct{}])(nil)
)
