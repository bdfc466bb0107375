package kube

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
)

// A Setup built by hand, with no providers, reports nothing rather than
// failing: the adapter refuses a nil provider, so kube gives it no-ops.
func TestTelemetryOf_a_Setup_without_providers_reports_nothing(t *testing.T) {
	tel, err := telemetryOf(&app.Setup{}, "memcached-controller", "Memcached", 1)
	require.NoError(t, err)
	require.NotNil(t, tel.recorder)
	require.NotNil(t, tel.metrics)
	require.NotNil(t, tel.logger.GetSink())
}
