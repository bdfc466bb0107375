package fault_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"

	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
)

// TestInjectDelayEndsWhenSwitchedOff: a one-hour delay already running
// ends as the switch turns off, and the call goes on unfaulted — not
// failed, its abort not carried out — with an event and a record saying
// why.
func TestInjectDelayEndsWhenSwitchedOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := apptest.NewTelemetry()
		i, err := fault.New(fault.Settings{Decoder: codec(t), Logger: tel.LoggerProvider.Logger("test")})
		require.NoError(t, err)
		ctx := withScenario(t.Context(), t, fit.Scenario{ID: "x", Rules: []fit.Rule{
			{Point: "p", Fault: fit.Fault{Delay: time.Hour, Abort: true}},
		}})
		time.AfterFunc(time.Second, func() { i.SetOn(false) })
		r := newRecorder()
		start := time.Now()
		var got error
		events := r.events(ctx, func(ctx context.Context) { got = i.Inject(ctx, "p") })
		require.Equal(t, time.Second, time.Since(start), "the delay ends as the switch turns off")
		require.NoError(t, got, "the call goes on unfaulted")

		require.Len(t, events, 2)
		require.Equal(t, fault.LiftedEvent, events[1].Name)
		a := attrs(events[1])
		require.Equal(t, "p", a[fault.PointKey].AsString())
		require.Equal(t, fault.LiftedOff, a[fault.ReasonKey].AsString())
		require.Equal(t, 1.0, a[fault.WaitedKey].AsFloat64())
		require.Equal(t, "x", a[fault.ExperimentKey].AsString())

		records := tel.Records()
		require.Len(t, records, 2, "the fault's record, then the lift's")
		require.Equal(t, fault.LiftedBody, records[1].Body().AsString())
		fields := fieldsOf(records[1])
		require.Equal(t, map[string]string{
			"loam.fit.point": "p", "loam.fit.delay": "3600", "loam.fit.waited": "1",
			"loam.fit.reason": fault.LiftedOff, "loam.fit.experiment": "x",
		}, fields)
	})
}

// TestInjectDelayEndsWithItsScenario: a delay that would outlast its
// scenario's end ends there, and the call goes on unfaulted.
func TestInjectDelayEndsWithItsScenario(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		i := injector(t, nil)
		ctx := withScenario(t.Context(), t, fit.Scenario{Ends: time.Now().Add(2 * time.Second), Rules: []fit.Rule{
			{Point: "p", Fault: fit.Fault{Delay: time.Hour, Status: 503}},
		}})
		r := newRecorder()
		start := time.Now()
		var got error
		events := r.events(ctx, func(ctx context.Context) { got = i.Inject(ctx, "p") })
		require.Equal(t, 2*time.Second, time.Since(start), "the delay ends with its scenario")
		require.NoError(t, got, "the call goes on unfaulted")
		require.Len(t, events, 2)
		require.Equal(t, fault.LiftedEvent, events[1].Name)
		require.Equal(t, fault.LiftedExpired, attrs(events[1])[fault.ReasonKey].AsString())
	})
}

// TestInjectDelayEndsWithItsScenarioOnTheSettingsClock: the scenario's
// end is read on the Settings' clock, which may run ahead of the timers'.
func TestInjectDelayEndsWithItsScenarioOnTheSettingsClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		skew := 10 * time.Minute
		i, err := fault.New(fault.Settings{Decoder: codec(t), Now: func() time.Time { return time.Now().Add(skew) }})
		require.NoError(t, err)
		ctx := withScenario(t.Context(), t, fit.Scenario{Ends: time.Now().Add(skew + 3*time.Second), Rules: []fit.Rule{
			{Point: "p", Fault: fit.Fault{Delay: time.Hour}},
		}})
		require.Equal(t, 3*time.Second, injectTook(ctx, t, i))
	})
}

// TestInjectDelaySwitchedOffAndOnAgain: a delay that began while the
// switch was on, and that the switch cut short, stays cut short; a delay
// that begins after the switch is on again runs in full.
func TestInjectDelaySwitchedOffAndOnAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		i := injector(t, nil)
		ctx := withDelay(t.Context(), t, time.Minute)
		time.AfterFunc(time.Second, func() { i.SetOn(false); i.SetOn(true) })
		require.Equal(t, time.Second, injectTook(ctx, t, i))
		// The cut woke the first delay at SetOn(false): the switch is on
		// again once the AfterFunc's goroutine has run SetOn(true).
		synctest.Wait()
		require.Equal(t, time.Minute, injectTook(ctx, t, i), "on again, a new delay runs in full")
	})
}

// Off, an Injector reads no scenario: Carries is false, so nothing is
// carried on to children, and Ends decodes nothing. Strip still strips.
func TestOffCarriesNothing(t *testing.T) {
	i := injector(t, nil)
	ctx := withScenario(t.Context(), t, fit.Scenario{Ends: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)})
	b := baggage.FromContext(ctx)
	require.True(t, i.Carries(ctx))
	_, ok := i.Ends(b)
	require.True(t, ok)

	i.SetOn(false)
	require.False(t, i.Carries(ctx), "off, a context carries no scenario")
	_, ok = i.Ends(b)
	require.False(t, ok, "off, no end is decoded")
	require.Zero(t, i.Strip(t.Context(), b).Len(), "off, the scenario is still stripped")
	require.Zero(t, baggage.FromContext(i.StripContext(ctx)).Len())
}
