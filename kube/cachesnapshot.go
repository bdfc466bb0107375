package kube

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/internal/sealed"
)

// Snapshot fills c with objs for good, as a Controller with settings
// would fill it had it listed them, and returns what empties it again. It
// is kube/cachetest's, which documents it: a program outside loam can't
// name the token, and fills a Cache with cachetest.Fill.
//
// It fails, filling nothing, when c wasn't made by NewCache or
// NewResourceCache, has a mistake NewController would report, is watched
// by a Controller or filled already, or when an object doesn't encode or
// the snapshot refuses it (see informer.Snapshot), or when an object of a
// namespaced resource has no namespace, or one of a cluster-scoped
// resource has one: the API server holds no such object, so no watched
// cache would.
func (c *Cache[T]) Snapshot(_ sealed.Token, settings Settings, objs []T) (func(), error) {
	if c == nil {
		return nil, errors.New("kube: the Cache is nil")
	}
	if errs := c.cacheMistakes(); len(errs) > 0 {
		return nil, fmt.Errorf("kube: %v: %w", c, errors.Join(errs...))
	}
	docs := make([][]byte, 0, len(objs))
	var errs []error
	for i, o := range objs {
		doc, err := json.Marshal(o)
		if err != nil {
			errs = append(errs, fmt.Errorf("kube: %v: encoding object %d: %w", c, i, err))
			continue
		}
		if err := c.scopeMistake(doc); err != nil {
			errs = append(errs, fmt.Errorf("kube: %v: object %d: %w", c, i, err))
		}
		docs = append(docs, doc)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	namespaces, setting := watchedNamespaces(settings)
	store, err := informer.Snapshot(c.related(namespaces, Mapping{}), docs)
	if err != nil {
		return nil, fmt.Errorf("kube: %v: %w", c, err)
	}
	name := settings.Name
	if name == "" {
		name = "cachetest"
	}
	if !c.bind(&informer.CacheBound{Controller: name, Namespaces: store.Namespaces(), Setting: setting, Store: store}) {
		return nil, fmt.Errorf("kube: %v is watched by a Controller, or filled already", c)
	}
	return c.unbind, nil
}

// scopeMistake returns what keeps doc, an object's JSON, from being one
// of c's resource as the API server holds them: a namespace for a
// cluster-scoped resource, none for a namespaced one. A test object
// without its namespace would otherwise be left out of every namespace's
// reads, or be read in none.
func (c *Cache[T]) scopeMistake(doc []byte) error {
	var meta struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(doc, &meta); err != nil {
		return fmt.Errorf("decoding its metadata: %w", err)
	}
	switch m := meta.Metadata; {
	case c.scope == Namespaced && m.Namespace == "":
		return fmt.Errorf("%q has no namespace, and %s is namespaced", m.Name, c.gvr.GroupResource())
	case c.scope == Cluster && m.Namespace != "":
		return fmt.Errorf("%q is in the namespace %q, and %s is cluster-scoped", m.Name, m.Namespace, c.gvr.GroupResource())
	}
	return nil
}
