package scenario_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	"go.uber.org/mock/gomock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/adapters/scenario"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
	"github.com/loam-dev/loam/internal/reconciled"
	"github.com/loam-dev/loam/ports"
	"github.com/loam-dev/loam/ports/portsmock"
)

const annotation = "acme.example.com/failure-scenario"

// a scenario of the jsonscenario Decoder's member, as the tool that runs
// an experiment writes it.
const value = "acme.fault=%7B%22rules%22:[]%7D"

func faults(t *testing.T) *fault.Injector {
	t.Helper()
	codec, err := jsonscenario.New("acme.fault")
	require.NoError(t, err)
	f, err := fault.New(fault.Settings{Decoder: codec})
	require.NoError(t, err)
	return f
}

// inNamespace trusts the objects of namespace ns.
func inNamespace(ns string) *scenario.Trust {
	return &scenario.Trust{Annotation: annotation, Trust: func(obj metav1.Object) bool { return obj.GetNamespace() == ns }}
}

// Without a TrustScenario, or in an App without failure injection, no
// hook is made: the runtime reads no annotation and watches no switch.
func TestHooks_are_nil_when_no_reconcile_takes_a_scenario(t *testing.T) {
	for _, tc := range []struct {
		name   string
		trust  *scenario.Trust
		faults *fault.Injector
	}{
		{"no TrustScenario", nil, faults(t)},
		{"no failure injection", inNamespace("ns"), fault.Inert()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Nil(t, scenario.Prepare(tc.trust, tc.faults, nil))
			require.Nil(t, scenario.Until(tc.trust, tc.faults))
			require.Nil(t, scenario.Carried(tc.trust, tc.faults))
			require.Nil(t, scenario.Lifts(tc.trust, tc.faults))
		})
	}
}

// Prepare reads the annotation as domain/scenario.Decide rules, and
// reports each strip to the Recorder.
func TestPrepare(t *testing.T) {
	doc := []byte(`{"metadata":{"namespace":"ns","name":"m","uid":"u1"}}`)
	other := []byte(`{"metadata":{"namespace":"other","name":"m","uid":"u1"}}`)
	for _, tc := range []struct {
		name     string
		value    string
		json     []byte
		stripped int  // ScenarioStripped calls
		withErr  bool // the strip's error is set
		carried  bool
	}{
		{"no annotation", "", doc, 0, false, false},
		{"a trusted scenario", value, doc, 0, false, true},
		{"an untrusted one", value, other, 1, false, false},
		{"not baggage", "not baggage,,", doc, 1, true, false},
		{"an object that doesn't decode", value, []byte("{"), 1, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := faults(t)
			rec := portsmock.NewMockRecorder(gomock.NewController(t))
			rec.EXPECT().ScenarioStripped(gomock.Any(), gomock.Any()).Do(func(_ context.Context, err error) {
				require.Equal(t, tc.withErr, err != nil, "the strip's error: %v", err)
			}).Times(tc.stripped)
			prepare := scenario.Prepare(inNamespace("ns"), f, rec)
			obj := ports.Object{UID: "u1", Annotations: map[string]string{annotation: tc.value}, JSON: tc.json}

			ctx := prepare(t.Context(), obj)

			require.Equal(t, tc.carried, scenario.Carried(inNamespace("ns"), f)(ctx))
			mark, marked := reconciled.FromContext(ctx)
			require.Equal(t, tc.carried, marked, "marked as the reconcile of obj")
			if tc.carried {
				require.Equal(t, "u1", string(mark.UID))
				require.Equal(t, annotation, mark.Annotation)
				require.Equal(t, `{"rules":[]}`, mark.Scenario.Member("acme.fault").Value())
				require.Equal(t, `{"rules":[]}`, baggage.FromContext(ctx).Member("acme.fault").Value(), "the scenario joins the reconcile's baggage")
			}
		})
	}
}

// Lifts calls lift each time failure injection is turned off, and never
// once stopped.
func TestLifts_calls_lift_when_failure_injection_is_turned_off(t *testing.T) {
	f := faults(t)
	lifts := 0
	stop := scenario.Lifts(inNamespace("ns"), f)(func() { lifts++ })
	f.SetOn(false)
	require.Equal(t, 1, lifts)
	f.SetOn(true)
	require.Equal(t, 1, lifts, "turning it on lifts nothing")
	stop()
	f.SetOn(false)
	require.Equal(t, 1, lifts, "stopped, it calls lift no more")
}

// Until says when a carried scenario ends: a scenario without an end
// has none.
func TestUntil_of_a_context_without_a_scenario(t *testing.T) {
	_, ends := scenario.Until(inNamespace("ns"), faults(t))(t.Context())
	require.False(t, ends)
}

// With failure injection off, Prepare decodes nothing and asks trust
// nothing: the reconcile carries no scenario and its children get none.
// A pass that carried one before the switch turned off is still Carried,
// so that Lift reconciles it again at once.
func TestPrepare_decodes_nothing_while_failure_injection_is_off(t *testing.T) {
	f := faults(t)
	asked := 0
	trust := &scenario.Trust{Annotation: annotation, Trust: func(metav1.Object) bool { asked++; return true }}
	rec := portsmock.NewMockRecorder(gomock.NewController(t))
	prepare := scenario.Prepare(trust, f, rec)
	for _, v := range []string{value, "not baggage,,"} {
		obj := ports.Object{UID: "u1", Annotations: map[string]string{annotation: v}, JSON: []byte(`{"metadata":{"namespace":"ns","name":"m","uid":"u1"}}`)}
		f.SetOn(false)
		ctx := prepare(t.Context(), obj)
		require.Zero(t, asked, "trust isn't asked")
		require.Zero(t, baggage.FromContext(ctx).Len(), "nothing joins the reconcile's baggage")
		_, marked := reconciled.FromContext(ctx)
		require.False(t, marked, "nothing is carried on to children")
		f.SetOn(true)
	}

	rec.EXPECT().ScenarioStripped(gomock.Any(), gomock.Any()).Times(0)
	obj := ports.Object{UID: "u1", Annotations: map[string]string{annotation: value}, JSON: []byte(`{"metadata":{"namespace":"ns","name":"m","uid":"u1"}}`)}
	ctx := prepare(t.Context(), obj)
	require.Equal(t, 1, asked)
	f.SetOn(false)
	require.True(t, scenario.Carried(trust, f)(ctx), "a pass that carried a scenario is lifted once the switch is off")
	_, ends := scenario.Until(trust, f)(ctx)
	require.False(t, ends, "an off switch decodes nothing, not even the end")
}
