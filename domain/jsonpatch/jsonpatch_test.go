package jsonpatch_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/jsonpatch"
)

// decoded is a document decoded as Diff decodes it, numbers kept as text,
// so documents compare semantically.
func decoded(t testing.TB, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name          string
		before, after string
		want          string
	}{
		{"no change", `{"a":1,"b":[1,{"c":null}]}`, `{"b":[1,{"c":null}],"a":1}`, `[]`},
		{"empty objects", `{}`, `{}`, `[]`},
		{"member added", `{"a":1}`, `{"a":1,"b":"x"}`, `[{"op":"add","path":"/b","value":"x"}]`},
		{"member removed", `{"a":1,"b":"x"}`, `{"a":1}`, `[{"op":"remove","path":"/b"}]`},
		{"member replaced", `{"a":1}`, `{"a":2}`, `[{"op":"replace","path":"/a","value":2}]`},
		{"members in sorted order", `{"z":1,"m":1}`, `{"a":1,"m":2}`,
			`[{"op":"add","path":"/a","value":1},{"op":"replace","path":"/m","value":2},{"op":"remove","path":"/z"}]`},
		{"nested objects", `{"spec":{"template":{"spec":{"a":true}}}}`, `{"spec":{"template":{"spec":{"a":true,"b":{"c":1}}}}}`,
			`[{"op":"add","path":"/spec/template/spec/b","value":{"c":1}}]`},
		{"arrays of equal length, one element changed", `{"l":[{"n":"a","v":1},{"n":"b"}]}`, `{"l":[{"n":"a","v":1},{"n":"b","v":2}]}`,
			`[{"op":"add","path":"/l/1/v","value":2}]`},
		{"arrays of equal length, scalar changed", `{"l":[1,2,3]}`, `{"l":[1,5,3]}`, `[{"op":"replace","path":"/l/1","value":5}]`},
		{"arrays of different length replaced whole", `{"l":[1,2]}`, `{"l":[1,2,3]}`, `[{"op":"replace","path":"/l","value":[1,2,3]}]`},
		{"array emptied", `{"l":[1]}`, `{"l":[]}`, `[{"op":"replace","path":"/l","value":[]}]`},
		{"object to string", `{"a":{"b":1}}`, `{"a":"b"}`, `[{"op":"replace","path":"/a","value":"b"}]`},
		{"array to object", `{"a":[]}`, `{"a":{}}`, `[{"op":"replace","path":"/a","value":{}}]`},
		{"number to string", `{"a":1}`, `{"a":"1"}`, `[{"op":"replace","path":"/a","value":"1"}]`},
		{"value to null", `{"a":1}`, `{"a":null}`, `[{"op":"replace","path":"/a","value":null}]`},
		{"null to value", `{"a":null}`, `{"a":false}`, `[{"op":"replace","path":"/a","value":false}]`},
		{"null added", `{}`, `{"a":null}`, `[{"op":"add","path":"/a","value":null}]`},
		{"null removed", `{"a":null}`, `{}`, `[{"op":"remove","path":"/a"}]`},
		{"numbers compare by text", `{"a":1}`, `{"a":1.0}`, `[{"op":"replace","path":"/a","value":1.0}]`},
		{"keys escaped", `{"a/b":1,"c~d":1}`, `{"a/b":2,"c~d":2,"~1":0}`,
			`[{"op":"replace","path":"/a~1b","value":2},{"op":"replace","path":"/c~0d","value":2},{"op":"add","path":"/~01","value":0}]`},
		{"annotation keys escaped", `{"metadata":{}}`, `{"metadata":{"annotations":{"loam.dev/defaulted":"true"}}}`,
			`[{"op":"add","path":"/metadata/annotations","value":{"loam.dev/defaulted":"true"}}]`},
		{"unicode keys", `{"名前":"a","ключ":1}`, `{"名前":"b","ключ":1,"é":true}`,
			`[{"op":"add","path":"/é","value":true},{"op":"replace","path":"/名前","value":"b"}]`},
		{"empty key", `{"":1}`, `{"":2}`, `[{"op":"replace","path":"/","value":2}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsonpatch.Diff([]byte(tt.before), []byte(tt.after))
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(got))
			// Key order within operations aside, the patch is exact.
			require.Equal(t, decoded(t, []byte(tt.want)), decoded(t, got))

			applied, err := jsonpatch.Apply([]byte(tt.before), got)
			require.NoError(t, err)
			require.Equal(t, decoded(t, []byte(tt.after)), decoded(t, applied))
		})
	}
}

func TestDiff_is_deterministic(t *testing.T) {
	before := []byte(`{"e":1,"d":1,"c":1,"b":1,"a":1}`)
	after := []byte(`{"a":2,"b":2,"c":2,"d":2,"e":2,"f":2}`)
	first, err := jsonpatch.Diff(before, after)
	require.NoError(t, err)
	for range 20 {
		again, err := jsonpatch.Diff(before, after)
		require.NoError(t, err)
		require.Equal(t, string(first), string(again))
	}
}

func TestDiff_rejects(t *testing.T) {
	tests := []struct {
		name          string
		before, after string
		want          []string
	}{
		{"invalid before", `{"a":`, `{}`, []string{"before is not valid JSON"}},
		{"invalid after", `{}`, `{"a" 1}`, []string{"after is not valid JSON"}},
		{"both invalid, both named", `nope`, `{`, []string{"before is not valid JSON", "after is not valid JSON"}},
		{"trailing data", `{}{}`, `{}`, []string{"before is not valid JSON: data after its first value"}},
		{"empty", ``, `{}`, []string{"before is not valid JSON"}},
		{"array top level", `[]`, `{}`, []string{"before is not a JSON object but an array"}},
		{"string top level", `{}`, `"x"`, []string{"after is not a JSON object but a string"}},
		{"null top level", `null`, `1`, []string{"before is not a JSON object but null", "after is not a JSON object but a number"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsonpatch.Diff([]byte(tt.before), []byte(tt.after))
			require.Error(t, err)
			require.Nil(t, got)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestApply(t *testing.T) {
	tests := []struct {
		name       string
		doc, patch string
		want       string
	}{
		{"empty patch", `{"a":1}`, `[]`, `{"a":1}`},
		{"add into array", `{"l":[1,3]}`, `[{"op":"add","path":"/l/1","value":2}]`, `{"l":[1,2,3]}`},
		{"add at end", `{"l":[1]}`, `[{"op":"add","path":"/l/1","value":2},{"op":"add","path":"/l/-","value":3}]`, `{"l":[1,2,3]}`},
		{"remove from array", `{"l":[1,2,3]}`, `[{"op":"remove","path":"/l/0"}]`, `{"l":[2,3]}`},
		{"replace whole document", `{"a":1}`, `[{"op":"replace","path":"","value":{"b":2}}]`, `{"b":2}`},
		{"add replaces an existing member", `{"a":1}`, `[{"op":"add","path":"/a","value":null}]`, `{"a":null}`},
		{"escaped paths", `{"a/b":{"~":1}}`, `[{"op":"replace","path":"/a~1b/~0","value":2}]`, `{"a/b":{"~":2}}`},
		{"operations in order", `{}`, `[{"op":"add","path":"/a","value":{}},{"op":"add","path":"/a/b","value":1}]`, `{"a":{"b":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsonpatch.Apply([]byte(tt.doc), []byte(tt.patch))
			require.NoError(t, err)
			require.Equal(t, decoded(t, []byte(tt.want)), decoded(t, got))
		})
	}
}

func TestApply_rejects(t *testing.T) {
	tests := []struct {
		name       string
		doc, patch string
		want       []string
	}{
		{"invalid doc", `{`, `[]`, []string{"doc is not valid JSON"}},
		{"invalid patch", `{}`, `{}`, []string{"patch is not a valid JSON Patch array"}},
		{"every malformed operation at once", `{}`,
			`[{"op":"move","path":"/a"},{"op":"add","path":"/a"},{"op":"remove","path":"a"},{"op":"remove","path":"/~2"}]`,
			[]string{
				`operation 0 (move "/a"): op "move" is not add, remove or replace`,
				`operation 1 (add "/a"): value is missing`,
				`operation 2 (remove "a"): path "a" is not a JSON Pointer`,
				`operation 3 (remove "/~2"): path "/~2": reference token "~2"`,
			}},
		{"missing member to remove", `{"a":{}}`, `[{"op":"remove","path":"/a/b"}]`, []string{`operation 0 (remove "/a/b"): member "b" to remove does not exist`}},
		{"missing member to replace", `{}`, `[{"op":"replace","path":"/b","value":1}]`, []string{`operation 0 (replace "/b"): member "b" to replace does not exist`}},
		{"missing parent", `{}`, `[{"op":"add","path":"/a/b","value":1}]`, []string{`operation 0 (add "/a/b"): member "a" does not exist`}},
		{"index out of range", `{"l":[1]}`, `[{"op":"add","path":"/l/0","value":1},{"op":"replace","path":"/l/2","value":1}]`,
			[]string{`operation 1 (replace "/l/2"): array index "2" is out of range`}},
		{"leading zero index", `{"l":[1,2]}`, `[{"op":"remove","path":"/l/01"}]`, []string{`array index "01" is not a non-negative integer`}},
		{"scalar parent", `{"a":1}`, `[{"op":"add","path":"/a/b","value":1}]`, []string{`reference token "b": the value there is a number`}},
		{"remove the document", `{}`, `[{"op":"remove","path":""}]`, []string{"the whole document cannot be removed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsonpatch.Apply([]byte(tt.doc), []byte(tt.patch))
			require.Error(t, err)
			require.Nil(t, got)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

// FuzzDiff checks, for any two JSON objects a and b, that Diff(a, b)
// applied to a gives b, and that Diff(a, a) is [].
func FuzzDiff(f *testing.F) {
	for _, seed := range [][2]string{
		{`{}`, `{}`},
		{`{"a":1}`, `{"a":1.0}`},
		{`{"a":[1,2,{"b":null}]}`, `{"a":[1,3,{"b":false}]}`},
		{`{"a":[1,2]}`, `{"a":[1]}`},
		{`{"a/b":{"~":"x"}}`, `{"a/b":{"~0":"y"}}`},
		{`{"名前":{"x":[]}}`, `{"名前":"x"}`},
		{`{"":{"":[{"":1}]}}`, `{"":{"":[{"":2,"a":[]}]}}`},
		{`{"metadata":{"name":"m"},"spec":{"replicas":1}}`, `{"metadata":{"name":"m","labels":{"app":"m"}},"spec":{"replicas":3}}`},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if !isObject(a) || !isObject(b) {
			t.Skip("not two JSON objects")
		}
		patch, err := jsonpatch.Diff(a, b)
		require.NoError(t, err)
		got, err := jsonpatch.Apply(a, patch)
		require.NoError(t, err, "patch %s", patch)
		if !reflect.DeepEqual(decoded(t, b), decoded(t, got)) {
			t.Fatalf("Apply(a, Diff(a, b)) = %s, want %s; patch %s", got, b, patch)
		}
		same, err := jsonpatch.Diff(a, a)
		require.NoError(t, err)
		require.Equal(t, "[]", string(same))
	})
}

// isObject reports whether data is exactly one JSON object, as Diff
// accepts.
func isObject(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return false
	}
	if _, ok := v.(map[string]any); !ok {
		return false
	}
	_, err := dec.Token()
	return errors.Is(err, io.EOF)
}
