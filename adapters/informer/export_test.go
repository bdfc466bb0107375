package informer

import (
	"slices"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// NewRelated returns the informer of rc's resource in c.Namespace, as
// NewWatch builds one of each namespace of rc.Namespaces, for the tests
// that measure a related cache alone: with no primary, so rc maps with
// Map only, and no recorder, so nothing in it may panic.
func NewRelated(d dynamic.Interface, m metadata.Interface, c Config, rc RelatedConfig) (*Related, error) {
	r := newRelated(relatedSource{dynamic: d, metadata: m, config: c}, rc)
	if err := r.standalone(); err != nil {
		return nil, err
	}
	return r, nil
}

// Running returns the number of informers r runs.
func (r *Registry) Running() int { return r.running() }

// Stored returns the keys of the objects each store the Watch drew from
// its Registry holds, sorted, by resource: its Owns' and its related
// caches', and, in an unsharded Watch, its primaries'. A sharded Watch
// draws none of its primaries: their informers are its own, or its held
// shards'.
func (w *Watch) Stored() map[string][]string {
	out := map[string][]string{}
	for _, e := range w.acquired {
		r := e.key.gvr.Resource
		out[r] = append(out[r], e.informer.GetStore().ListKeys()...)
	}
	for _, keys := range out {
		slices.Sort(keys)
	}
	return out
}
