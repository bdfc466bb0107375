package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/adapters/objects"
)

// ResourceClient reads and writes the objects of one Resource as
// Object[Spec, Status], the end user's own types: create, get, update,
// update of the status, delete and list, each one request to the API
// server. It is what a test drives a controller with, and what a program
// reads live objects with; a Reconciler reads related objects from a
// Cache instead. NewResourceClient makes one; its methods may be called
// from any goroutine.
type ResourceClient[Spec, Status any] struct {
	r  Resource[Spec, Status]
	gk schema.GroupKind
	c  *objects.Client
}

// NewResourceClient returns a ResourceClient of r's objects that sends its
// requests through cfg: a kubetest Cluster's RESTConfig in a test, or a
// Client's Config in an App, whose requests then go through the Client's
// transport like every other of the App's — traced, measured, and each an
// injection point named kube:<plural>.<group>:<verb> when the App injects
// failures. It speaks JSON, whatever cfg's content type. It fails, naming
// every mistake in one error, when r is missing its Group, Version, Kind or
// Plural, or has a Scope that is neither Namespaced nor Cluster, and when
// cfg is nil; it sends nothing.
func NewResourceClient[Spec, Status any](r Resource[Spec, Status], cfg *rest.Config) (*ResourceClient[Spec, Status], error) {
	var errs []error
	for _, m := range r.controllerMistakes() {
		errs = append(errs, fmt.Errorf("kube: NewResourceClient: the Resource %s: %w", r.name(), m))
	}
	if cfg == nil {
		errs = append(errs, errors.New("kube: NewResourceClient: the rest.Config is nil"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c, err := objects.New(cfg, r.GVR())
	if err != nil {
		return nil, fmt.Errorf("kube: NewResourceClient: %w", err)
	}
	return &ResourceClient[Spec, Status]{r: r, gk: schema.GroupKind{Group: r.Group, Kind: r.Kind}, c: c}, nil
}

// Create creates obj, named by its name or, when that is empty, its
// generateName, and returns it as the API server stored it. obj's
// apiVersion and kind are the Resource's, whatever obj says; its status is
// not stored, as the status subresource keeps the status apart: set it
// with UpdateStatus.
//
// It fails, sending nothing, when obj has neither a name nor a
// generateName, has a resourceVersion (it was read: the API server
// refuses it), has no namespace and the Resource is namespaced, or one
// and it is cluster-scoped, or one that is no path segment, or has
// another apiVersion or kind than the Resource's. Otherwise its error is
// the API server's, an *apierrors.StatusError that
// apierrors.IsAlreadyExists and the like read, wrapped with the operation
// and the object's namespace and name.
func (c *ResourceClient[Spec, Status]) Create(ctx context.Context, obj Object[Spec, Status]) (Object[Spec, Status], error) {
	var errs []error
	if obj.Name == "" && obj.GenerateName == "" {
		errs = append(errs, errors.New("the object has neither a name nor a generateName"))
	}
	for _, msg := range rest.IsValidPathSegmentName(obj.Namespace) {
		errs = append(errs, fmt.Errorf("the namespace %q is no path segment: %s", obj.Namespace, msg))
	}
	if obj.ResourceVersion != "" {
		// The API server answers a 500, "resourceVersion should not be
		// set on objects to be created": say what to do instead.
		errs = append(errs, fmt.Errorf("the object has the resourceVersion %q, which the API server refuses on a create: clear it to create a copy of an object read, or Update the object", obj.ResourceVersion))
	}
	errs = append(errs, c.typeMistakes(obj)...)
	if err := c.check("create", obj.Namespace, obj.Name, errs); err != nil {
		return Object[Spec, Status]{}, err
	}
	doc, err := c.encode(obj)
	if err != nil {
		return Object[Spec, Status]{}, c.failed("create", obj.Namespace, obj.Name, err)
	}
	answer, err := c.c.Create(ctx, obj.Namespace, doc)
	return c.decoded("create", obj.Namespace, obj.Name, answer, err)
}

// Get returns the object namespace/name ("" namespace for a
// cluster-scoped Resource). An object that doesn't exist is an error
// apierrors.IsNotFound reads. It fails, sending nothing, when the name is
// empty, or the namespace doesn't fit the Resource's Scope.
func (c *ResourceClient[Spec, Status]) Get(ctx context.Context, namespace, name string) (Object[Spec, Status], error) {
	if err := c.check("get", namespace, name, c.keyMistakes(namespace, name)); err != nil {
		return Object[Spec, Status]{}, err
	}
	answer, err := c.c.Get(ctx, Key{Namespace: namespace, Name: name})
	return c.decoded("get", namespace, name, answer, err)
}

// Update replaces obj's spec and metadata with obj's, and returns it as
// the API server stored it; the status is left as it was (UpdateStatus
// writes it). obj's resourceVersion, as Get or an earlier write returned
// it, makes the update fail with an error apierrors.IsConflict reads when
// the object has changed since. The API server updates a custom resource
// only against a resourceVersion, so Update fails, sending nothing, when
// obj has none; and as Get does for obj's namespace and name, and as
// Create does for its apiVersion and kind.
func (c *ResourceClient[Spec, Status]) Update(ctx context.Context, obj Object[Spec, Status]) (Object[Spec, Status], error) {
	return c.update(ctx, "update", obj, false)
}

// UpdateStatus replaces obj's status with obj.Status, through the status
// subresource, and returns the object as the API server stored it; its
// spec and metadata are left as they were. It reads obj's resourceVersion
// and fails as Update does.
func (c *ResourceClient[Spec, Status]) UpdateStatus(ctx context.Context, obj Object[Spec, Status]) (Object[Spec, Status], error) {
	return c.update(ctx, "update of the status of", obj, true)
}

func (c *ResourceClient[Spec, Status]) update(ctx context.Context, op string, obj Object[Spec, Status], status bool) (Object[Spec, Status], error) {
	errs := append(c.keyMistakes(obj.Namespace, obj.Name), c.typeMistakes(obj)...)
	if obj.ResourceVersion == "" {
		// The API server's answer, a 422 that metadata.resourceVersion
		// "must be specified for an update", is the same: say where one
		// comes from.
		errs = append(errs, errors.New("the object has no resourceVersion, which the API server requires to update a custom resource: update the object Get or an earlier write returned"))
	}
	if err := c.check(op, obj.Namespace, obj.Name, errs); err != nil {
		return Object[Spec, Status]{}, err
	}
	doc, err := c.encode(obj)
	if err != nil {
		return Object[Spec, Status]{}, c.failed(op, obj.Namespace, obj.Name, err)
	}
	answer, err := c.c.Update(ctx, Key{Namespace: obj.Namespace, Name: obj.Name}, doc, status)
	return c.decoded(op, obj.Namespace, obj.Name, answer, err)
}

// Delete deletes the object namespace/name: the API server marks it for
// deletion and returns once it is marked; an object with finalizers stays
// until they are removed, and the garbage collector deletes the objects
// it controls in the background. An object that doesn't exist is an error
// apierrors.IsNotFound reads. It fails, sending nothing, as Get does.
func (c *ResourceClient[Spec, Status]) Delete(ctx context.Context, namespace, name string) error {
	if err := c.check("delete", namespace, name, c.keyMistakes(namespace, name)); err != nil {
		return err
	}
	if err := c.c.Delete(ctx, Key{Namespace: namespace, Name: name}, metav1.DeleteOptions{}); err != nil {
		return c.failed("delete", namespace, name, err)
	}
	return nil
}

// List returns every object in namespace, or in every namespace when it
// is "", whose labels selector matches; a nil selector matches all. It is
// Cache.List's signature, read live. It fails, sending nothing, when the
// Resource is cluster-scoped and namespace isn't "", or namespace is no
// path segment, such as "..".
func (c *ResourceClient[Spec, Status]) List(ctx context.Context, namespace string, selector labels.Selector) ([]Object[Spec, Status], error) {
	what := fmt.Sprintf("kube: list of %s in %s", c.gk, namespaceName(namespace))
	var errs []error
	if c.r.Scope == Cluster && namespace != "" {
		errs = append(errs, fmt.Errorf("%s: %s is cluster-scoped, so its objects are in no namespace: want \"\"", what, c.r.name()))
	}
	// A namespace such as ".." would name another path, every
	// namespace's list among them.
	for _, msg := range rest.IsValidPathSegmentName(namespace) {
		errs = append(errs, fmt.Errorf("%s: the namespace %q is no path segment: %s", what, namespace, msg))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var opts metav1.ListOptions
	if selector != nil {
		opts.LabelSelector = selector.String()
	}
	answer, err := c.c.List(ctx, namespace, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var list struct {
		Items []Object[Spec, Status] `json:"items"`
	}
	if err := json.Unmarshal(answer, &list); err != nil {
		return nil, fmt.Errorf("%s: decoding the list the API server returned: %w", what, err)
	}
	return list.Items, nil
}

// namespaceName names namespace in an error.
func namespaceName(namespace string) string {
	if namespace == "" {
		return "every namespace"
	}
	return fmt.Sprintf("the namespace %q", namespace)
}

// keyMistakes returns what keeps namespace/name from naming one of the
// Resource's objects.
func (c *ResourceClient[Spec, Status]) keyMistakes(namespace, name string) []error {
	var errs []error
	if name == "" {
		errs = append(errs, errors.New("the name is empty"))
	}
	for _, f := range []struct{ what, value string }{{"name", name}, {"namespace", namespace}} {
		for _, msg := range rest.IsValidPathSegmentName(f.value) {
			errs = append(errs, fmt.Errorf("the %s %q is no path segment: %s", f.what, f.value, msg))
		}
	}
	switch {
	case c.r.Scope == Namespaced && namespace == "":
		errs = append(errs, fmt.Errorf("the namespace is empty, and %s is namespaced", c.r.name()))
	case c.r.Scope == Cluster && namespace != "":
		errs = append(errs, fmt.Errorf("the namespace is %q, and %s is cluster-scoped: want none", namespace, c.r.name()))
	}
	return errs
}

// typeMistakes returns what is wrong with obj's namespace, apiVersion and
// kind as one of the Resource's objects.
func (c *ResourceClient[Spec, Status]) typeMistakes(obj Object[Spec, Status]) []error {
	var errs []error
	switch {
	case c.r.Scope == Namespaced && obj.Namespace == "":
		errs = append(errs, fmt.Errorf("the object has no namespace, and %s is namespaced", c.r.name()))
	case c.r.Scope == Cluster && obj.Namespace != "":
		errs = append(errs, fmt.Errorf("the object is in the namespace %q, and %s is cluster-scoped: want none", obj.Namespace, c.r.name()))
	}
	if want := (schema.GroupVersion{Group: c.r.Group, Version: c.r.Version}).String(); obj.APIVersion != "" && obj.APIVersion != want {
		errs = append(errs, fmt.Errorf("the object's apiVersion is %q, and %s's is %q", obj.APIVersion, c.r.name(), want))
	}
	if obj.Kind != "" && obj.Kind != c.r.Kind {
		errs = append(errs, fmt.Errorf("the object's kind is %q, and %s's is %q", obj.Kind, c.r.name(), c.r.Kind))
	}
	return errs
}

// check returns errs, the mistakes of op on namespace/name, as one error
// naming both, or nil when there are none.
func (c *ResourceClient[Spec, Status]) check(op, namespace, name string, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = c.failed(op, namespace, name, e)
	}
	return errors.Join(out...)
}

// failed wraps err, the error of op on namespace/name.
func (c *ResourceClient[Spec, Status]) failed(op, namespace, name string, err error) error {
	return fmt.Errorf("kube: %s %s %q: %w", op, c.gk, Key{Namespace: namespace, Name: name}, err)
}

// encode returns obj's JSON, with the Resource's apiVersion and kind.
func (c *ResourceClient[Spec, Status]) encode(obj Object[Spec, Status]) ([]byte, error) {
	obj.APIVersion = schema.GroupVersion{Group: c.r.Group, Version: c.r.Version}.String()
	obj.Kind = c.r.Kind
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding the object: %w", err)
	}
	return doc, nil
}

// decoded returns answer, the object op returned, decoded, or err named.
func (c *ResourceClient[Spec, Status]) decoded(op, namespace, name string, answer []byte, err error) (Object[Spec, Status], error) {
	if err != nil {
		return Object[Spec, Status]{}, c.failed(op, namespace, name, err)
	}
	var obj Object[Spec, Status]
	if err := json.Unmarshal(answer, &obj); err != nil {
		return Object[Spec, Status]{}, c.failed(op, namespace, name, fmt.Errorf("decoding the object the API server returned: %w", err))
	}
	return obj, nil
}
