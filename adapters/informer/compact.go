package informer

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// cached is an object of the primary resource as its cache holds it: the
// object's JSON, and the few metadata fields the informer and the domain
// read, decoded once. The dynamic client decodes each object into maps of
// interface values several times the size of its JSON; the transform
// replaces them with this, so the maps are garbage as soon as they are
// cached.
//
// Its ObjectMeta is what client-go's informer reads through meta.Accessor
// (namespace and name for the key, resourceVersion to tell a resync from a
// change) and what Get hands the domain (uid, deletionTimestamp,
// finalizers, annotations), and holds nothing else.
type cached struct {
	metav1.ObjectMeta
	// json is the whole object as the API server sent it, but for
	// metadata.managedFields. Nothing modifies it once the transform
	// returns: Get hands it out, and every copy of the object shares it.
	json []byte
	// status is the value of json's status member, a slice of json, or
	// nil when the object has none.
	status []byte
}

// GetObjectKind returns an empty kind: the object's apiVersion and kind are
// in its JSON, and nothing that reads the cache asks for them.
func (c *cached) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject returns a copy of c with metadata of its own. The copy
// shares c's JSON, which nothing modifies.
func (c *cached) DeepCopyObject() runtime.Object {
	return &cached{ObjectMeta: *c.DeepCopy(), json: c.json, status: c.status}
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
	c := &cached{ObjectMeta: metav1.ObjectMeta{
		Namespace:       u.GetNamespace(),
		Name:            u.GetName(),
		UID:             u.GetUID(),
		ResourceVersion: u.GetResourceVersion(),
		Finalizers:      u.GetFinalizers(),
		Annotations:     u.GetAnnotations(),
	}}
	if ts, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "deletionTimestamp"); found && ts != nil {
		// Any deletionTimestamp means the object is being deleted, even
		// one that doesn't parse as a time.
		c.DeletionTimestamp = u.GetDeletionTimestamp()
		if c.DeletionTimestamp == nil {
			c.DeletionTimestamp = &metav1.Time{}
		}
	}

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
		return nil, fmt.Errorf("encoding %s/%s: %w", c.Namespace, c.Name, err)
	}
	if !hasStatus {
		// Capped, so that appending to it can't write into the cache's.
		c.json = rest[:len(rest):len(rest)]
		return c, nil
	}
	s, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("encoding the status of %s/%s: %w", c.Namespace, c.Name, err)
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

// slimMetadata is the owned informers' transform: it keeps of a
// *metav1.PartialObjectMetadata only what the informer and the owned
// resources' handler read (namespace, name, uid, resourceVersion and the
// controller owner reference), so that no managedFields, labels,
// annotations or apiVersion and kind are cached for the object. It is
// idempotent, as client-go asks.
func slimMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	slim := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace:       m.Namespace,
		Name:            m.Name,
		UID:             m.UID,
		ResourceVersion: m.ResourceVersion,
	}}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		slim.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID, Controller: ref.Controller,
		}}
	}
	return slim, nil
}
