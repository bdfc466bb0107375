package fault_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"

	"github.com/loam-dev/loam/app/fault/fit"
)

// FuzzScenarioFromBaggage feeds the path an object's annotation takes into
// a reconcile: any string at all. It must never panic; it either fails with
// a *fit.DecodeError, or returns only the Decoder's member, holding a
// scenario that evaluates without error.
func FuzzScenarioFromBaggage(f *testing.F) {
	for _, seed := range []string{
		`acme.fault={%22rules%22:[{%22point%22:%22kube:deployments.apps:patch%22%2C%22abort%22:true}]}`,
		`tenant=a,acme.fault={%22rules%22:[]};p=1,user=%20bob`,
		`acme.fault={%22rules%22:[{%22point%22:%22%22}]}`,
		`{"rules":[]}`,
		`acme.fault=%ZZ`,
		`tenant=a`,
		``,
	} {
		f.Add(seed)
	}
	i := injector(f, nil)
	f.Fuzz(func(t *testing.T, value string) {
		b, err := i.ScenarioFromBaggage(value)
		if err != nil {
			var de *fit.DecodeError
			require.ErrorAs(t, err, &de)
			require.Zero(t, b.Len())
			return
		}
		if b.Len() == 0 {
			return
		}
		require.Equal(t, 1, b.Len())
		require.Equal(t, member, b.Members()[0].Key())
		s, ok, err := fit.FromContext(baggage.ContextWithBaggage(t.Context(), b), i.Decoder())
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, s.Validate())
	})
}
