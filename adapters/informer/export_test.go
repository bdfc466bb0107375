package informer

import (
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// NewRelated returns the informer of rc's resource in c.Namespace, as
// NewWatch builds one of each namespace of rc.Namespaces, for the tests
// that measure a related cache alone: with no primary, so rc maps with
// Map only, and no recorder, so nothing in it may panic.
func NewRelated(d dynamic.Interface, m metadata.Interface, c Config, rc RelatedConfig) (*Related, error) {
	return newRelated(relatedSource{dynamic: d, metadata: m, config: c}, rc)
}
