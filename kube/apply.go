package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/adapters/apply"
	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
)

// ApplyOptions says how Resource.Apply applies an object.
type ApplyOptions struct {
	// FieldManager is the field manager the apply is made under, which
	// then owns every field the apply declares; the API server takes at
	// most 128 printable characters. Inside a reconcile, "" is the
	// controller's name, Settings.Name, under which it applies the
	// statuses it returns, for any object but the one being reconciled.
	// That object itself must be applied under another field manager,
	// given here: the controller's own applies of its metadata under
	// Settings.Name (the finalizer's) would remove what an apply under
	// that name declared, so Apply refuses it. Outside a reconcile it is
	// required.
	FieldManager string
	// Owner, unless zero, is the object's controller: Apply adds an owner
	// reference to it, with controller and blockOwnerDeletion true, to the
	// object's own owner references. Resource.Owner, Kind.Owner and
	// OwnerOf make one from the owning object.
	Owner Owner
}

// Owner is the object that controls another, as Resource.Apply names it
// in the other's owner references. The garbage collector deletes the
// controlled object once its Owner is gone, a foreground deletion of the
// Owner waits for it, and a Controller of the Owner's resource with Owns
// of the controlled object's reconciles the Owner when it changes. The
// zero Owner is none.
type Owner struct {
	// APIVersion is the Owner's group and version, such as
	// cache.example.com/v1alpha1, or v1 for the core group.
	APIVersion string
	// Kind is the Owner's kind, such as Memcached.
	Kind string
	// Name is the Owner's name.
	Name string
	// UID is the Owner's uid, which tells it from an object created later
	// under its name: the garbage collector deletes an object whose
	// Owner's uid is no longer there.
	UID types.UID
	// Namespace is the Owner's namespace, "" for a cluster-scoped Owner.
	// An owner reference has no namespace: it names an object in the
	// controlled object's own. So Apply checks it, and sends it nowhere.
	Namespace string
}

// IsZero reports whether o is the zero Owner: none.
func (o Owner) IsZero() bool { return o == Owner{} }

// Owner returns obj, one of r's objects, as the Owner of the objects it
// controls, with r's group, version and kind whatever obj's own apiVersion
// and kind say.
func (r Resource[Spec, Status]) Owner(obj Object[Spec, Status]) Owner {
	return Owner{
		APIVersion: schema.GroupVersion{Group: r.Group, Version: r.Version}.String(),
		Kind:       r.Kind,
		Name:       obj.Name,
		UID:        obj.UID,
		Namespace:  obj.Namespace,
	}
}

// Owner returns obj, one of k's objects, as the Owner of the objects it
// controls, with k's group, version and kind. A T whose pointer isn't a
// metav1.Object gives an Owner with no name and no uid, which Apply
// reports.
func (k Kind[T]) Owner(obj T) Owner {
	o := Owner{APIVersion: k.GVR.GroupVersion().String(), Kind: k.Kind}
	if m, ok := any(&obj).(metav1.Object); ok {
		o.Name, o.UID, o.Namespace = m.GetName(), m.GetUID(), m.GetNamespace()
	}
	return o
}

