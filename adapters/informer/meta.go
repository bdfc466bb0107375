package informer

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// keyMeta is the metadata every cached object keeps: its namespace and
// name, which make its key, and its resourceVersion, which tells a resync
// from a change. It implements metav1.Object, so that client-go's
// informer reads it through meta.Accessor, in a quarter of the heap of a
// metav1.ObjectMeta, whose thirty-odd fields a cache of thousands of
// objects would hold empty. Every field it doesn't keep reads as empty,
// and setting one does nothing: nothing sets a cached object's fields.
type keyMeta struct {
	namespace, name, resourceVersion string
}

var _ metav1.Object = (*keyMeta)(nil)

// GetNamespace returns the object's namespace.
func (m *keyMeta) GetNamespace() string { return m.namespace }

// SetNamespace sets the object's namespace.
func (m *keyMeta) SetNamespace(namespace string) { m.namespace = namespace }

// GetName returns the object's name.
func (m *keyMeta) GetName() string { return m.name }

// SetName sets the object's name.
func (m *keyMeta) SetName(name string) { m.name = name }

// GetResourceVersion returns the object's resourceVersion.
func (m *keyMeta) GetResourceVersion() string { return m.resourceVersion }

// SetResourceVersion sets the object's resourceVersion.
func (m *keyMeta) SetResourceVersion(version string) { m.resourceVersion = version }

// GetGenerateName returns "": the cache doesn't keep it.
func (*keyMeta) GetGenerateName() string { return "" }

// SetGenerateName does nothing: the cache doesn't keep it.
func (*keyMeta) SetGenerateName(string) {}

// GetUID returns "", unless the type embedding keyMeta keeps one.
func (*keyMeta) GetUID() types.UID { return "" }

// SetUID does nothing, unless the type embedding keyMeta keeps one.
func (*keyMeta) SetUID(types.UID) {}

// GetGeneration returns 0: the cache doesn't keep it.
func (*keyMeta) GetGeneration() int64 { return 0 }

// SetGeneration does nothing: the cache doesn't keep it.
func (*keyMeta) SetGeneration(int64) {}

// GetSelfLink returns "": the cache doesn't keep it.
func (*keyMeta) GetSelfLink() string { return "" }

// SetSelfLink does nothing: the cache doesn't keep it.
func (*keyMeta) SetSelfLink(string) {}

// GetCreationTimestamp returns the zero time: the cache doesn't keep it.
func (*keyMeta) GetCreationTimestamp() metav1.Time { return metav1.Time{} }

// SetCreationTimestamp does nothing: the cache doesn't keep it.
func (*keyMeta) SetCreationTimestamp(metav1.Time) {}

// GetDeletionTimestamp returns nil, unless the type embedding keyMeta
// keeps one.
func (*keyMeta) GetDeletionTimestamp() *metav1.Time { return nil }

// SetDeletionTimestamp does nothing, unless the type embedding keyMeta
// keeps one.
func (*keyMeta) SetDeletionTimestamp(*metav1.Time) {}

// GetDeletionGracePeriodSeconds returns nil: the cache doesn't keep it.
func (*keyMeta) GetDeletionGracePeriodSeconds() *int64 { return nil }

// SetDeletionGracePeriodSeconds does nothing: the cache doesn't keep it.
func (*keyMeta) SetDeletionGracePeriodSeconds(*int64) {}

// GetLabels returns nil: the cache doesn't keep them.
func (*keyMeta) GetLabels() map[string]string { return nil }

// SetLabels does nothing: the cache doesn't keep them.
func (*keyMeta) SetLabels(map[string]string) {}

// GetAnnotations returns nil, unless the type embedding keyMeta keeps
// them.
func (*keyMeta) GetAnnotations() map[string]string { return nil }

// SetAnnotations does nothing, unless the type embedding keyMeta keeps
// them.
func (*keyMeta) SetAnnotations(map[string]string) {}

// GetFinalizers returns nil, unless the type embedding keyMeta keeps
// them.
func (*keyMeta) GetFinalizers() []string { return nil }

// SetFinalizers does nothing, unless the type embedding keyMeta keeps
// them.
func (*keyMeta) SetFinalizers([]string) {}

// GetOwnerReferences returns nil: the cache keeps at most the key of the
// owner an owned object's controller reference names.
func (*keyMeta) GetOwnerReferences() []metav1.OwnerReference { return nil }

// SetOwnerReferences does nothing: the cache doesn't keep them.
func (*keyMeta) SetOwnerReferences([]metav1.OwnerReference) {}

// GetManagedFields returns nil: no cache keeps them.
func (*keyMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// SetManagedFields does nothing: no cache keeps them.
func (*keyMeta) SetManagedFields([]metav1.ManagedFieldsEntry) {}
