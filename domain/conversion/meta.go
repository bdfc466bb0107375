package conversion

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Check returns an error naming each change a conversion made that the
// API server refuses, or nil: got's apiVersion or kind other than to's,
// and metadata other than labels and annotations that differs from want,
// the metadata of the object converted.
func Check(to, got metav1.TypeMeta, want, gotMeta metav1.ObjectMeta) error {
	var errs []error
	if got.APIVersion != to.APIVersion {
		errs = append(errs, fmt.Errorf("the conversion changed apiVersion from %q to %q", to.APIVersion, got.APIVersion))
	}
	if got.Kind != to.Kind {
		errs = append(errs, fmt.Errorf("the conversion changed kind from %q to %q", to.Kind, got.Kind))
	}
	for _, field := range MetaChanges(want, gotMeta) {
		errs = append(errs, fmt.Errorf("the conversion changed metadata.%s, which the API server refuses: a conversion may change labels and annotations only", field))
	}
	return errors.Join(errs...)
}

// MetaChanges returns the JSON names of the fields of got that differ from
// want, but for labels and annotations. An empty slice or map is taken
// for a missing one, as JSON encodes them alike.
func MetaChanges(want, got metav1.ObjectMeta) []string {
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

// SetAPIVersion returns obj with its apiVersion set to to's, and nothing
// else changed: the conversion of a version whose schema is the hub's, as
// the API server itself converts one. It fails when obj is not a JSON
// object.
func SetAPIVersion(obj []byte, to metav1.TypeMeta) ([]byte, error) {
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
