package informer

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A packed object implements metav1.Object, so that client-go's informer
// reads its key and resourceVersion through meta.Accessor, as keyMeta's
// do: every field its record doesn't keep reads as empty, and no setter
// changes anything, since nothing may change a cached object.
var _ metav1.Object = (*packed)(nil)

// GetNamespace returns the object's namespace.
func (p *packed) GetNamespace() string { return p.text(textNamespace) }

// SetNamespace does nothing: a packed object doesn't change.
func (*packed) SetNamespace(string) {}

// GetName returns the object's name.
func (p *packed) GetName() string { return p.text(textName) }

// SetName does nothing: a packed object doesn't change.
func (*packed) SetName(string) {}

// GetResourceVersion returns the object's resourceVersion.
func (p *packed) GetResourceVersion() string { return p.text(textResourceVersion) }

// SetResourceVersion does nothing: a packed object doesn't change.
func (*packed) SetResourceVersion(string) {}

// GetUID returns the object's uid.
func (p *packed) GetUID() types.UID { return types.UID(p.text(textUID)) }

// SetUID does nothing: a packed object doesn't change.
func (*packed) SetUID(types.UID) {}

// GetFinalizers returns a copy of the object's finalizers.
func (p *packed) GetFinalizers() []string {
	f, _ := p.lists()
	return f
}

// SetFinalizers does nothing: a packed object doesn't change.
func (*packed) SetFinalizers([]string) {}

// GetAnnotations returns a copy of the object's annotations.
func (p *packed) GetAnnotations() map[string]string {
	_, a := p.lists()
	return a
}

// SetAnnotations does nothing: a packed object doesn't change.
func (*packed) SetAnnotations(map[string]string) {}

// GetDeletionTimestamp returns a zero time when the object is being
// deleted, and nil otherwise: the cache keeps whether it is, not when.
func (p *packed) GetDeletionTimestamp() *metav1.Time {
	if p.deleting() {
		return &metav1.Time{}
	}
	return nil
}

// SetDeletionTimestamp does nothing: a packed object doesn't change.
func (*packed) SetDeletionTimestamp(*metav1.Time) {}

// GetGenerateName returns "": the record doesn't keep it.
func (*packed) GetGenerateName() string { return "" }

// SetGenerateName does nothing: a packed object doesn't change.
func (*packed) SetGenerateName(string) {}

// GetGeneration returns 0: the record doesn't keep it apart from the JSON.
func (*packed) GetGeneration() int64 { return 0 }

// SetGeneration does nothing: a packed object doesn't change.
func (*packed) SetGeneration(int64) {}

// GetSelfLink returns "": the record doesn't keep it.
func (*packed) GetSelfLink() string { return "" }

// SetSelfLink does nothing: a packed object doesn't change.
func (*packed) SetSelfLink(string) {}

// GetCreationTimestamp returns the zero time: the record doesn't keep it
// apart from the JSON.
func (*packed) GetCreationTimestamp() metav1.Time { return metav1.Time{} }

// SetCreationTimestamp does nothing: a packed object doesn't change.
func (*packed) SetCreationTimestamp(metav1.Time) {}

// GetDeletionGracePeriodSeconds returns nil: the record doesn't keep it.
func (*packed) GetDeletionGracePeriodSeconds() *int64 { return nil }

// SetDeletionGracePeriodSeconds does nothing: a packed object doesn't
// change.
func (*packed) SetDeletionGracePeriodSeconds(*int64) {}

// GetLabels returns nil: the record doesn't keep them apart from the JSON.
func (*packed) GetLabels() map[string]string { return nil }

// SetLabels does nothing: a packed object doesn't change.
func (*packed) SetLabels(map[string]string) {}

// GetOwnerReferences returns nil: the record doesn't keep them apart from
// the JSON, which an Owns that reads a whole store decodes.
func (*packed) GetOwnerReferences() []metav1.OwnerReference { return nil }

// SetOwnerReferences does nothing: a packed object doesn't change.
func (*packed) SetOwnerReferences([]metav1.OwnerReference) {}

// GetManagedFields returns nil: no cache keeps them.
func (*packed) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// SetManagedFields does nothing: a packed object doesn't change.
func (*packed) SetManagedFields([]metav1.ManagedFieldsEntry) {}
