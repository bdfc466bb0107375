package ports

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// Object is one object as the controller's cache holds it: the few fields
// the domain decides on, and the whole object's JSON for the Handler to
// decode. Its slices and maps may be shared with the cache and with every
// other reader — its JSON and Status are —, so nothing may modify them:
// the Handler decodes a value of its own.
type Object struct {
	// UID is metadata.uid. Every write names it, so no write recreates an
	// object deleted since the cache saw it, and a finalizer's apply never
	// reaches another object created under the same name. (The status
	// subresource ignores the metadata it is sent, so a status apply can
	// land on such an object; that object's own reconcile, which its
	// creation queues, then applies its status.)
	UID types.UID
	// Deleting reports whether metadata.deletionTimestamp is set: the
	// object is being deleted, and stays until its finalizers are gone.
	Deleting bool
	// Finalizers is metadata.finalizers.
	Finalizers []string
	// Annotations is metadata.annotations, where a failure scenario may be
	// carried.
	Annotations map[string]string
	// Status is the JSON encoding of the object's status, or nil when it
	// has none. It is a slice of JSON, shared with the cache: nothing may
	// modify it.
	Status []byte
	// JSON is the whole object, JSON-encoded: what the API server sent,
	// but for metadata.managedFields, which the cache doesn't hold. It is
	// shared with the cache: nothing may modify it.
	JSON []byte
}

// HasFinalizer reports whether finalizer is among o's finalizers.
func (o Object) HasFinalizer(finalizer string) bool {
	return slices.Contains(o.Finalizers, finalizer)
}

// ObjectSource reads objects from the controller's cache.
type ObjectSource interface {
	// Get returns the object key names, and false when the cache holds
	// none: it was deleted, or never existed. It returns an error only
	// when the cached object can't be read.
	Get(key Key) (obj Object, found bool, err error)
}

// Handler runs the end user's code on one object. The kube facade adapts
// each Reconciler and Finalize to it: it decodes obj.JSON into a new
// value of the end user's type, calls their function with it, and encodes
// the status it returns. A panic in either method is recovered by the
// domain, which calls them.
type Handler interface {
	// Reconcile brings the cluster to what obj declares. It returns the
	// object's status and when to reconcile it again; an error retries the
	// object with backoff, and the Result's Status is applied all the same.
	Reconcile(ctx context.Context, obj Object) (Result, error)
	// Finalize cleans up after obj, which is being deleted and is held by
	// the controller's finalizer. Once it returns nil, the finalizer is
	// removed; an error retries the object with backoff.
	Finalize(ctx context.Context, obj Object) error
}
