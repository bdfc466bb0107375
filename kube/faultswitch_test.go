package kube

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
)

func TestNewFaultSwitch_mistakes_are_reported_together(t *testing.T) {
	codec, err := jsonscenario.New("acme.fault")
	require.NoError(t, err)
	faults, err := fault.New(fault.Settings{Decoder: codec, Switch: "/etc/failure-injection/switch"})
	require.NoError(t, err)
	s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: apptest.NewTelemetry().Telemetry, Faults: faults}
	c, err := NewClient(s, Connection{Server: "api.test:443", TLS: &tls.Config{MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)

	_, err = NewFaultSwitch(s, c, FaultSwitchSettings{Namespace: "Bad_NS", Name: "", Key: "a key"})
	require.Error(t, err)
	wants := []string{
		`kube: FaultSwitchSettings.Namespace "Bad_NS": a lowercase RFC 1123 subdomain`,
		`kube: FaultSwitchSettings.Name "": a lowercase RFC 1123 subdomain`,
		`kube: FaultSwitchSettings.Key "a key": a valid config key must consist of alphanumeric characters`,
		`kube: NewFaultSwitch: fault.Settings.Switch names the file /etc/failure-injection/switch already: an App has one kill switch`,
	}
	for _, want := range wants {
		require.ErrorContains(t, err, want)
	}
	require.Len(t, strings.Split(err.Error(), "\n"), len(wants), "each mistake once: %v", err)
	require.True(t, faults.On(), "a FaultSwitch that isn't made turns nothing off")

	_, err = NewFaultSwitch(nil, nil, FaultSwitchSettings{Namespace: "ns", Name: "switch"})
	require.EqualError(t, err, "kube: NewFaultSwitch: the Setup is nil: pass the one Init is given\nkube: NewFaultSwitch: the Client is nil")
}

// TestFaultSwitch_turns_failure_injection_off_until_its_first_read: made
// in Init, it turns the Injector off; the ConfigMap's first read, which
// kubetest/e2e's tests make against a real API server, decides.
func TestFaultSwitch_turns_failure_injection_off_until_its_first_read(t *testing.T) {
	faults, _ := faultsForTest(t)
	s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: apptest.NewTelemetry().Telemetry, Faults: faults}
	c, err := NewClient(s, Connection{Server: "api.test:443", TLS: &tls.Config{MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	require.True(t, faults.On())
	_, err = NewFaultSwitch(s, c, FaultSwitchSettings{Namespace: "ops", Name: "failure-injection"})
	require.NoError(t, err)
	require.False(t, faults.On())
}

// TestFaultSwitch_in_an_App_without_failure_injection_serves_until_stopped:
// it watches nothing, and Shutdown ends its Serve.
func TestFaultSwitch_in_an_App_without_failure_injection_serves_until_stopped(t *testing.T) {
	s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: apptest.NewTelemetry().Telemetry, Faults: fault.Inert()}
	c, err := NewClient(s, Connection{Server: "api.test:443", TLS: &tls.Config{MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	f, err := NewFaultSwitch(s, c, FaultSwitchSettings{Namespace: "ops", Name: "failure-injection"})
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- f.Serve(t.Context()) }()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	require.NoError(t, f.Shutdown(ctx))
	require.NoError(t, <-served)
	require.False(t, s.Faults.On())
}

// A Shutdown whose context ends before Serve returns names the
// FaultSwitch in its error, which wraps the context's.
func TestFaultSwitch_Shutdown_past_its_context_names_the_switch(t *testing.T) {
	s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: apptest.NewTelemetry().Telemetry, Faults: fault.Inert()}
	c, err := NewClient(s, Connection{Server: "api.test:443", TLS: &tls.Config{MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	f, err := NewFaultSwitch(s, c, FaultSwitchSettings{Namespace: "ops", Name: "failure-injection"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = f.Shutdown(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.EqualError(t, err, "kube: FaultSwitch: context canceled", "Serve never ran, so it never returned")
}
