package jsonpatch_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/jsonpatch"
)

func TestChanged_applies_the_change_to_what_was_sent_leniently(t *testing.T) {
	for _, c := range []struct {
		name, sent, before, after string
		want                      string
	}{
		{"a member under one the request lacks",
			`{"metadata":{}}`, `{"metadata":{},"spec":{"a":0}}`, `{"metadata":{},"spec":{"a":1}}`,
			`{"metadata":{},"spec":{"a":1}}`},
		{"a member the request lacks, next to one the type does not know",
			`{"metadata":{},"spec":{"b":2.50}}`, `{"metadata":{},"spec":{"a":0}}`, `{"metadata":{},"spec":{"a":1}}`,
			`{"metadata":{},"spec":{"a":1,"b":2.50}}`},
		{"a replaced member",
			`{"metadata":{},"spec":{"a":3}}`, `{"metadata":{},"spec":{"a":3}}`, `{"metadata":{},"spec":{"a":1}}`,
			`{"metadata":{},"spec":{"a":1}}`},
		{"a removed member",
			`{"metadata":{"labels":{"x":"y"}},"spec":{"a":1}}`, `{"metadata":{"labels":{"x":"y"}},"spec":{"a":1}}`, `{"metadata":{},"spec":{"a":1}}`,
			`{"metadata":{},"spec":{"a":1}}`},
		{"a removed member the request lacks",
			`{"spec":{}}`, `{"spec":{"a":1}}`, `{"spec":{}}`,
			`{"spec":{}}`},
		{"a removed member under one the request lacks",
			`{}`, `{"spec":{"a":1}}`, `{"spec":{}}`,
			`{}`},
		{"a scalar where the type has a member",
			`{"spec":5}`, `{"spec":{"a":0}}`, `{"spec":{"a":1}}`,
			`{"spec":{"a":1}}`},
		{"an array of another length than the type's",
			`{"l":[1]}`, `{"l":[1,2]}`, `{"l":[1,3]}`,
			`{"l":[1,3]}`},
		{"an element of an array",
			`{"l":[{"a":1,"x":true},{"a":2}]}`, `{"l":[{"a":1},{"a":2}]}`, `{"l":[{"a":1},{"a":4}]}`,
			`{"l":[{"a":1,"x":true},{"a":4}]}`},
		{"a member named with / and ~",
			`{"m":{"a/b~c":1}}`, `{"m":{"a/b~c":1}}`, `{"m":{"a/b~c":2}}`,
			`{"m":{"a/b~c":2}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := jsonpatch.Changed([]byte(c.sent), []byte(c.before), []byte(c.after))
			require.NoError(t, err)
			require.JSONEq(t, c.want, string(got))
		})
	}
}

func TestChanged_keeps_the_text_of_numbers_it_leaves_alone(t *testing.T) {
	got, err := jsonpatch.Changed([]byte(`{"a":2.50,"b":1}`), []byte(`{"a":2.5,"b":1}`), []byte(`{"a":2.5,"b":2}`))
	require.NoError(t, err)
	require.Contains(t, string(got), "2.50")
	require.JSONEq(t, `{"a":2.50,"b":2}`, string(got))
}

func TestChanged_returns_nil_when_nothing_changed(t *testing.T) {
	got, err := jsonpatch.Changed([]byte(`{"a":1,"x":2}`), []byte(`{"a":1}`), []byte(`{"a":1}`))
	require.NoError(t, err)
	require.Nil(t, got)
}

func TestChanged_fails_on_what_is_not_JSON(t *testing.T) {
	for _, c := range []struct{ name, sent, before, after, want string }{
		{"before", `{}`, `[`, `{}`, "before"},
		{"after", `{}`, `{}`, `3`, "after"},
		{"sent", `{`, `{"a":1}`, `{"a":2}`, "unexpected EOF"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := jsonpatch.Changed([]byte(c.sent), []byte(c.before), []byte(c.after))
			require.ErrorContains(t, err, c.want)
			require.Nil(t, got)
		})
	}
}
