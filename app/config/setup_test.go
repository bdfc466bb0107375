package config_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/config"
)

// TestTheSpecsFormOnASetup reads settings through an app.Setup's Process,
// as an Init does: app.Environment is a config.Environment, though config
// does not import app.
func TestTheSpecsFormOnASetup(t *testing.T) {
	s := &app.Setup{Process: app.Process{Environment: config.Map{
		"KUBERNETES_SERVICE_HOST": "fd00::1",
		"KUBERNETES_SERVICE_PORT": "443",
	}}}
	env := func(name string) config.Value[string] { return config.Env(s.Process.Environment, name) }

	server, err := config.Struct(func(r *config.Resolver) string {
		return net.JoinHostPort(r.Get(env("KUBERNETES_SERVICE_HOST")), r.Get(env("KUBERNETES_SERVICE_PORT")))
	}).Read(t.Context())
	require.NoError(t, err)
	require.Equal(t, "[fd00::1]:443", server)

	s.Process.Environment = nil
	_, err = config.Struct(func(r *config.Resolver) int {
		return r.Get(env("CONTROLLER_WORKERS").Parse(strconv.Atoi).Default(1))
	}).Read(t.Context())
	require.EqualError(t, err, "config CONTROLLER_WORKERS: no Environment to look the variable up in (nil)",
		"a Process without an Environment is reported, not a panic")
}

func BenchmarkStructRead(b *testing.B) {
	env := config.Map{"CONTROLLER_NAME": "memcached", "CONTROLLER_WORKERS": "4", "POD_NAMESPACE": "ns", "POD_NAME": "pod-0"}
	for b.Loop() {
		if _, err := readSettings(b.Context(), env); err != nil {
			b.Fatal(err)
		}
	}
}
