package informer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/loam-dev/loam/domain/owners"
	"github.com/loam-dev/loam/ports"
)

// Owned watches a resource the controller's objects own, through the
// metadata client, since only its owner references matter: each add,
// change or deletion of one of its objects notifies, as a change, the key
// of the object whose controller owner reference it carries, when that reference names the
// controller's own kind. Config.Filters may skip a change that leaves
// the reference where it was; one that moves it is the object's deletion
// for one owner and its addition for another, which always notify.
type Owned struct {
	informer cache.SharedIndexInformer
}

// NewOwned returns the informer of gvr's objects, which objects of
// owner's kind control, not yet running: Start runs it. It fails only when
// client-go refuses its transform or handler, which it does only for an
// informer that has run.
//
// Without Config.Filters, each object is cached as its key and its
// controller reference; with them, its metadata too, but for
// managedFields, as JSON, for the filters to read.
func NewOwned(client metadata.Interface, gvr schema.GroupVersionResource, owner owners.Owner, c Config) (*Owned, error) {
	inf, err := newOwnedInformer(client, gvr, c, len(c.Filters) > 0)
	if err != nil {
		return nil, err
	}
	logger := c.Logger
	if _, err := inf.AddEventHandlerWithOptions(ownedHandler(gvr, owner, c), cache.HandlerOptions{Logger: &logger}); err != nil {
		return nil, fmt.Errorf("informer of %s: %w", gvr, err)
	}
	return &Owned{informer: inf}, nil
}

// newOwnedInformer returns the metadata informer of gvr's objects in
// c.Namespace, narrowed by c's selectors and never resynced, caching each
// object as slimOwned does, packed into a slab of the store's own, with
// no handler.
func newOwnedInformer(client metadata.Interface, gvr schema.GroupVersionResource, c Config, keepMeta bool) (cache.SharedIndexInformer, error) {
	inf := metadatainformer.NewFilteredMetadataInformer(client, gvr, c.Namespace, c.Resync, cache.Indexers{}, c.tweak).Informer()
	s := &slab{refs: storeRefs(inf.GetIndexer().List)}
	if err := inf.SetTransform(packingOwned(s, keepMeta)); err != nil {
		return nil, fmt.Errorf("informer of %s: %w", gvr, err)
	}
	return inf, nil
}

// ownedHandler returns the handler of an Owns of gvr, whose objects
// owner's kind controls, on an owned informer: each add, change or
// deletion notifies the key of its controlling owner, as c says.
func ownedHandler(gvr schema.GroupVersionResource, owner owners.Owner, c Config) cache.ResourceEventHandlerDetailedFuncs {
	notify := func(key ports.Key, resync bool) { c.Notify(ports.Event{Key: key, Resync: resync}) }
	ownerKey := func(obj any) (ports.Key, bool) { return c.owner(ownerOf(owner, obj)) }
	enqueue := func(obj any, initial bool) {
		if key, ok := ownerKey(obj); ok {
			c.Notify(ports.Event{Key: key, Initial: initial})
		}
	}
	skips := newFilters(c.Filters, gvr, c.Recorder)
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, obj any) {
			// A changed reference moves the object from one owner to
			// another: both are reconciled, the old one to see it go.
			prev, hadPrev := ownerKey(old)
			next, hasNext := ownerKey(obj)
			resync := resynced(old, obj)
			stayed := hadPrev == hasNext && prev == next
			if stayed && !resync && skips.skipOwned(old, obj) {
				return
			}
			if hadPrev && (!hasNext || prev != next) {
				notify(prev, resync)
			}
			if hasNext {
				notify(next, resync)
			}
		},
		DeleteFunc: func(obj any) { enqueue(obj, false) },
	}
}

// Informer returns the client-go informer, for Start.
func (o *Owned) Informer() cache.SharedIndexInformer { return o.informer }

// ownerOf returns the key and uid of the object of owner's kind that
// controls obj, a cached object or the tombstone of a deleted one. The
// transform made every object the metadata informer caches a
// *packedOwned, with its controller reference alone; an *owned, the
// transform's step before, reads alike.
func ownerOf(owner owners.Owner, obj any) (ports.Key, types.UID, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	switch o := obj.(type) {
	case *packedOwned:
		return owner.Controller(o.GetNamespace(), o.controller())
	case *owned:
		return owner.Controller(o.namespace, o.controller)
	}
	return ports.Key{}, "", false
}

// owner returns the key of the owner an owned object's change notifies,
// as ownerOf or cachedOwner found it: none when there is no owner, or
// when a sharded replica doesn't hold the owner's shard.
func (c Config) owner(key ports.Key, uid types.UID, ok bool) (ports.Key, bool) {
	if !ok || (c.Holds != nil && !c.Holds(uid)) {
		return ports.Key{}, false
	}
	return key, true
}

// skipOwned is skip for the owned objects, which the cache holds with
// their metadata when there is a filter to read it.
func (f filters) skipOwned(old, obj any) bool {
	if len(f.list) == 0 {
		return false
	}
	o, okOld := old.(*packedOwned)
	n, okNew := obj.(*packedOwned)
	if !okOld || !okNew {
		return false
	}
	prev, next := o.metaJSON(), n.metaJSON()
	if prev == nil || next == nil {
		return false
	}
	return f.skipJSON(ports.Key{Namespace: n.GetNamespace(), Name: n.GetName()}, prev, next)
}
