package app

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOSEnvironmentNames(t *testing.T) {
	t.Setenv("LOAM_APP_NAMES_TEST", "a=b")
	names := osEnvironment{}.Names()
	require.Contains(t, names, "LOAM_APP_NAMES_TEST", "the name, cut at the first =")
	require.NotContains(t, names, "LOAM_APP_NAMES_TEST=a")
}
