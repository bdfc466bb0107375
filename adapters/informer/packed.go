package informer

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// packed is an object of the primary resource as its store holds it: a
// ref to its packed record in the store's slab, eight bytes and one
// pointer for the collector, where a *cached is a dozen fields and as
// many allocations. Its strings are read from the record when asked for,
// and copied, so that a key or a uid kept by the queue or the domain
// keeps no chunk alive; its JSON and status are handed out as capped
// slices of the record, which no one writes.
type packed struct{ ref }

// json returns the object's JSON, a capped slice of its record.
func (p *packed) json() []byte { return recordJSON(p.record()) }

// status returns the object's status, a capped slice of its JSON, or nil
// when it has none.
func (p *packed) status() []byte { return recordStatus(p.record()) }

// deleting reports whether the object is being deleted.
func (p *packed) deleting() bool { return recordDeleting(p.record()) }

// text returns the i-th text of the object's metadata, copied.
func (p *packed) text(i int) string { return string(recordText(p.record(), i)) }

// lists returns the object's finalizers and annotations, copied. A
// record the slab holds was written whole, so reading it fails for none:
// a damaged one reads as neither.
func (p *packed) lists() ([]string, map[string]string) {
	f, a, err := recordLists(p.record())
	if err != nil {
		return nil, nil
	}
	return f, a
}

// GetObjectKind returns an empty kind: the object's apiVersion and kind are
// in its JSON, and nothing that reads the cache asks for them.
func (p *packed) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject returns p itself: nothing changes a packed object — its
// setters do nothing, and a compaction moves its ref to a copy of the
// same bytes —, so it is its own deep copy. A copy with a ref of its own
// would keep the old chunk alive after a compaction, and would no longer
// be reflect.DeepEqual to p, which client-go's cache mutation detector
// (KUBE_CACHE_MUTATION_DETECTOR) would call a modified cache, and panic.
func (p *packed) DeepCopyObject() runtime.Object { return p }

// pack puts c's record in s and returns the packed object that refers to
// it. It fails for a record s can't hold, which no decoded object makes.
func (s *slab) pack(c *cached) (*packed, error) {
	f := packedFields{
		json: c.json, status: c.status,
		namespace: c.namespace, name: c.name, version: c.resourceVersion, uid: string(c.uid),
		deleting: c.deleting, finalizers: c.finalizers, annotations: c.annotations,
	}
	if err := checkFields(f); err != nil {
		return nil, fmt.Errorf("packing %s/%s: %w", c.namespace, c.name, err)
	}
	p := &packed{}
	err := s.put(&p.ref, func(dst []byte) []byte { return appendRecord(dst, f) })
	if err != nil {
		return nil, fmt.Errorf("packing %s/%s: %w", c.namespace, c.name, err)
	}
	return p, nil
}

// packing returns the primary informer's transform: compact's, whose
// objects it packs into s. It is idempotent, as client-go asks: a
// *packed, which the watch-list's store hands it a second time, is
// returned as it is.
func packing(s *slab) cache.TransformFunc {
	return func(obj any) (any, error) {
		if p, ok := obj.(*packed); ok {
			return p, nil
		}
		c, err := compact(obj)
		if err != nil {
			return nil, err
		}
		return s.pack(c.(*cached))
	}
}

// storeRefs returns the refs of the packed objects store holds, for s's
// compactions.
func storeRefs(store func() []any) func(yield func(*ref) bool) {
	return func(yield func(*ref) bool) {
		for _, item := range store() {
			var r *ref
			switch p := item.(type) {
			case *packed:
				r = &p.ref
			case *packedOwned:
				r = &p.ref
			default:
				continue
			}
			if !yield(r) {
				return
			}
		}
	}
}

// packedOwned is an object of an owned resource as its store holds it: a
// ref to a packed record of its key, resourceVersion and controller owner
// reference, and of its metadata's JSON when the store keeps it, as an
// *owned has them.
type packedOwned struct{ packed }

// DeepCopyObject returns o itself, as a packed object's does.
func (o *packedOwned) DeepCopyObject() runtime.Object { return o }

// metaJSON returns the object's metadata as JSON, a capped slice of its
// record, or nil when its store keeps none.
func (o *packedOwned) metaJSON() []byte {
	if doc := o.json(); len(doc) > 0 {
		return doc
	}
	return nil
}

// controller returns the object's controller owner reference, copied,
// alone in a slice, or nil when it has none, as an *owned keeps it.
func (o *packedOwned) controller() []metav1.OwnerReference {
	if ref, ok := recordController(o.record()); ok {
		return []metav1.OwnerReference{ref}
	}
	return nil
}

// packOwned puts o's record in s and returns the packed object that
// refers to it. It fails for a record s can't hold, which no decoded
// object makes.
func (s *slab) packOwned(o *owned) (*packedOwned, error) {
	f := packedFields{json: o.json, namespace: o.namespace, name: o.name, version: o.resourceVersion}
	if len(o.controller) > 0 {
		f.controller = &o.controller[0]
	}
	if err := checkFields(f); err != nil {
		return nil, fmt.Errorf("packing %s/%s: %w", o.namespace, o.name, err)
	}
	p := &packedOwned{}
	if err := s.put(&p.ref, func(dst []byte) []byte { return appendRecord(dst, f) }); err != nil {
		return nil, fmt.Errorf("packing %s/%s: %w", o.namespace, o.name, err)
	}
	return p, nil
}

// packingOwned returns the owned informers' transform: slimOwned's,
// whose objects it packs into s. It is idempotent, as client-go asks.
func packingOwned(s *slab, keepMeta bool) cache.TransformFunc {
	slim := slimOwned(keepMeta)
	return func(obj any) (any, error) {
		if p, ok := obj.(*packedOwned); ok {
			return p, nil
		}
		out, err := slim(obj)
		if err != nil {
			return nil, err
		}
		if o, ok := out.(*owned); ok {
			return s.packOwned(o)
		}
		return out, nil
	}
}
