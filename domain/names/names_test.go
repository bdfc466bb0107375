package names_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/names"
)

func TestCheckFinalizer(t *testing.T) {
	for _, tc := range []struct {
		name, finalizer string
		want            string // a prefix of the error; "" for nil
	}{
		{"a domain and a name", "cache.example.com/finalizer", ""},
		{"a one-label domain", "example/finalizer", ""},
		{"empty", "", "is empty: want a qualified name with a domain, such as example.com/finalizer"},
		{"no domain", "finalizer", `"finalizer" has no domain: want one, such as example.com/finalizer`},
		{"a space", "cache.example.com/Bad Name!", `"cache.example.com/Bad Name!" is not a qualified name: name part must consist of alphanumeric characters`},
		{"an upper-case domain", "Example.com/finalizer", `"Example.com/finalizer" is not a qualified name: prefix part a lowercase RFC 1123 subdomain`},
		{"two slashes", "a.com/b/c", `"a.com/b/c" is not a qualified name: a valid label key must consist of`},
		{"a name part of 64 characters", "example.com/" + strings.Repeat("x", 64), `"example.com/` + strings.Repeat("x", 64) + `" is not a qualified name: name part must be no more than 63 bytes`},
		{"an empty name part", "example.com/", `"example.com/" is not a qualified name: name part must be non-empty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := names.CheckFinalizer(tc.finalizer)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), tc.want), "%q does not start %q", err, tc.want)
		})
	}
}

func TestCheckAnnotation(t *testing.T) {
	for _, tc := range []struct {
		name, key string
		want      string // a prefix of the error; "" for nil
	}{
		{"a prefix and a name", "example.com/failure-scenario", ""},
		{"no prefix", "failure-scenario", ""},
		{"upper case, which the API server allows", "Example.com/Failure-Scenario", ""},
		{"dots and underscores", "example.com/a_b.c", ""},
		{"empty", "", "is empty: want an annotation key, such as example.com/failure-scenario"},
		{"a space", "acme.example.com/Bad Key!", `"acme.example.com/Bad Key!" is not a valid annotation key: name part must consist of`},
		{"a name part of 64 characters", "example.com/" + strings.Repeat("x", 64), `"example.com/` + strings.Repeat("x", 64) + `" is not a valid annotation key: name part must be no more than 63 bytes`},
		{"a prefix that starts with a dash", "-bad.example.com/scenario", `"-bad.example.com/scenario" is not a valid annotation key: prefix part`},
		{"two slashes", "a.com/b/c", `"a.com/b/c" is not a valid annotation key: a valid label key must consist of`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := names.CheckAnnotation(tc.key)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), tc.want), "%q does not start %q", err, tc.want)
		})
	}
}
