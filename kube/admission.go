package kube

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/loam-dev/loam/domain/jsonpatch"
	"github.com/loam-dev/loam/ports"
)

// Operation is what an admission request does to its object, as the API
// server names it.
type Operation string

// The operations a webhook can admit.
const (
	// Create is the creation of an object.
	Create Operation = ports.OperationCreate
	// Update is a change to an object, its status included.
	Update Operation = ports.OperationUpdate
	// Delete is the deletion of an object.
	Delete Operation = ports.OperationDelete
	// Connect is a connection to a subresource, such as a Pod's exec.
	Connect Operation = ports.OperationConnect
)

// Admission is one admission request as a typed handler sees it: what is
// done, to which object, by whom.
type Admission[T any] struct {
	// Operation is Create, Update, Delete or Connect.
	Operation Operation
	// Object is the object as it would be stored: the zero T on a Delete.
	// A subresource's request carries its own object, such as a Scale;
	// on a Connect, the connection's options, such as a PodExecOptions.
	Object T
	// OldObject is the object as it was, on an Update and a Delete; the
	// zero T otherwise.
	OldObject T
	// Namespace and Name are the object's; Name is empty on a Create whose
	// name the API server generates from metadata.generateName.
	Namespace, Name string
	// SubResource is the subresource the request was made to, such as
	// status, or empty for the object itself.
	SubResource string
	// DryRun says the request will not be persisted, so the handler must
	// cause no side effect.
	DryRun bool
	// UserName and Groups identify who made the request.
	UserName string
	Groups   []string
}

// validator adapts a typed validating function to ports.Admitter.
type validator[T any] struct {
	gvk groupVersionKind
	f   func(context.Context, Admission[T]) ([]string, error)
}

// Admit decodes r into an Admission[T] and returns what the function
// decides: its warnings, and its error, which denies the request. A
// request of another kind than the webhook's, or whose objects don't
// decode into T, is denied with an error naming the object and the field.
func (v validator[T]) Admit(ctx context.Context, r ports.AdmissionRequest) (ports.AdmissionResult, error) {
	a, err := decodeAdmission[T](v.gvk, r)
	if err != nil {
		return ports.AdmissionResult{}, err
	}
	warnings, err := v.f(ctx, a)
	return ports.AdmissionResult{Warnings: warnings}, err
}

// mutator adapts a typed mutating function to ports.Admitter.
type mutator[T any] struct {
	gvk groupVersionKind
	f   func(context.Context, Admission[T], *T) ([]string, error)
}

// Admit decodes r into an Admission[T], hands the function a decoded copy
// of the object to change, and returns the object as the function left it,
// with its warnings; its error denies the request, and nothing it changed
// is kept. A request of another kind than the webhook's, or whose objects
// don't decode into T, is denied with an error naming the object and the
// field.
//
// Only what the function changed reaches the result: the change between
// the copy as decoded and as changed is applied to the request's own
// object, so fields T doesn't know and the JSON's own spelling of what
// the function left alone (a number's, a null's) stay as the API server
// sent them.
func (m mutator[T]) Admit(ctx context.Context, r ports.AdmissionRequest) (ports.AdmissionResult, error) {
	a, err := decodeAdmission[T](m.gvk, r)
	if err != nil {
		return ports.AdmissionResult{}, err
	}
	if len(r.Object) == 0 || a.Operation == Connect {
		// A Delete or a Connect: there is no object to change.
		warnings, err := m.f(ctx, a, new(T))
		return ports.AdmissionResult{Warnings: warnings}, err
	}
	var obj T
	if err := json.Unmarshal(r.Object, &obj); err != nil {
		return ports.AdmissionResult{}, fmt.Errorf("%s: object: %w", objectName(r), err)
	}
	warnings, err := m.f(ctx, a, &obj)
	if err != nil {
		return ports.AdmissionResult{Warnings: warnings}, err
	}
	changed, err := changedObject(r.Object, a.Object, obj)
	if err != nil {
		return ports.AdmissionResult{Warnings: warnings}, fmt.Errorf("%s: the mutated object: %w", objectName(r), err)
	}
	return ports.AdmissionResult{Object: changed, Warnings: warnings}, nil
}

// changedObject returns sent, the request's object, with the change that
// turned decoded into mutated, or nil when there is none: jsonpatch.Changed
// of T's encodings of the two, which keeps what T doesn't know as sent has
// it.
func changedObject[T any](sent []byte, decoded, mutated T) ([]byte, error) {
	before, err := json.Marshal(decoded)
	if err != nil {
		return nil, err
	}
	after, err := json.Marshal(mutated)
	if err != nil {
		return nil, err
	}
	return jsonpatch.Changed(sent, before, after)
}

// groupVersionKind is what a webhook admits, to check the review is of it.
type groupVersionKind struct{ group, version, kind string }

// decodeAdmission returns r as an Admission[T], failing when r is of
// another kind than gvk or its objects don't decode into T.
func decodeAdmission[T any](gvk groupVersionKind, r ports.AdmissionRequest) (Admission[T], error) {
	a := Admission[T]{
		Operation: Operation(r.Operation),
		Namespace: r.Namespace, Name: r.Name, SubResource: r.SubResource,
		DryRun: r.DryRun, UserName: r.UserName, Groups: r.Groups,
	}
	if got := (groupVersionKind{r.Group, r.Version, r.Kind}); got != gvk {
		return a, fmt.Errorf("%s: the review is of %s, and this webhook admits %s", objectName(r), got, gvk)
	}
	// A Connect's object is the connection's options, which only a
	// subresource's Hook, typed on them, is asked about.
	if len(r.Object) > 0 {
		if err := json.Unmarshal(r.Object, &a.Object); err != nil {
			return a, fmt.Errorf("%s: object: %w", objectName(r), err)
		}
	}
	if len(r.OldObject) > 0 {
		if err := json.Unmarshal(r.OldObject, &a.OldObject); err != nil {
			return a, fmt.Errorf("%s: oldObject: %w", objectName(r), err)
		}
	}
	return a, nil
}

// String names gvk as kubectl does, such as Memcached.v1alpha1.cache.example.com.
func (g groupVersionKind) String() string {
	if g.group == "" {
		return g.kind + "." + g.version
	}
	return g.kind + "." + g.version + "." + g.group
}

// objectName names r's object for errors: its kind and namespace/name.
func objectName(r ports.AdmissionRequest) string {
	name := r.Name
	if name == "" {
		name = "(generated name)"
	}
	if r.Namespace != "" {
		name = r.Namespace + "/" + name
	}
	return r.Kind + " " + name
}
