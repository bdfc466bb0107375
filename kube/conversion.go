package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	domainwebhook "github.com/loam-dev/loam/domain/webhook"
	"github.com/loam-dev/loam/ports"
)

// converter converts the objects of a Resource between its versions
// through its hub, the version the API server stores.
type converter struct {
	group, kind, hub string
	// versions are the Resource's other versions, by name.
	versions map[string]Version
}

// converter returns the Converter of r's versions, which the hook
// Conversion serves, or every mistake CRD would report in r: a
// conversion of a CRD the API server would refuse is no conversion.
func (r Resource[Spec, Status]) converter() (ports.Converter, error) {
	if _, err := r.CRD(); err != nil {
		return nil, err
	}
	c := &converter{group: r.Group, kind: r.Kind, hub: r.Version, versions: make(map[string]Version, len(r.Versions))}
	for _, v := range r.Versions {
		c.versions[v.res.version] = v
	}
	return c, nil
}

// Convert returns obj, an object of r in any of its versions as JSON,
// converted to apiVersion, such as cache.example.com/v1alpha1, as the
// conversion webhook does: a Spoke's object up to r, the hub, and then
// down to the version asked for; an object already of apiVersion
// unchanged. It is for tests, such as package conversiontest's: it checks
// r as CRD does, on every call, and returns CRD's mistakes when there are
// any. It fails, naming the object by its namespace and name, when obj is
// not a JSON object of r's Kind in one of r's versions, when apiVersion is
// not one of them, and when a Spoke's function fails or changes metadata
// a conversion may not.
func (r Resource[Spec, Status]) Convert(ctx context.Context, obj []byte, apiVersion string) ([]byte, error) {
	c, err := r.converter()
	if err != nil {
		return nil, err
	}
	return c.Convert(ctx, obj, apiVersion)
}

// Convert converts obj to apiVersion through the hub; see Resource.Convert.
func (c *converter) Convert(ctx context.Context, obj []byte, apiVersion string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("kube: converting a %s: %w", c.kind, context.Cause(ctx))
	}
	var h domainwebhook.ObjectHeader
	if err := json.Unmarshal(obj, &h); err != nil {
		return nil, fmt.Errorf("kube: converting a %s: the object is not a JSON object with a kind and metadata: %w", c.kind, err)
	}
	name := h.Metadata.Name
	if h.Metadata.Namespace != "" {
		name = h.Metadata.Namespace + "/" + name
	}
	fail := func(err error) error {
		return fmt.Errorf("kube: converting the %s %q from %q to %q: %w", c.kind, name, h.APIVersion, apiVersion, err)
	}
	var errs []error
	if h.Kind != c.kind {
		errs = append(errs, fmt.Errorf("its kind %q is not %q", h.Kind, c.kind))
	}
	from, err := c.version("its apiVersion", h.APIVersion)
	if err != nil {
		errs = append(errs, err)
	}
	to, err := c.version("the apiVersion asked for", apiVersion)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fail(errors.Join(errs...))
	}
	if from == to {
		return obj, nil
	}
	hub := obj
	if from != c.hub {
		hub, err = c.versions[from].toHub(obj, metav1.TypeMeta{APIVersion: c.group + "/" + c.hub, Kind: c.kind})
		if err != nil {
			return nil, fail(err)
		}
	}
	if to == c.hub {
		return hub, nil
	}
	out, err := c.versions[to].fromHub(hub, metav1.TypeMeta{APIVersion: apiVersion, Kind: c.kind})
	if err != nil {
		return nil, fail(err)
	}
	return out, nil
}

// version returns the version apiVersion names, one of the resource's, or
// an error naming what, such as "its apiVersion".
func (c *converter) version(what, apiVersion string) (string, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s %q: %w", what, apiVersion, err)
	case gv.Group != c.group:
		return "", fmt.Errorf("%s %q is not of the group %s", what, apiVersion, c.group)
	}
	if _, ok := c.versions[gv.Version]; !ok && gv.Version != c.hub {
		return "", fmt.Errorf("%s %q is not a version of the %s", what, apiVersion, c.kind)
	}
	return gv.Version, nil
}

// convertTyped decodes obj as an Object[FS, FSt], converts it with f to an
// Object[TS, TSt] whose TypeMeta is to and whose ObjectMeta starts as a
// copy of obj's, and encodes the result. It fails when f does, and when f
// changed the TypeMeta or metadata other than labels and annotations,
// naming each such field.
func convertTyped[FS, FSt, TS, TSt any](obj []byte, to metav1.TypeMeta, f func(Object[FS, FSt], *Object[TS, TSt]) error) ([]byte, error) {
	var from Object[FS, FSt]
	if err := json.Unmarshal(obj, &from); err != nil {
		return nil, fmt.Errorf("decoding it as %s: %w", reflect.TypeFor[Object[FS, FSt]](), err)
	}
	// want is the metadata f must leave as it is; from and out get copies
	// of their own, so that f changing one changes neither want nor the
	// other.
	want := from.ObjectMeta.DeepCopy()                                            //nolint:staticcheck // the metadata, not the object
	out := Object[TS, TSt]{TypeMeta: to, ObjectMeta: *from.ObjectMeta.DeepCopy()} //nolint:staticcheck // the metadata, not the object
	if err := f(from, &out); err != nil {
		return nil, err
	}
	var errs []error
	if out.APIVersion != to.APIVersion {
		errs = append(errs, fmt.Errorf("the conversion changed apiVersion from %q to %q", to.APIVersion, out.APIVersion))
	}
	if out.Kind != to.Kind {
		errs = append(errs, fmt.Errorf("the conversion changed kind from %q to %q", to.Kind, out.Kind))
	}
	for _, field := range metaChanges(*want, out.ObjectMeta) {
		errs = append(errs, fmt.Errorf("the conversion changed metadata.%s, which the API server refuses: a conversion may change labels and annotations only", field))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return json.Marshal(out)
}

// metaChanges returns the JSON names of the fields of got that differ from
// want, but for labels and annotations. An empty slice or map is taken
// for a missing one, as JSON encodes them alike.
func metaChanges(want, got metav1.ObjectMeta) []string {
	var changed []string
	w, g := reflect.ValueOf(want), reflect.ValueOf(got)
	for i := range w.NumField() {
		f := w.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "labels" || name == "annotations" || name == "" || name == "-" {
			continue
		}
		a, b := w.Field(i), g.Field(i)
		if empty(a) && empty(b) {
			continue
		}
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			changed = append(changed, name)
		}
	}
	return changed
}

// empty reports whether v is a nil or empty slice or map.
func empty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	}
	return false
}

// setAPIVersion returns obj with its apiVersion set to to's, and nothing
// else changed: the conversion of a version whose schema is the hub's.
func setAPIVersion(obj []byte, to metav1.TypeMeta) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(obj, &fields); err != nil {
		return nil, fmt.Errorf("decoding it as a JSON object: %w", err)
	}
	if fields == nil {
		return nil, errors.New("it is null, not a JSON object")
	}
	v, err := json.Marshal(to.APIVersion)
	if err != nil {
		return nil, err
	}
	fields["apiVersion"] = v
	return json.Marshal(fields)
}
