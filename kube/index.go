package kube

import (
	"fmt"
	"reflect"

	"github.com/loam-dev/loam/adapters/informer"
)

// Index is an index over a Controller's own objects by the related
// objects each names, such as "the ConfigMap each Memcached names": a
// related object's change reconciles exactly the objects whose index
// holds its key (ByIndex), and the Reconciler reads which objects name a
// related one (List). NewIndex makes one; Indexes gives it to exactly one
// Controller, whose objects are T.
type Index[T any] struct {
	name string
	keys func(T) []Key
	// bound ties the Index to the cache of the Controller that keeps it;
	// nil in an Index NewIndex didn't make.
	bound *informer.IndexBinding
}

// indexBinding is what an Index reads, once a Controller keeps it: the
// Controller's name.
type indexBinding struct {
	controller string
}

// NewIndex returns the Index named name whose values for an object are the
// keys keys returns: the related objects the object names. keys runs on
// the informer's goroutine each time an object is cached, so it must be
// quick; a panic in it indexes none of the object's keys and is recorded.
// NewController reports a name that is empty or that another of the
// Controller's Indexes has, and a nil keys.
func NewIndex[T any](name string, keys func(obj T) []Key) *Index[T] {
	x := &Index[T]{name: name, keys: keys}
	x.bound = informer.NewIndexBinding(x.String(), name)
	return x
}

func (x *Index[T]) indexName() string        { return x.name }
func (x *Index[T]) objectType() reflect.Type { return reflect.TypeFor[T]() }
func (x *Index[T]) hasKeys() bool            { return x.keys != nil }
func (x *Index[T]) handlePointer() uintptr   { return reflect.ValueOf(x).Pointer() }

// binding returns what x reads, nil when no Controller keeps it.
func (x *Index[T]) binding() *indexBinding {
	v := x.bound.Bound()
	if v == nil {
		return nil
	}
	return &indexBinding{controller: v.Controller}
}

// bind binds x to b, and reports false when another Controller took it.
func (x *Index[T]) bind(b *informer.IndexBound) bool { return x.bound != nil && x.bound.Bind(b) }

// unbind undoes bind.
func (x *Index[T]) unbind() { x.bound.Unbind() }

// String names the Index as errors do.
func (x *Index[T]) String() string {
	if x == nil {
		return "Index(nil)"
	}
	return fmt.Sprintf("Index(%q)", x.name)
}

// decodeKeys decodes doc, a cached object's JSON, and returns its index
// values; an object that doesn't decode has none, since the Reconciler's
// own decoding will report it.
func (x *Index[T]) decodeKeys(doc []byte) []Key {
	v, err := decode[T](doc)
	if err != nil {
		return nil
	}
	return x.keys(v)
}

// List returns a new copy of each of the Controller's objects whose index
// holds key: those that name the related object key. It sends no
// request. It fails when no Controller keeps the Index, or before the
// Controller's caches have synced.
func (x *Index[T]) List(key Key) ([]T, error) {
	if x.bound == nil {
		return nil, fmt.Errorf("kube: %s is kept by no Controller: make it with kube.NewIndex, and pass kube.Indexes with it to NewController", x.String())
	}
	docs, err := x.bound.List(key)
	if err != nil {
		return nil, err
	}
	return informer.DecodeAll(docs, decode[T], x.bound.ReadError)
}

// Indexes keeps idx over the Controller's objects, which must be idx's T:
// the Controller's Object[Spec, Status], or NewKindController's T. An
// Index is kept by one Controller.
func Indexes[T any](idx *Index[T]) Part {
	p := Part{kind: partIndexes}
	if idx != nil {
		p.index = idx
	}
	return p
}

// indexHandle is an Index of any type, as a Part and a Mapping hold it.
type indexHandle interface {
	handle
	indexName() string
	objectType() reflect.Type
	hasKeys() bool
	decodeKeys(doc []byte) []Key
	binding() *indexBinding
	bind(b *informer.IndexBound) bool
	unbind()
}
