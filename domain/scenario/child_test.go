package scenario_test

import (
	"bytes"
	"encoding/json/jsontext"
	json "encoding/json/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/scenario"
)

const (
	annotation = "acme.example.com/failure-scenario"
	ownerUID   = "owner-uid"
	// value is a scenario's baggage, with the quotes a JSON string escapes.
	value = `acme.fault={"rules":[]}`
)

func TestAnnotateChild_sets_the_annotation_on_a_child_only(t *testing.T) {
	quoted := strings.ReplaceAll(value, `"`, `\"`)
	const refs = `"ownerReferences":[{"apiVersion":"v1","kind":"Owner","name":"o","uid":"owner-uid","controller":true}]`
	for _, tc := range []struct {
		name string
		doc  string
		want string // "" when doc is to be sent as it is
	}{
		{"no annotations, numbers kept as written",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c",` + refs + `},"data":{"n":"12345678901234567890123"}}`,
			`{"apiVersion":"v1","data":{"n":"12345678901234567890123"},"kind":"ConfigMap","metadata":{"annotations":{"` + annotation + `":"` + quoted + `"},"name":"c",` + refs + `}}`},
		{"a value replaced and others kept",
			`{"metadata":{"annotations":{"` + annotation + `":"old","keep":"me"},` + refs + `},"spec":{"replicas":12345678901234567890}}`,
			`{"metadata":{"annotations":{"` + annotation + `":"` + quoted + `","keep":"me"},` + refs + `},"spec":{"replicas":12345678901234567890}}`},
		{"null annotations",
			`{"metadata":{"annotations":null,` + refs + `}}`,
			`{"metadata":{"annotations":{"` + annotation + `":"` + quoted + `"},` + refs + `}}`},
		{"leading and trailing space",
			" \n{\"metadata\":{" + refs + "}}\n",
			`{"metadata":{"annotations":{"` + annotation + `":"` + quoted + `"},` + refs + `}}`},
		{"the controller reference after another",
			`{"metadata":{"ownerReferences":[{"uid":"other"},{"uid":"owner-uid","controller":true}]}}`,
			`{"metadata":{"annotations":{"` + annotation + `":"` + quoted + `"},"ownerReferences":[{"uid":"other"},{"uid":"owner-uid","controller":true}]}}`},

		{"another object's child", `{"metadata":{"ownerReferences":[{"uid":"other","controller":true},{"uid":"owner-uid"}]}}`, ""},
		{"two controllers, the first another's", `{"metadata":{"ownerReferences":[{"uid":"other","controller":true},{"uid":"owner-uid","controller":true}]}}`, ""},
		{"only references that aren't a controller's", `{"metadata":{"ownerReferences":[{"uid":"owner-uid","controller":false},{"uid":"owner-uid"}]}}`, ""},
		{"controller as a string", `{"metadata":{"ownerReferences":[{"uid":"owner-uid","controller":"true"}]}}`, ""},
		{"no owner references", `{"metadata":{"name":"c"}}`, ""},
		{"no metadata", `{"kind":"ConfigMap"}`, ""},
		{"null metadata", `{"metadata":null}`, ""},
		{"annotations that aren't an object", `{"metadata":{"annotations":"x",` + refs + `}}`, ""},
		{"an annotation that isn't a string", `{"metadata":{"annotations":{"n":1},` + refs + `}}`, ""},
		{"a name given twice", `{"metadata":{` + refs + `},"metadata":{` + refs + `}}`, ""},
		{"invalid UTF-8", "{\"metadata\":{\"name\":\"\xff\"," + refs + "}}", ""},
		{"owner references of the wrong shape", `{"metadata":{"ownerReferences":{"uid":"owner-uid","controller":true}}}`, ""},
		{"an array", `[{"metadata":{` + refs + `}}]`, ""},
		{"null", `null`, ""},
		{"trailing data", `{"metadata":{` + refs + `}} {}`, ""},
		{"YAML: the transport converts it first", "metadata:\n  ownerReferences:\n  - {uid: owner-uid, controller: true}\n", ""},
		{"not JSON", "\x00\x01\x02 protobuf?", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := scenario.AnnotateChild([]byte(tc.doc), ownerUID, annotation, value)
			if tc.want == "" {
				require.False(t, ok, "%s", got)
				return
			}
			require.True(t, ok)
			require.Equal(t, tc.want, string(got))
		})
	}
}

// FuzzAnnotateChild hands AnnotateChild any document: it never panics, and
// either declines, or returns a JSON object with the same fields whose
// annotation is the value and whose controller reference is the owner's.
func FuzzAnnotateChild(f *testing.F) {
	f.Add([]byte(`{"metadata":{"ownerReferences":[{"uid":"owner-uid","controller":true}]}}`))
	f.Add([]byte(`{"metadata":{"annotations":{"a":"b"},"ownerReferences":[{"uid":"owner-uid","controller":true}]},"spec":{"n":1e400}}`))
	f.Add([]byte(`{"metadata":{"annotations":{"a":"b"},"ownerReferences":[{"uid":"other","controller":true}]}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, ok := scenario.AnnotateChild(doc, ownerUID, annotation, value)
		if !ok {
			require.Nil(t, got)
			return
		}
		var in, out map[string]jsontext.Value
		require.NoError(t, json.Unmarshal(doc, &in), "only a JSON object is changed: %q", doc)
		require.NoError(t, json.Unmarshal(got, &out), "a changed document is a JSON object: %s", got)
		require.Len(t, out, len(in), "the same fields: %s", got)
		for name, raw := range in {
			if name == "metadata" {
				continue
			}
			require.True(t, sameJSON(t, raw, out[name]), "field %q kept: %s", name, got)
		}
		var obj struct {
			Metadata struct {
				Annotations     map[string]string `json:"annotations"`
				OwnerReferences []struct {
					UID        string `json:"uid"`
					Controller *bool  `json:"controller"`
				} `json:"ownerReferences"`
			} `json:"metadata"`
		}
		require.NoError(t, json.Unmarshal(got, &obj, json.RejectUnknownMembers(false)))
		require.Equal(t, value, obj.Metadata.Annotations[annotation])
		var controller string
		for _, ref := range obj.Metadata.OwnerReferences {
			if ref.Controller != nil && *ref.Controller {
				controller = ref.UID
				break
			}
		}
		require.Equal(t, ownerUID, controller, "only a child is changed: %q", doc)
	})
}

// sameJSON reports whether a and b are the same JSON value once both are
// in canonical form.
func sameJSON(t *testing.T, a, b jsontext.Value) bool {
	t.Helper()
	a, b = bytes.Clone(a), bytes.Clone(b)
	require.NoError(t, a.Canonicalize())
	require.NoError(t, b.Canonicalize())
	return bytes.Equal(a, b)
}
