package apptest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
)

func TestEnv_names_its_variables_sorted(t *testing.T) {
	var env app.Environment = apptest.Env{"OTEL_SERVICE_NAME": "memcached", "CONTROLLER_NAME": "", "POD_NAME": "p"}
	lister, ok := env.(app.EnvironmentLister)
	require.True(t, ok)
	require.Equal(t, []string{"CONTROLLER_NAME", "OTEL_SERVICE_NAME", "POD_NAME"}, lister.Names(), "an empty variable is set too")
	require.Empty(t, apptest.Env(nil).Names())
}
