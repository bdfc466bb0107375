package crd

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// The domain imports no test library (its dependency rules hold for its
// tests too), so these few helpers stand in for one.

func equal[T any](t *testing.T, want, got T, what string) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("%s:\nwant %#v\n got %#v", what, want, got)
	}
}

func noError(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func errorContains(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error doesn't contain %q:\n%v", w, err)
		}
	}
}

// asJSON returns v as indented JSON, to compare schemas readably.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	out, err := json.MarshalIndent(v, "", "  ")
	noError(t, err)
	return string(out)
}
