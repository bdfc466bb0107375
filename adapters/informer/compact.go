package informer

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// cached is an object of the primary resource as its cache holds it: the
// object's JSON, and the few metadata fields the informer and the domain
// read, decoded once. The dynamic client decodes each object into maps of
// interface values several times the size of its JSON; the cache holds
// this in their place.
//
// Its keyMeta is what client-go's informer reads through meta.Accessor
// (namespace and name for the key, resourceVersion to tell a resync from a
// change); its other fields are what Get hands the domain.
type cached struct {
	keyMeta
	uid         types.UID
	deleting    bool
	finalizers  []string
	annotations map[string]string
	// json is the whole object as the API server sent it, but for
	// metadata.managedFields. Nothing modifies it once it is cached: Get
	// hands it out, and every copy of the object shares it.
	json []byte
	// status is the value of json's status member, a slice of json, or
	// nil when the object has none.
	status []byte
}

// GetUID returns the object's uid.
func (c *cached) GetUID() types.UID { return c.uid }

// GetFinalizers returns the object's finalizers.
func (c *cached) GetFinalizers() []string { return c.finalizers }

// GetAnnotations returns the object's annotations.
func (c *cached) GetAnnotations() map[string]string { return c.annotations }

// GetDeletionTimestamp returns a zero time when the object is being
// deleted, and nil otherwise: the cache keeps whether it is, not when.
func (c *cached) GetDeletionTimestamp() *metav1.Time {
	if c.deleting {
		return &metav1.Time{}
	}
	return nil
}

// GetObjectKind returns an empty kind: the object's apiVersion and kind are
// in its JSON, and nothing that reads the cache asks for them.
func (c *cached) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject returns a copy of c with metadata of its own. The copy
// shares c's JSON, which nothing modifies.
func (c *cached) DeepCopyObject() runtime.Object {
	cp := *c
	cp.finalizers = slices.Clone(c.finalizers)
	cp.annotations = maps.Clone(c.annotations)
	return &cp
}

// compact is the primary informer's transform: it replaces the
// *unstructured.Unstructured the dynamic client decoded with a *cached,
// whose JSON leaves metadata.managedFields out. The transform sees each
// object before anything else does, so it may take the object apart. It
// is idempotent, as client-go asks: a *cached, which the watch-list's
// store hands it a second time, is returned as it is.
func compact(obj any) (any, error) {
	switch o := obj.(type) {
	case *cached:
		return o, nil
	case *unstructured.Unstructured:
		return compactUnstructured(o)
	default:
		return nil, fmt.Errorf("the primary informer was handed a %T, not an *unstructured.Unstructured", obj)
	}
}

// compactUnstructured returns u as the cache holds it. It fails only when
// u holds a value JSON can't encode, which no decoded object does.
func compactUnstructured(u *unstructured.Unstructured) (*cached, error) {
	c := &cached{
		keyMeta:     keyMeta{namespace: u.GetNamespace(), name: u.GetName(), resourceVersion: u.GetResourceVersion()},
		uid:         u.GetUID(),
		finalizers:  u.GetFinalizers(),
		annotations: u.GetAnnotations(),
	}
	// Any deletionTimestamp means the object is being deleted, even one
	// that doesn't parse as a time.
	ts, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "deletionTimestamp")
	c.deleting = found && ts != nil

	if md, ok := u.Object["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
	// The status is encoded apart and appended last, so that it is a
	// slice of the JSON, and the domain reads it with no encoding of its
	// own.
	status, hasStatus := u.Object["status"]
	hasStatus = hasStatus && status != nil
	if hasStatus {
		delete(u.Object, "status")
	}
	rest, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding %s/%s: %w", c.namespace, c.name, err)
	}
	if !hasStatus {
		// Capped, so that appending to it can't write into the cache's.
		c.json = rest[:len(rest):len(rest)]
		return c, nil
	}
	s, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("encoding the status of %s/%s: %w", c.namespace, c.name, err)
	}
	const member = `"status":`
	// rest is {} or {...}: the status goes before its closing brace. One
	// allocation of the exact size, so the cache holds no spare capacity.
	doc := make([]byte, 0, len(rest)+1+len(member)+len(s))
	doc = append(doc, rest[:len(rest)-1]...)
	if len(rest) > 2 {
		doc = append(doc, ',')
	}
	doc = append(doc, member...)
	start := len(doc)
	doc = append(doc, s...)
	end := len(doc)
	doc = append(doc, '}')
	c.json = doc
	// Capped, so that appending to the status can't write into the JSON.
	c.status = doc[start:end:end]
	return c, nil
}

// owned is an object of an owned resource as its cache holds it: its key
// and resourceVersion, and the key of the object of the controller's kind
// its controller owner reference names, which is all the owned resources'
// handler reads, unless it filters updates.
type owned struct {
	keyMeta
	// controller is the object's controller owner reference, alone, nil
	// when it has none: each Owns that reads the store finds in it an
	// owner of its own kind, or none, so the store serves them all.
	controller []metav1.OwnerReference
	// json is the object's metadata, as a PartialObjectMetadata, but for
	// managedFields, which the Owns' filters and the metadata-only Caches
	// read; nil when the store keeps no metadata, so that the cost of
	// keeping it is paid only when a consumer of the store reads it.
	json []byte
}

// GetObjectKind returns an empty kind: nothing that reads the cache asks
// for it.
func (o *owned) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject returns a copy of o.
func (o *owned) DeepCopyObject() runtime.Object {
	cp := *o
	return &cp
}

// slimOwned returns the owned informers' transform: it keeps of a
// *metav1.PartialObjectMetadata only what the informer and the owned
// resources' handlers read, its key and its controller owner reference,
// so that no managedFields, labels, annotations or other owner
// references are cached for the object, unless keepMeta asks for its
// metadata, as JSON, which filters and metadata-only Caches read;
// managedFields are dropped even then. It
// is idempotent, as client-go asks.
func slimOwned(keepMeta bool) func(obj any) (any, error) {
	return func(obj any) (any, error) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return obj, nil
		}
		o := &owned{keyMeta: keyMeta{namespace: m.Namespace, name: m.Name, resourceVersion: m.ResourceVersion}}
		for _, ref := range m.OwnerReferences {
			// The API server allows one controller reference per object.
			if ref.Controller != nil && *ref.Controller {
				ref.BlockOwnerDeletion = nil
				o.controller = []metav1.OwnerReference{ref}
				break
			}
		}
		if keepMeta {
			cp := *m
			cp.ManagedFields = nil
			doc, err := json.Marshal(&cp)
			if err != nil {
				return nil, fmt.Errorf("encoding %s/%s: %w", m.Namespace, m.Name, err)
			}
			o.json = doc[:len(doc):len(doc)]
		}
		return o, nil
	}
}
