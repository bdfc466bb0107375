package kube

import (
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// ControllerReference returns o as the controller reference of an object
// in namespace ("" for a cluster-scoped object): an owner reference with
// o's apiVersion, kind, name and uid, and controller and
// blockOwnerDeletion true, as Resource.Apply adds it. The garbage
// collector deletes the object once o is gone, a foreground deletion of o
// waits for it, and a Controller of o's resource with Owns of the object's
// reconciles o when the object changes.
//
// It fails, naming every mistake in one error, when o is zero or has no
// APIVersion, Kind, Name or UID, when its APIVersion doesn't parse, when
// o is in another namespace than namespace (the garbage collector would
// find no owner there, and delete the object), and when o is namespaced
// and namespace is "" (a cluster-scoped object's owner is cluster-scoped
// too, or the garbage collector never resolves it).
func (o Owner) ControllerReference(namespace string) (metav1.OwnerReference, error) {
	if errs := o.referenceMistakes(namespace); len(errs) > 0 {
		return metav1.OwnerReference{}, o.joined("kube: the controller reference", errs)
	}
	return o.reference(), nil
}

// ApplyConfiguration returns o as the controller reference of an object
// in namespace, as ControllerReference does, in the form client-go's
// apply configurations take, such as
// appsv1ac.Deployment(name, namespace).WithOwnerReferences(ref): the
// fields it sets are the ones the apply then claims. It fails as
// ControllerReference does.
func (o Owner) ApplyConfiguration(namespace string) (*metav1ac.OwnerReferenceApplyConfiguration, error) {
	ref, err := o.ControllerReference(namespace)
	if err != nil {
		return nil, err
	}
	return metav1ac.OwnerReference().
		WithAPIVersion(ref.APIVersion).WithKind(ref.Kind).WithName(ref.Name).WithUID(ref.UID).
		WithController(true).WithBlockOwnerDeletion(true), nil
}

// SetControllerReference makes o the controller of obj, as
// controller-runtime's function of the name does: it sets, in obj's owner
// references, o's controller reference (see ControllerReference),
// replacing each reference that names o already — by its uid, or, as
// controller-runtime does, by its group, kind and name, such as one to an
// earlier object of o's name that the garbage collector hasn't resolved —
// and leaving every other as it is. obj is then written by the caller, with
// client-go's typed clients or an update.
//
// It changes nothing and fails, naming obj and every mistake in one
// error, when obj is nil, when o is wrong as ControllerReference says
// (obj's own namespace is the one checked), and when another of obj's
// owner references is a controller reference already, an
// *AlreadyOwnedError that errors.As finds: an object has one controller,
// and the garbage collector and Owns follow only it.
func SetControllerReference(obj metav1.Object, o Owner) error {
	if isNil(obj) {
		return errors.New("kube: SetControllerReference: the object is nil")
	}
	what := fmt.Sprintf("kube: SetControllerReference of %T %q", obj, Key{Namespace: obj.GetNamespace(), Name: obj.GetName()})
	errs := o.referenceMistakes(obj.GetNamespace())
	refs := obj.GetOwnerReferences()
	at := -1
	var kept []metav1.OwnerReference
	for i, ref := range refs {
		switch {
		case o.names(ref):
			if at < 0 {
				at = len(kept)
			}
			continue
		case ref.Controller != nil && *ref.Controller:
			errs = append(errs, &AlreadyOwnedError{Object: Key{Namespace: obj.GetNamespace(), Name: obj.GetName()}, Index: i, Owner: ref})
		}
		kept = append(kept, ref)
	}
	if len(errs) > 0 {
		return o.joined(what, errs)
	}
	if at < 0 {
		at = len(kept)
	}
	obj.SetOwnerReferences(slices.Insert(kept, at, o.reference()))
	return nil
}

// names reports whether ref names o: by its uid, or by its group, kind
// and name, as controller-runtime matches a reference, so a reference to
// an earlier object of o's name (deleted and made again, with a new uid)
// or of another version of o's resource is o's, not another controller.
func (o Owner) names(ref metav1.OwnerReference) bool {
	if o.UID != "" && ref.UID == o.UID {
		return true
	}
	refGV, err1 := schema.ParseGroupVersion(ref.APIVersion)
	ownerGV, err2 := schema.ParseGroupVersion(o.APIVersion)
	return err1 == nil && err2 == nil && o.Name != "" && refGV.Group == ownerGV.Group && ref.Kind == o.Kind && ref.Name == o.Name
}

// AlreadyOwnedError is the mistake SetControllerReference reports for an
// object that another controls already, as controller-runtime's
// AlreadyOwnedError is: errors.As finds it in the error, so a Reconciler
// can tell an object someone else made, such as a Deployment of the same
// name, which it reports, from a mistake of its own code.
type AlreadyOwnedError struct {
	// Object is the object's namespace and name.
	Object Key
	// Index is the controller reference's place in the object's
	// ownerReferences.
	Index int
	// Owner is the controller reference the object has.
	Owner metav1.OwnerReference
}

// Error names the reference and its controller.
func (e *AlreadyOwnedError) Error() string {
	return fmt.Sprintf("its ownerReferences[%d] makes %s %s %q its controller already, and an object has one controller", e.Index, e.Owner.APIVersion, e.Owner.Kind, e.Owner.Name)
}

// reference is o's controller reference, unchecked.
func (o Owner) reference() metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID,
		Controller: new(true), BlockOwnerDeletion: new(true),
	}
}

// referenceMistakes returns what keeps o from controlling an object in
// namespace: a missing or malformed field, and a namespace the garbage
// collector would misread.
func (o Owner) referenceMistakes(namespace string) []error {
	if o.IsZero() {
		return []error{errors.New("the Owner is zero: make one with Resource.Owner, Kind.Owner or kube.OwnerOf")}
	}
	errs := o.fieldMistakes()
	switch {
	case o.Namespace != "" && namespace == "":
		errs = append(errs, fmt.Errorf("the Owner %s %q is in the namespace %q, and the object is cluster-scoped: a cluster-scoped object's owner is cluster-scoped too, or the garbage collector never resolves it", o.Kind, o.Name, o.Namespace))
	case o.Namespace != "" && o.Namespace != namespace:
		errs = append(errs, fmt.Errorf("the Owner %s %q is in the namespace %q, and the object in %q: an owner reference names an object in the object's own namespace, so the garbage collector would find no owner and delete the object", o.Kind, o.Name, o.Namespace, namespace))
	}
	return errs
}

// joined prefixes each of errs with what and joins them.
func (Owner) joined(what string, errs []error) error {
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = fmt.Errorf("%s: %w", what, e)
	}
	return errors.Join(out...)
}

// fieldMistakes returns o's missing or malformed fields: an owner
// reference needs all four, and the garbage collector reads the group of
// its APIVersion.
func (o Owner) fieldMistakes() []error {
	var errs []error
	if o.APIVersion == "" {
		errs = append(errs, errors.New("the Owner has no APIVersion"))
	} else if _, err := schema.ParseGroupVersion(o.APIVersion); err != nil {
		errs = append(errs, fmt.Errorf("the Owner's APIVersion: %w", err))
	}
	for _, f := range []struct{ what, value string }{{"Kind", o.Kind}, {"Name", o.Name}, {"UID", string(o.UID)}} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("the Owner has no %s", f.what))
		}
	}
	return errs
}
