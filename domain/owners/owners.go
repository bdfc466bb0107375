// Package owners maps a change to a resource a controller owns to the
// object that controls it, by the resource's controller owner reference.
package owners

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/ports"
)

// Owner is the kind of object a controller reconciles, as its owned
// resources' owner references name it.
type Owner struct {
	// Group is the kind's API group, "" for the core group.
	Group string
	// Kind is the kind's name, such as Memcached.
	Kind string
	// Namespaced reports whether the kind's objects are namespaced. A
	// namespaced resource may be controlled by a cluster-scoped object, as
	// a NetworkPolicy by its Namespace, but never the other way round.
	Namespaced bool
}

// Key returns the key of the object that controls a resource in namespace
// ("" for a cluster-scoped one) with the owner references refs, and false
// when it isn't one of o's: when no reference has controller: true, or the
// one that has names another group or kind. The reference's version isn't
// compared, so a controller still finds its objects across a version
// change.
func (o Owner) Key(namespace string, refs []metav1.OwnerReference) (ports.Key, bool) {
	key, _, ok := o.Controller(namespace, refs)
	return key, ok
}

// Controller returns what Key does, and the uid of the controlling
// object, which a sharded controller's shards are cut by.
func (o Owner) Controller(namespace string, refs []metav1.OwnerReference) (ports.Key, types.UID, bool) {
	for _, ref := range refs {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		// The API server allows one controller reference per object, so
		// this is the only one to look at.
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != o.Group || ref.Kind != o.Kind || ref.Name == "" {
			return ports.Key{}, "", false
		}
		if !o.Namespaced {
			return ports.Key{Name: ref.Name}, ref.UID, true
		}
		if namespace == "" {
			return ports.Key{}, "", false
		}
		return ports.Key{Namespace: namespace, Name: ref.Name}, ref.UID, true
	}
	return ports.Key{}, "", false
}
