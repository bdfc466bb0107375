package apply

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/ports"
)

// marshalled is the body of an apply as the Writer wrote it before it
// wrote bodies by hand: json.Marshal of this struct, after json.Valid of
// the status, which an empty status skips (ApplyStatus refuses it before).
// The hand encoder must write the same bytes.
func marshalled(apiVersion, kind string, key ports.Key, uid types.UID, finalizer string, finalizers bool, status []byte) ([]byte, error) {
	type metadata struct {
		Name       string    `json:"name"`
		Namespace  string    `json:"namespace,omitempty"`
		UID        types.UID `json:"uid"`
		Finalizers []string  `json:"finalizers,omitempty"`
	}
	type body struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   metadata        `json:"metadata"`
		Status     json.RawMessage `json:"status,omitempty"`
	}
	if len(status) > 0 && !json.Valid(status) {
		return nil, &json.SyntaxError{}
	}
	b := body{APIVersion: apiVersion, Kind: kind, Metadata: metadata{Name: key.Name, Namespace: key.Namespace, UID: uid}, Status: status}
	if finalizers {
		b.Metadata.Finalizers = []string{finalizer}
	}
	return json.Marshal(b)
}

// sameBody checks that the hand encoder writes what json.Marshal wrote,
// and fails where it failed, appending to a buffer with something in it
// already, which it leaves alone. gv is a group and a version, split at
// its first slash, or a version alone.
func sameBody(t *testing.T, gv, kind string, key ports.Key, uid types.UID, finalizer string, finalizers bool, status []byte) {
	t.Helper()
	group, version, found := strings.Cut(gv, "/")
	if !found {
		group, version = "", gv
	}
	apiVersion := schema.GroupVersion{Group: group, Version: version}.String() // as New wrote it
	want, wantErr := marshalled(apiVersion, kind, key, uid, finalizer, finalizers, status)
	got, err := appendBody([]byte("before"), envelope(group, version, kind), key, uid, finalizer, finalizers, status)
	if wantErr != nil {
		require.Error(t, err, "json.Valid refuses the status %q", status)
		require.Equal(t, "before", string(got), "a failed append leaves the buffer as it was")
		return
	}
	require.NoError(t, err, "of the status %q", status)
	require.Equal(t, "before"+string(want), string(got))
}

// oddStatus is a status of the kinds of field encoding/json writes in
// different ways: omitempty, nil and empty slices and maps, map keys it
// sorts and escapes, strings with HTML characters, and big numbers.
type oddStatus struct {
	Phase   string            `json:"phase,omitempty"`
	Ready   bool              `json:"ready"`
	Count   int32             `json:"count,omitempty"`
	Nodes   []string          `json:"nodes"`
	Kept    []string          `json:"kept,omitempty"`
	Labels  map[string]string `json:"labels"`
	Extra   map[string]any    `json:"extra,omitempty"`
	Big     uint64            `json:"big"`
	Small   int64             `json:"small"`
	Ratio   float64           `json:"ratio"`
	Raw     json.RawMessage   `json:"raw,omitempty"`
	Pointer *int              `json:"pointer"`
	Omitted *int              `json:"omitted,omitzero"`
}

