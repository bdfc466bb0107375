package informer

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// Snapshot returns a RelatedCache of c's resource that holds docs, each an
// object's JSON, as a watch that listed them would hold them, and never
// changes: synced from the start, with no informer, no client and no
// goroutine. It keeps what the API server would have sent and the cache
// kept: the objects in c.Namespaces (every namespace when nil) that c's
// LabelSelector and FieldSelector select, without managedFields, reshaped
// by c.Reshape, or as metadata alone when c.MetadataOnly. Reads then go
// through the code the watched cache's do.
//
// A field selector may name metadata.name and metadata.namespace, which
// every resource is selected by; the API server alone knows a resource's
// other fields. Snapshot fails, naming every mistake, for a selector that
// doesn't parse or names another field, a document that isn't an object
// with a name, two with the same namespace and name, and a Reshape that
// fails or panics.
func Snapshot(c RelatedConfig, docs [][]byte) (*RelatedCache, error) {
	var errs []error
	lsel, err := labels.Parse(c.LabelSelector)
	if err != nil {
		errs = append(errs, fmt.Errorf("the label selector %q: %w", c.LabelSelector, err))
	}
	fsel, err := fields.ParseSelector(c.FieldSelector)
	if err != nil {
		errs = append(errs, fmt.Errorf("the field selector %q: %w", c.FieldSelector, err))
	} else {
		for _, r := range fsel.Requirements() {
			if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
				errs = append(errs, fmt.Errorf("the field selector %q names %s: a snapshot selects by metadata.name and metadata.namespace alone", c.FieldSelector, r.Field))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s, _ := spreadOver(c.Namespaces, func(string) (*Related, error) {
		return &Related{c: c, static: cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})}, nil
	})
	rc := &RelatedCache{c: c, spread: s}
	for i, doc := range docs {
		o, err := snapshotObject(c, doc)
		if err != nil {
			errs = append(errs, fmt.Errorf("object %d: %w", i, err))
			continue
		}
		if len(c.Namespaces) > 0 && !slices.Contains(c.Namespaces, o.namespace) {
			continue
		}
		if !lsel.Matches(labels.Set(o.labels)) || !fsel.Matches(fields.Set{"metadata.name": o.name, "metadata.namespace": o.namespace}) {
			continue
		}
		rel, _ := rc.of(o.namespace)
		if _, found, _ := rel.static.Get(o); found {
			errs = append(errs, fmt.Errorf("object %d: %s/%s is there twice", i, o.namespace, o.name))
			continue
		}
		if err := rel.static.Add(o); err != nil {
			errs = append(errs, fmt.Errorf("object %d: %w", i, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rc, nil
}

// snapshotObject returns doc as a related cache of c holds it.
func snapshotObject(c RelatedConfig, doc []byte) (o *relatedObject, err error) {
	var u unstructured.Unstructured
	if err := json.Unmarshal(doc, &u.Object); err != nil {
		return nil, fmt.Errorf("not an object: %w", err)
	}
	if u.GetName() == "" {
		return nil, errors.New("the object has no name")
	}
	if c.MetadataOnly {
		m := metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}}
		if err := json.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("decoding the metadata: %w", err)
		}
		m.ManagedFields = nil
		md, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("encoding %s/%s: %w", m.Namespace, m.Name, err)
		}
		o = &relatedObject{keyMeta: keyMeta{namespace: m.Namespace, name: m.Name, resourceVersion: m.ResourceVersion}, labels: m.Labels, json: md}
	} else {
		labels := u.GetLabels()
		cached, err := compactUnstructured(&u)
		if err != nil {
			return nil, err
		}
		o = &relatedObject{keyMeta: cached.keyMeta, json: cached.json, labels: labels}
	}
	if c.Reshape == nil {
		return o, nil
	}
	defer func() {
		if p := recover(); p != nil {
			o, err = nil, fmt.Errorf("the transform of %s/%s panicked: %v", o.namespace, o.name, p)
		}
	}()
	reshaped, err := c.Reshape(o.json)
	if err != nil {
		return nil, fmt.Errorf("the transform of %s/%s: %w", o.namespace, o.name, err)
	}
	o.json = reshaped[:len(reshaped):len(reshaped)]
	return o, nil
}
