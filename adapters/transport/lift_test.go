package transport_test

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"

	"github.com/loam-dev/loam/adapters/transport"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/internal/reconciled"
)

// A reconcile's request delayed for an hour goes on unfaulted as soon as
// failure injection is turned off: sent after a second, its abort not
// carried out, its baggage stripped, and its child not annotated, since
// nothing is carried on once injection is off.
func TestInjectFaults_a_delay_in_a_reconcile_ends_when_injection_is_turned_off(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		faults, codec := injector(t)
		ctx := withScenario(t.Context(), t, codec, fit.Scenario{Rules: []fit.Rule{
			{Point: "kube:configmaps:patch", Fault: fit.Fault{Delay: time.Hour, Abort: true}},
		}})
		ctx = reconciled.WithObject(ctx, ownerUID, annotation, baggage.FromContext(ctx))
		const body = `{"metadata":{"name":"c","ownerReferences":[{"uid":"owner-uid","controller":true}]}}`
		r := newRequest(ctx, t, http.MethodPatch, "https://api.test/api/v1/namespaces/ns/configmaps/c", transport.ApplyPatchYAML, []byte(body))
		propagation.Baggage{}.Inject(ctx, propagation.HeaderCarrier(r.Header))
		require.Contains(t, r.Header.Get("Baggage"), member)

		time.AfterFunc(time.Second, func() { faults.SetOn(false) })
		rec := &recorder{}
		start := time.Now()
		require.NoError(t, roundTrip(transport.InjectFaults(faults)(rec), r))
		require.Equal(t, time.Second, time.Since(start), "the delay ends as injection is turned off")
		require.Len(t, rec.reqs, 1, "the request is sent")
		require.Equal(t, body, string(rec.bodies[0]), "the child isn't annotated")
		require.False(t, strings.Contains(rec.reqs[0].Header.Get("Baggage"), member), "the scenario is stripped")
	})
}