// OwnerOf returns obj, an object of the group, version and kind gvk, as the
// Owner of the objects it controls: for an owner of neither a Resource nor
// a Kind of the program's. A nil obj gives an Owner with no name and no
// uid, which Apply reports.
func OwnerOf(obj metav1.Object, gvk schema.GroupVersionKind) Owner {
	o := Owner{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
	if !isNil(obj) {
		o.Name, o.UID, o.Namespace = obj.GetName(), obj.GetUID(), obj.GetNamespace()
	}
	return o
}

// Apply applies obj, one of r's objects, with server-side apply through c
// under opts.FieldManager, creating the object if it doesn't exist, and
// returns the object as the API server stored it, its status included.
//
// The apply declares, and so its field manager owns, exactly what it
// sends: r's apiVersion and kind, whatever obj's say; of obj's metadata,
// its name, namespace, labels, annotations, owner references (with
// opts.Owner's added) and finalizers; and obj.Spec, as encoding/json
// encodes it. A field encoding/json writes is claimed, and set, whatever
// its value, so a field without omitempty or omitzero is claimed even
// when it holds its zero value. A field with omitempty or omitzero left
// zero isn't written, so it isn't claimed: another field manager may own
// it, and a field this manager claimed in an earlier apply and no longer
// writes is removed from the object, unless another manager owns it too.
// The rest of obj's metadata — uid, resourceVersion, generation,
// creationTimestamp, managedFields and the like — is the API server's,
// and is never sent, so an object Apply returned may be changed and
// applied again. obj.Status is never sent either: the status belongs to
// the controller of r's objects, which applies it to the status
// subresource, and the API server ignores a status sent with the object.
//
// The apply forces conflicts: a field another manager set is taken over,
// as a controller bringing its object to what it declares must.
//
// The request goes through c's transport, so it is traced, it is an
// injection point named kube:<plural>.<group>:patch, and in a reconcile
// that carries a scenario, an object whose Owner is the reconciled object
// gets the scenario in the reconcile's TrustScenario annotation.
//
// In a reconcile, opts.FieldManager defaults to the controller's
// Settings.Name, and obj may not be the reconciled object under that
// name: see ApplyOptions.FieldManager. obj is the reconciled object when
// it has the reconciled object's uid, or its namespace and name and r its
// group and kind.
//
// Apply first checks r, c, obj and opts, and sends nothing when any is
// wrong: it returns one error naming the object and every mistake — r
// missing its Group, Version, Kind or Plural or with a Scope that is
// neither Namespaced nor Cluster; a nil c; obj without a name, without a
// namespace when r is namespaced or with one when r is cluster-scoped,
// with a name or namespace that can't be a path segment, with an
// apiVersion or kind other than r's, or with a spec encoding/json can't
// encode; opts with an empty (outside a reconcile, or for the reconciled
// object) or invalid FieldManager, or Settings.Name for the reconciled
// object; an Owner without an
// APIVersion, Kind, Name or UID, in another namespace than obj (whose
// owner reference the garbage collector treats as gone, deleting obj), or
// namespaced when r is cluster-scoped (which the garbage collector never
// resolves); and an Owner besides a controller reference in obj's own
// owner references, or one of them naming the Owner already. Otherwise
// its error is the API server's, as an *apierrors.StatusError that
// apierrors.IsConflict and the like read, wrapped with the object's name.
func (r Resource[Spec, Status]) Apply(ctx context.Context, c *Client, obj Object[Spec, Status], opts ApplyOptions) (Object[Spec, Status], error) {
	key := ports.Key{Namespace: obj.Namespace, Name: obj.Name}
	// The errors' prefix, written only when there is an error: an apply
	// that succeeds has no use for it.
	what := applyWhat{r.Group, r.name(), key}

	opts, own := r.managedBy(ctx, obj, opts)
	doc, mistakes := r.applyBody(c, obj, opts)
	mistakes = append(mistakes, own...)
	if len(mistakes) > 0 {
		errs := make([]error, len(mistakes))
		for i, m := range mistakes {
			errs[i] = fmt.Errorf("%s: %w", what, m)
		}
		return Object[Spec, Status]{}, errors.Join(errs...)
	}
	applies, err := c.applies()
	if err != nil {
		return Object[Spec, Status]{}, fmt.Errorf("%s: the apply client: %w", what, err)
	}
	w, err := apply.New(apply.Config{Client: applies, GVR: r.GVR(), Kind: r.Kind, FieldManager: opts.FieldManager})
	if err != nil {
		return Object[Spec, Status]{}, fmt.Errorf("%s: %w", what, err)
	}
	answer, err := w.ApplyObject(ctx, key, doc)
	if err != nil {
		return Object[Spec, Status]{}, fmt.Errorf("%s: %w", what, err)
	}
	var stored Object[Spec, Status]
	if err := json.Unmarshal(answer, &stored); err != nil {
		return Object[Spec, Status]{}, fmt.Errorf("%s: decoding the object the API server stored: %w", what, err)
	}
	return stored, nil
}

// applyWhat names the object of an apply in its errors, as
// "kube: apply of <kind>.<group> \"<namespace>/<name>\"".
type applyWhat struct {
	group, kind string
	key         ports.Key
}

// String is the prefix of the apply's errors.
func (w applyWhat) String() string {
	return fmt.Sprintf("kube: apply of %s %q", schema.GroupKind{Group: w.group, Kind: w.kind}, w.key)
}

// managedBy returns opts with the field manager an apply of obj in ctx
// is made under, as reconcile.FieldManager decides it, and its mistake.
func (r Resource[Spec, Status]) managedBy(ctx context.Context, obj Object[Spec, Status], opts ApplyOptions) (ApplyOptions, []error) {
	key := ports.Key{Namespace: obj.Namespace, Name: obj.Name}
	manager, err := reconcile.FieldManager(ctx, opts.FieldManager, key, obj.UID, schema.GroupKind{Group: r.Group, Kind: r.Kind})
	if err != nil {
		return opts, []error{err}
	}
	opts.FieldManager = manager
	return opts, nil
}

// applyBody is the body of an apply: what Resource.Apply declares of an
// object, and nothing else.
type applyBody[Spec any] struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Metadata   applyMetadata `json:"metadata"`
	// Spec is tagged as Object's, so it is written as the object's is.
	Spec Spec `json:"spec"`
}

// applyMetadata is the metadata an apply declares: the fields of
// metav1.ObjectMeta that are the object's writers', tagged as they are
// there.
type applyMetadata struct {
	Name            string                  `json:"name"`
	Namespace       string                  `json:"namespace,omitempty"`
	Labels          map[string]string       `json:"labels,omitempty"`
	Annotations     map[string]string       `json:"annotations,omitempty"`
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences,omitempty"`
	Finalizers      []string                `json:"finalizers,omitempty"`
}

