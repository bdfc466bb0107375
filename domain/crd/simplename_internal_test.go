package crd

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSimpleName_is_the_JSONPath_dot_name(t *testing.T) {
	// The regular expression simpleName replaced, which kubectl's
	// JSONPath reads after a dot.
	re := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	for _, n := range []string{"", "a", "_", "Z9", "9a", "a.b", "a-b", "ab_c1", "é", "a b", "x'y", "A", "_9"} {
		require.Equal(t, re.MatchString(n), simpleName(n), "%q", n)
	}
}

func FuzzSimpleName(f *testing.F) {
	re := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	for _, n := range []string{"", "a", "9a", "a.b", "é"} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n string) {
		require.Equal(t, re.MatchString(n), simpleName(n), "%q", n)
	})
}