func TestAppendBody_writes_what_json_Marshal_wrote(t *testing.T) {
	statuses := map[string]any{
		"zero":               oddStatus{},
		"empty, not nil":     oddStatus{Nodes: []string{}, Kept: []string{}, Labels: map[string]string{}, Extra: map[string]any{}},
		"odd map keys":       oddStatus{Labels: map[string]string{"": "empty", "b": "2", "a": "1", `q"uote`: "\\", "<tag>": "&amp;", "é": "\u2028", "\x00": "nul", "\xff": "bad utf-8"}},
		"HTML characters":    oddStatus{Phase: "<script>alert('x')</script> & more", Nodes: []string{"a>b", "\u2029"}},
		"big numbers":        oddStatus{Big: math.MaxUint64, Small: math.MinInt64, Ratio: math.MaxFloat64, Extra: map[string]any{"tiny": math.SmallestNonzeroFloat64, "neg0": math.Copysign(0, -1), "e21": 1e21, "e20": 1e20}},
		"a raw message":      oddStatus{Raw: json.RawMessage(" { \"b\" : [ 1 , 2.50 , 1E+2 ] , \"a\" : \"<\\u0041>\" } ")},
		"pointers":           oddStatus{Pointer: new(0), Omitted: new(1)},
		"control characters": oddStatus{Phase: "tab\tnewline\nbell\x07del\x7f", Nodes: []string{"\xe2\x80", "\xed\xa0\x80"}},
		"a map":              map[string]any{"z": nil, "a": []any{}, "m": map[string]any{}},
		"a slice":            []int{1, 2, 3},
		"nil":                nil,
	}
	for name, status := range statuses {
		t.Run(name, func(t *testing.T) {
			doc, err := json.Marshal(status) // as kube encodes the Reconciler's status
			require.NoError(t, err)
			sameBody(t, "cache.example.com/v1alpha1", "Memcached", ports.Key{Namespace: "ns", Name: "a"}, "uid-1", "", false, doc)
		})
	}
	raw := map[string]string{
		"spaced":                " {\n\t\"a\" : [ 1 , { } , [ ] ] ,\r\n \"b\" : null } ",
		"escapes kept":          `{"a":"\u0041\/\"\\\b\f\n\r\t\u00e9"}`,
		"HTML characters":       `{"<":"<>&","&":["\u2028` + "\u2028\u2029" + `"]}`,
		"big numbers":           `{"a":123456789012345678901234567890,"b":-0.0,"c":1e400,"d":1.000000000000000000001,"e":1E-400}`,
		"duplicate names":       `{"a":1,"a":2}`,
		"invalid UTF-8":         "{\"a\":\"\xff\xfe<\"}",
		"a scalar":              `"status"`,
		"null":                  `null`,
		"empty":                 ``,
		"cut short":             `{"a":`,
		"a leading zero":        `{"a":01}`,
		"two values":            `{} {}`,
		"trailing comma":        `{"a":1,}`,
		"a bare word":           `nul`,
		"a control in a string": "{\"a\":\"\x01\"}",
		"single quotes":         `{'a':1}`,
	}
	for name, status := range raw {
		t.Run("raw "+name, func(t *testing.T) {
			sameBody(t, "cache.example.com/v1alpha1", "Memcached", ports.Key{Namespace: "ns", Name: "a"}, "uid-1", "", false, []byte(status))
		})
	}
	envelopes := []struct {
		name, apiVersion, kind, finalizer string
		key                               ports.Key
		uid                               types.UID
		finalizers                        bool
	}{
		{name: "a finalizer", apiVersion: "v1", kind: "ConfigMap", key: ports.Key{Namespace: "ns", Name: "a"}, uid: "uid-1", finalizer: "cache.example.com/finalizer", finalizers: true},
		{name: "an empty finalizer", apiVersion: "v1", kind: "ConfigMap", key: ports.Key{Name: "a"}, uid: "uid-1", finalizers: true},
		{name: "cluster-scoped, no uid", apiVersion: "example.com/v1", kind: "Cluster", key: ports.Key{Name: "a"}},
		{name: "HTML characters everywhere", apiVersion: "<g>/v1", kind: "K&K", key: ports.Key{Namespace: "<ns>", Name: "a&b"}, uid: "<uid>", finalizer: "x/<y>", finalizers: true},
		{name: "a group of a slash", apiVersion: "/v1", kind: "K", key: ports.Key{Name: "a"}},
		{name: "quotes, controls and odd bytes", apiVersion: `g"/v1`, kind: "K\\", key: ports.Key{Namespace: "n\ts", Name: "é\u2028"}, uid: "\xff\x00", finalizer: "\x7f\"", finalizers: true},
	}
	for _, e := range envelopes {
		t.Run(e.name, func(t *testing.T) {
			sameBody(t, e.apiVersion, e.kind, e.key, e.uid, e.finalizer, e.finalizers, nil)
			sameBody(t, e.apiVersion, e.kind, e.key, e.uid, e.finalizer, e.finalizers, []byte(`{"a":"<b>"}`))
		})
	}
}

// FuzzAppendBody holds the hand encoder to json.Marshal on any envelope
// and any status: the same bytes, and a failure where json.Valid failed.
// Its first argument is a group and a version, as sameBody splits it.
func FuzzAppendBody(f *testing.F) {
	f.Add("cache.example.com/v1alpha1", "Memcached", "ns", "a", "uid-1", "", false, []byte(`{"readyReplicas":3}`))
	f.Add("v1", "ConfigMap", "", "a", "uid-1", "cache.example.com/finalizer", true, []byte(nil))
	f.Add("<g>/v1", "K&K", "n\ts", "é\u2028", "\xff", "x/<y>", true, []byte(" {\"<\" : [ 1 , \"\u2029\\u0041\" ] } "))
	f.Add("v1", "K", "ns", "a", "u", "", false, []byte(`{"a":01}`))
	f.Add("v1", "K", "ns", "a", "u", "", false, []byte("\"\xff&\""))
	f.Add("v1", "K", "ns", "a", "u", "", false, []byte(`{"a":1e400,"b":-0.0,"a":2}`))
	f.Fuzz(func(t *testing.T, apiVersion, kind, namespace, name, uid, finalizer string, finalizers bool, status []byte) {
		sameBody(t, apiVersion, kind, ports.Key{Namespace: namespace, Name: name}, types.UID(uid), finalizer, finalizers, status)
	})
}

// TestAppendBody_nests_no_deeper_than_json_Marshal: encoding/json refuses
// to write a value nested more than 10000 deep, and json.Marshal of the
// body nests the status one level deeper than json.Valid and json.Compact
// of the status alone see it, so json.Marshal refused some statuses they
// pass (with GOEXPERIMENT=jsonv2, Go 1.27's default; the status nested
// 10000 deep). The hand encoder refuses the same ones.
func TestAppendBody_nests_no_deeper_than_json_Marshal(t *testing.T) {
	for _, depth := range []int{9999, 10000, 10001} {
		for name, status := range map[string]string{
			// A string of brackets, which the nesting doesn't count.
			"arrays":  strings.Repeat("[", depth) + `"]}\"[{"` + strings.Repeat("]", depth),
			"objects": strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth),
		} {
			key := ports.Key{Namespace: "ns", Name: "a"}
			want, wantErr := marshalled("g/v1", "K", key, "uid-1", "", false, []byte(status))
			got, err := appendBody(nil, envelope("g", "v1", "K"), key, "uid-1", "", false, []byte(status))
			require.Equal(t, wantErr != nil, err != nil, "%s nested %d deep: json.Marshal's error %v, appendBody's %v", name, depth, wantErr, err)
			require.True(t, bytes.Equal(want, got), "%s nested %d deep: the same bytes", name, depth)
		}
	}
}
