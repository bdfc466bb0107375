package apply

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

func TestMember_finds_the_top_level_member_only(t *testing.T) {
	for _, tt := range []struct {
		name, doc, want string
		none            bool
	}{
		{name: "last", doc: `{"kind":"M","status":{"a":1}}`, want: `{"a":1}`},
		{name: "first, spaced", doc: " {\n \"status\" : [1, {\"b\":\"}\"}] ,\"x\":2}", want: `[1, {"b":"}"}]`},
		{name: "a scalar", doc: `{"status":12.5e3}`, want: `12.5e3`},
		{name: "at the end", doc: `{"a":1,"status":true}`, want: `true`},
		{name: "past a nested member of the name", doc: `{"metadata":{"status":"no"},"spec":{"s":"\"status\":"},"status":{"ok":1}}`, want: `{"ok":1}`},
		{name: "past a string holding an escaped quote and brackets", doc: `{"a":"x\"]}{[","status":"y"}`, want: `"y"`},
		{name: "past a string ending in escaped backslashes", doc: `{"a":"x\\\\","status":2}`, want: `2`},
		{name: "past escaped backslashes, then an escaped quote", doc: `{"a":"\\\\\\\"}","status":3}`, want: `3`},
		{name: "none", doc: `{"metadata":{"status":{}}}`, none: true},
		{name: "an empty object", doc: `{}`, none: true},
		{name: "not an object", doc: `["status",1]`, none: true},
		{name: "cut short in a value before it", doc: `{"a":{"b":[1,`, none: true},
		{name: "cut short in its value", doc: `{"status":{"a":`, none: true},
		{name: "cut short in a string", doc: `{"a":"abc`, none: true},
		{name: "no colon", doc: `{"status" 1}`, none: true},
		{name: "empty", doc: ``, none: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := member([]byte(tt.doc), "status")
			if tt.none {
				require.Nil(t, got)
				return
			}
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestReadStatus_keeps_a_copy_of_the_status_and_nothing_of_a_bad_answer(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer io.Reader
		want   string
	}{
		{name: "a status", answer: strings.NewReader(`{"kind":"M","metadata":{"name":"a"},"status":{"phase":"Pending","ready":1}}`), want: `{"phase":"Pending","ready":1}`},
		{name: "no status", answer: strings.NewReader(`{"kind":"M"}`)},
		{name: "a null status", answer: strings.NewReader(`{"status":null}`)},
		{name: "a status that isn't JSON", answer: strings.NewReader(`{"status":{"a":01}}`)},
		{name: "cut short", answer: io.MultiReader(strings.NewReader(`{"status":{"a":1}`), iotest.ErrReader(errors.New("stream reset")))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := readStatus(io.NopCloser(tt.answer))
			if tt.want == "" {
				require.Nil(t, got)
				return
			}
			require.Equal(t, tt.want, string(got))
			// The copy is the caller's: the next answer, read into the
			// same pooled buffer, leaves it alone.
			readStatus(io.NopCloser(strings.NewReader(`{"status":{"phase":"XXXXXXX","ready":9}}`)))
			require.Equal(t, tt.want, string(got))
		})
	}
}

// BenchmarkReadStatus is reading a status apply's answer, a Memcached with
// three managedFields entries (2.5 KB), for its status.
func BenchmarkReadStatus(b *testing.B) {
	obj, err := os.ReadFile("testdata/memcached.json")
	require.NoError(b, err)
	answer := bytes.NewReader(obj)
	b.ReportAllocs()
	for b.Loop() {
		answer.Reset(obj)
		if readStatus(io.NopCloser(answer)) == nil {
			b.Fatal("no status")
		}
	}
}
