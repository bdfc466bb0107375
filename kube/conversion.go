package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