// applyBody returns the JSON of the apply of obj, or every mistake that
// keeps r's obj from being applied through c as opts say.
func (r Resource[Spec, Status]) applyBody(c *Client, obj Object[Spec, Status], opts ApplyOptions) ([]byte, []error) {
	var errs []error
	for _, m := range r.controllerMistakes() {
		errs = append(errs, fmt.Errorf("the Resource: %w", m))
	}
	if c == nil {
		errs = append(errs, errors.New("the Client is nil"))
	}
	errs = append(errs, r.objectMistakes(obj)...)
	if opts.FieldManager == "" {
		errs = append(errs, errors.New("ApplyOptions.FieldManager is empty: every apply is made under a field manager, which owns the fields it declares"))
	}
	for _, e := range metav1validation.ValidateFieldManager(opts.FieldManager, field.NewPath("ApplyOptions", "FieldManager")) {
		errs = append(errs, errors.New(e.Error()))
	}
	errs = append(errs, r.ownerMistakes(obj, opts.Owner)...)

	refs := slices.Clone(obj.OwnerReferences)
	if !opts.Owner.IsZero() {
		refs = append(refs, metav1.OwnerReference{
			APIVersion: opts.Owner.APIVersion, Kind: opts.Owner.Kind, Name: opts.Owner.Name, UID: opts.Owner.UID,
			Controller: new(true), BlockOwnerDeletion: new(true),
		})
	}
	doc, err := json.Marshal(applyBody[Spec]{
		APIVersion: schema.GroupVersion{Group: r.Group, Version: r.Version}.String(),
		Kind:       r.Kind,
		Metadata: applyMetadata{
			Name: obj.Name, Namespace: obj.Namespace,
			Labels: obj.Labels, Annotations: obj.Annotations,
			OwnerReferences: refs, Finalizers: obj.Finalizers,
		},
		Spec: obj.Spec,
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("encoding the object: %w", err))
	}
	return doc, errs
}

// objectMistakes returns what is wrong with obj as one of r's objects.
func (r Resource[Spec, Status]) objectMistakes(obj Object[Spec, Status]) []error {
	var errs []error
	if obj.Name == "" {
		errs = append(errs, errors.New("the object has no name: an apply names the object it creates or changes"))
	}
	for _, f := range []struct{ what, value string }{{"name", obj.Name}, {"namespace", obj.Namespace}} {
		for _, msg := range rest.IsValidPathSegmentName(f.value) {
			errs = append(errs, fmt.Errorf("the object's %s %q is no path segment: %s", f.what, f.value, msg))
		}
	}
	switch {
	case r.Scope == Namespaced && obj.Namespace == "":
		errs = append(errs, fmt.Errorf("the object has no namespace, and %s is namespaced", r.name()))
	case r.Scope == Cluster && obj.Namespace != "":
		errs = append(errs, fmt.Errorf("the object is in the namespace %q, and %s is cluster-scoped: want none", obj.Namespace, r.name()))
	}
	// r's apiVersion, written only to compare with the object's own.
	if obj.APIVersion != "" {
		if want := (schema.GroupVersion{Group: r.Group, Version: r.Version}).String(); obj.APIVersion != want {
			errs = append(errs, fmt.Errorf("the object's apiVersion is %q, and %s's is %q", obj.APIVersion, r.name(), want))
		}
	}
	if obj.Kind != "" && obj.Kind != r.Kind {
		errs = append(errs, fmt.Errorf("the object's kind is %q, and %s's is %q", obj.Kind, r.name(), r.Kind))
	}
	return errs
}

// ownerMistakes returns what is wrong with o as the Owner of obj, one of
// r's objects, or nothing when o is zero.
func (r Resource[Spec, Status]) ownerMistakes(obj Object[Spec, Status], o Owner) []error {
	if o.IsZero() {
		return nil
	}
	errs := o.fieldMistakes()
	switch {
	case o.Namespace != "" && r.Scope == Cluster:
		errs = append(errs, fmt.Errorf("the Owner is in the namespace %q, and %s is cluster-scoped: a cluster-scoped object's owner is cluster-scoped too, or the garbage collector never resolves it", o.Namespace, r.name()))
	case o.Namespace != "" && o.Namespace != obj.Namespace:
		errs = append(errs, fmt.Errorf("the Owner is in the namespace %q, and the object in %q: an owner reference names an object in the object's own namespace, so the garbage collector would find no Owner and delete the object", o.Namespace, obj.Namespace))
	}
	for i, ref := range obj.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			errs = append(errs, fmt.Errorf("the object's ownerReferences[%d] is a controller reference already, to %s %q, and an object has one controller: leave the Owner zero or the reference out", i, ref.Kind, ref.Name))
		}
		if o.UID != "" && ref.UID == o.UID {
			errs = append(errs, fmt.Errorf("the object's ownerReferences[%d] names the Owner already: leave the reference out", i))
		}
	}
	return errs
}
