package kube

import (
	"fmt"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/domain/owners"
)

// watchOf returns the informers of a Controller of t's objects, as
// settings and p say, drawn from cl's registry: the reconciled
// resource's, each Owns' and each Watches', with p's Indexes kept over
// the reconciled objects.
func watchOf(settings Settings, t target, p commonParts, cl clients, tel telemetry) (*informer.Watch, error) {
	namespaces, _ := watchedNamespaces(settings)
	related := make([]informer.RelatedConfig, len(p.related))
	for i, r := range p.related {
		related[i] = r.cache.related(namespaces, r.mapping)
		related[i].Filters = informerFilters(r.filters)
	}
	indexes := make([]informer.Index, len(p.indexes))
	for i, x := range p.indexes {
		indexes[i] = informer.Index{Name: x.indexName(), Keys: x.decodeKeys}
	}
	watch, err := informer.NewWatch(informer.WatchConfig{
		Dynamic: cl.dynamic, Metadata: cl.metadata, Resource: t.gvr, Owns: p.ownedConfigs(),
		LabelSelector: settings.LabelSelector, FieldSelector: settings.FieldSelector, Filters: informerFilters(p.filters),
		Owner:      owners.Owner{Group: t.gvr.Group, Kind: t.kind, Namespaced: t.scope == Namespaced},
		Namespaces: namespaces, Resync: settings.Resync,
		Related: related, Indexes: indexes, Recorder: tel.recorder, Logger: tel.logger,
		Registry: cl.informers, Shards: settings.Shards, ShardsNamespace: settings.LeaderElection.Namespace,
	})
	if err != nil {
		return nil, fmt.Errorf("kube: controller %s: %w", settings.Name, err)
	}
	return watch, nil
}

// bindHandles gives p's Caches and Indexes what they read from watch's
// informers, within the namespaces the Controller's settings name, and
// fails, binding none, when another Controller took one since partsOf
// checked it.
func bindHandles(name string, settings Settings, p commonParts, watch *informer.Watch) error {
	_, setting := watchedNamespaces(settings)
	var undo []func()
	unbindAll := func() {
		for _, u := range undo {
			u()
		}
	}
	stores := watch.Related()
	for i, r := range p.related {
		b := &informer.CacheBound{Controller: name, Namespaces: stores[i].Namespaces(), Setting: setting, Store: stores[i]}
		if !r.cache.bind(b) {
			unbindAll()
			return fmt.Errorf("kube: %v: given to another Controller at the same time as to %s", r.cache, name)
		}
		undo = append(undo, r.cache.unbind)
	}
	for _, x := range p.indexes {
		if !x.bind(&informer.IndexBound{Controller: name, Primary: watch.Primary()}) {
			unbindAll()
			return fmt.Errorf("kube: %v: given to another Controller at the same time as to %s", x, name)
		}
		undo = append(undo, x.unbind)
	}
	return nil
}
