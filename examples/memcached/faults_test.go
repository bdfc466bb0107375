package memcached

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app/fault/jsonscenario"
)

// TestFaults: ScenarioMember is a key jsonscenario takes, so Faults never
// falls back to the Settings without a Decoder.
func TestFaults(t *testing.T) {
	codec, err := jsonscenario.New(ScenarioMember)
	require.NoError(t, err)
	require.Equal(t, []string{ScenarioMember}, codec.Members())
	require.NotNil(t, Faults())
}
