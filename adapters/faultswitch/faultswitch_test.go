package faultswitch

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/log/noop"
	"go.uber.org/goleak"

	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// enabled returns an Injector with failure injection, on.
func enabled(t *testing.T) *fault.Injector {
	t.Helper()
	codec, err := jsonscenario.New("acme.fault")
	require.NoError(t, err)
	faults, err := fault.New(fault.Settings{Decoder: codec})
	require.NoError(t, err)
	require.True(t, faults.On())
	return faults
}

func config(faults *fault.Injector) Config {
	return Config{Faults: faults, Namespace: "ops", Name: "failure-injection", Key: "switch", Logger: noop.NewLoggerProvider().Logger("test")}
}

func TestNew_turns_failure_injection_off_until_the_first_read(t *testing.T) {
	faults := enabled(t)
	New(config(faults))
	require.False(t, faults.On())
}

// Each read of the ConfigMap turns the switch as its key says: on for
// "on", off for "off", either with whitespace, and off for anything
// else, a missing key, or a missing ConfigMap.
func TestSwitch_reads_the_ConfigMap_s_key(t *testing.T) {
	for _, tc := range []struct {
		name  string
		data  map[string]string
		found bool
		on    bool
	}{
		{"on", map[string]string{"switch": "on"}, true, true},
		{"on with whitespace", map[string]string{"switch": " on\n"}, true, true},
		{"off", map[string]string{"switch": "off"}, true, false},
		{"anything else", map[string]string{"switch": "yes"}, true, false},
		{"another key", map[string]string{"other": "on"}, true, false},
		{"no ConfigMap", nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faults := enabled(t)
			s := New(config(faults))
			faults.SetOn(!tc.on)
			s.read(t.Context(), tc.data, tc.found, nil)
			require.Equal(t, tc.on, faults.On())
		})
	}
}

// In an App without failure injection a Switch watches nothing, and
// serves until it is stopped.
func TestSwitch_without_failure_injection_serves_until_Shutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(config(fault.Inert()))
		served := make(chan error, 1)
		go func() { served <- s.Serve(t.Context()) }()
		synctest.Wait()
		require.Empty(t, served, "it serves until stopped")
		require.NoError(t, s.Shutdown(t.Context()))
		require.NoError(t, <-served)
	})
}

func TestSwitch_serves_until_its_context_ends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(config(fault.Inert()))
		ctx, cancel := context.WithCancel(t.Context())
		served := make(chan error, 1)
		go func() { served <- s.Serve(ctx) }()
		synctest.Wait()
		cancel()
		require.NoError(t, <-served)
		require.NoError(t, s.Shutdown(t.Context()), "Serve has returned")
	})
}

// A Shutdown whose context ends before Serve returns returns its cause.
func TestShutdown_returns_its_context_s_cause_when_Serve_does_not_return(t *testing.T) {
	s := New(config(fault.Inert()))
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := errors.New("the grace period is over")
	cancel(cause)
	require.ErrorIs(t, s.Shutdown(ctx), cause, "Serve never ran, so it never returned")
}

// A ConfigMap that can't be read turns the switch off, whatever it said
// before, with a WARN record naming why.
func TestSwitch_an_unreadable_ConfigMap_turns_it_off(t *testing.T) {
	tel := apptest.NewTelemetry()
	faults := enabled(t)
	c := config(faults)
	c.Logger = tel.LoggerProvider.Logger("test")
	s := New(c)
	s.read(t.Context(), map[string]string{"switch": "on"}, true, nil)
	require.True(t, faults.On())
	s.read(t.Context(), nil, false, errors.New("configmap ops/failure-injection: not read for 30s: forbidden"))
	require.False(t, faults.On())
	records := tel.Records()
	require.Len(t, records, 2)
	require.Equal(t, fault.SwitchUnreadBody, records[1].Body().AsString())
	require.Equal(t, otellog.SeverityWarn, records[1].Severity())
	var message string
	records[1].WalkAttributes(func(kv attribute.KeyValue) bool {
		if kv.Key == "exception.message" {
			message = kv.Value.AsString()
		}
		return true
	})
	require.Contains(t, message, "not read for 30s: forbidden")
}
