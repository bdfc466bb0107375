package reconcile

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
)

// StatusChanged reports whether applying next, a status's JSON, would
// change cached, the cached object's, nil when it has none. The two are
// compared as JSON values, not as bytes: the cache encodes the status with
// its keys sorted, the end user's type in its fields' order. Numbers compare
// by their text, so no two distinct integers are ever taken for the same;
// a member that is null is the same as one that is absent, and an empty
// status the same as none, as the API server stores them. Anything that
// isn't JSON is taken as a change, for the apply to report.
func StatusChanged(cached, next []byte) bool {
	if bytes.Equal(cached, next) {
		return false
	}
	a, err := canonical(cached)
	if err != nil {
		return true
	}
	b, err := canonical(next)
	if err != nil {
		return true
	}
	return !reflect.DeepEqual(a, b)
}

// canonical decodes doc into the value StatusChanged compares.
func canonical(doc []byte) (any, error) {
	if len(doc) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	v = dropNulls(v)
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return nil, nil
	}
	return v, nil
}

// dropNulls removes the members of v's objects whose value is null, at
// every depth. A list keeps its nulls, since they hold their places.
func dropNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			t[k] = dropNulls(e)
		}
	case []any:
		for i, e := range t {
			t[i] = dropNulls(e)
		}
	}
	return v
}
