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
// the snapshot refuses it (see informer.Snapshot).
func (c *Cache[T]) Snapshot(_ sealed.Token, settings Settings, objs []T) (func(), error) {
	if c == nil {
		return nil, errors.New("kube: the Cache is nil")
	}
	if errs := c.cacheMistakes(); len(errs) > 0 {
		return nil, fmt.Errorf("kube: %v: %w", c, errors.Join(errs...))
	}
	docs := make([][]byte, 0, len(objs))
	for i, o := range objs {
		doc, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("kube: %v: encoding object %d: %w", c, i, err)
		}
		docs = append(docs, doc)
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
