package apply

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzMember holds member to encoding/json on any answer: where member
// finds a status, encoding/json finds the same value under the top-level
// name "status", and where encoding/json finds one written without an
// escape, member finds it too. member may find none where the name is
// escaped (the API server writes no escape in a name), and the caller's
// only loss is a skipped apply it could have saved. Answers naming a
// member twice are left out: encoding/json keeps the last.
func FuzzMember(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"M","status":{"a":1}}`,
		`{"metadata":{"status":"no"},"spec":{"s":"\"status\":"},"status":{"ok":1}}`,
		`{"st\u0061tus":{"a":1}}`,
		`{"st\u0061tus":{"a":1},"status":2}`,
		`{"a":"x\"]}{[","status":"y"}`,
		`{"a":[{"status":1},"status"],"status":[{"}":"]"}]}`,
		`{"status\\":1,"status":2}`,
		` {"status" : 12.5e3 } `,
		`{"a":-0.5E+2,"status":null}`,
		`{"a":"\\","status":"\\\""}`,
	} {
		f.Add([]byte(seed))
	}
	// A whole answer, as the API server writes one.
	whole, err := os.ReadFile("testdata/memcached.json")
	require.NoError(f, err)
	f.Add(whole)
	f.Fuzz(func(t *testing.T, doc []byte) {
		got := member(doc, "status")
		names, ok := topLevelNames(doc)
		if !ok {
			// Not a JSON object: member may return anything, and
			// readStatus checks what it returns is JSON.
			return
		}
		if dup(names) {
			return
		}
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(doc, &m))
		want, has := m["status"]
		if got == nil {
			require.False(t, has && names.raw["status"], "member missed a status written without an escape in %q", doc)
			return
		}
		require.True(t, has, "member found a status in %q, encoding/json none", doc)
		require.Equal(t, compact(t, want), compact(t, got), "in %q", doc)
	})
}

// names are an object's top-level member names, as encoding/json reads
// them, and which of them are written without an escape.
type names struct {
	all []string
	raw map[string]bool
}

// topLevelNames returns doc's top-level member names, or false when doc
// isn't one JSON object.
func topLevelNames(doc []byte) (names, bool) {
	n := names{raw: map[string]bool{}}
	if !json.Valid(doc) {
		return n, false
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	tok, err := d.Token()
	if err != nil || tok != json.Delim('{') {
		return n, false
	}
	for d.More() {
		start := d.InputOffset()
		tok, err := d.Token()
		if err != nil {
			return n, false
		}
		name := tok.(string)
		n.all = append(n.all, name)
		// The name as written: from the byte after the previous token
		// (and any comma) to the end of this one.
		written := bytes.TrimLeft(doc[start:d.InputOffset()], " \t\r\n,")
		if string(written) == `"`+name+`"` {
			n.raw[name] = true
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return n, false
		}
	}
	if _, err := d.Token(); err != nil {
		return n, false
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return n, false
	}
	return n, true
}

// dup reports whether n names a member twice.
func dup(n names) bool {
	seen := map[string]bool{}
	for _, s := range n.all {
		if seen[s] {
			return true
		}
		seen[s] = true
	}
	return false
}

func compact(t *testing.T, v []byte) string {
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, v))
	return b.String()
}
