package databases

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/httpmetrics"
)

func TestInit_exits_78_naming_the_three_variables(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := apptest.Start(t, Init)
		require.Equal(t, 78, a.Wait())
		require.Equal(t, "init: config CONTROLLER_NAME: not found\n"+
			"config POD_NAMESPACE: not found\n"+
			"config POD_NAME: not found\n", a.Stderr())
	})
}

func TestReadSettings(t *testing.T) {
	valid := map[string]string{
		"CONTROLLER_NAME": "databases-controller",
		"POD_NAMESPACE":   "databases-system",
		"POD_NAME":        "databases-controller-0",
	}
	tests := []struct {
		name string
		env  map[string]string
		want []string // none when the settings are valid
	}{
		{name: "defaults", env: map[string]string{}},
		{name: "every variable", env: map[string]string{
			"POSTGRES_HOST": "postgres.db.svc", "POSTGRES_PORT": "6543", "POSTGRES_USER": "admin",
			"POSTGRES_PASSWORD": "secret", "POSTGRES_DATABASE": "admin", "WATCH_NAMESPACE": "shop",
			"EXPERIMENT_NAMESPACE": "staging", "PROBE_ADDRESS": "127.0.0.1:9081", "METRICS_ADDRESS": "127.0.0.1:9080",
		}},
		{name: "port zero", env: map[string]string{"POSTGRES_PORT": "0"}, want: []string{"config POSTGRES_PORT"}},
		{name: "port too big", env: map[string]string{"POSTGRES_PORT": "65536"}, want: []string{"config POSTGRES_PORT"}},
		{name: "host", env: map[string]string{"POSTGRES_HOST": "not a host"}, want: []string{"config POSTGRES_HOST"}},
		{name: "probe address", env: map[string]string{"PROBE_ADDRESS": "8081"}, want: []string{"config PROBE_ADDRESS"}},
		{name: "metrics address", env: map[string]string{"METRICS_ADDRESS": "8080"}, want: []string{"config METRICS_ADDRESS"}},
		{name: "watch namespace", env: map[string]string{"WATCH_NAMESPACE": "Shop"}, want: []string{"config WATCH_NAMESPACE"}},
		{name: "two at once", env: map[string]string{"POSTGRES_PORT": "x", "CONTROLLER_NAME": "Bad Name"}, want: []string{"config CONTROLLER_NAME", "config POSTGRES_PORT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := apptest.Env{}
			for k, v := range valid {
				env[k] = v
			}
			for k, v := range tt.env {
				env[k] = v
			}
			s, err := ReadSettings(t.Context(), env)
			if len(tt.want) > 0 {
				for _, w := range tt.want {
					require.ErrorContains(t, err, w)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, "databases-controller", s.Controller.Name)
			require.Equal(t, "databases-system", s.Controller.LeaderElection.Namespace)
			if tt.name == "defaults" {
				require.Equal(t, Postgres{Host: "127.0.0.1", Port: 5432, User: "postgres", Database: "postgres"}, s.Postgres)
				require.Empty(t, s.Controller.Namespace)
				require.Empty(t, s.ExperimentNamespace)
				require.Equal(t, ":8081", s.Probes.Address)
				require.Equal(t, httpmetrics.Settings{Address: ":8080"}, s.Metrics)
				return
			}
			require.Equal(t, Postgres{Host: "postgres.db.svc", Port: 6543, User: "admin", Password: "secret", Database: "admin"}, s.Postgres)
			require.Equal(t, "shop", s.Controller.Namespace)
			require.Equal(t, "staging", s.ExperimentNamespace)
			require.Equal(t, "127.0.0.1:9081", s.Probes.Address)
			require.Equal(t, httpmetrics.Settings{Address: "127.0.0.1:9080"}, s.Metrics)
		})
	}
}

func TestOperatorInit_exits_78_naming_every_variable_and_the_telemetry_not_its_own(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// apptest's in-memory Telemetry, which no exporter of op's reads.
		a := apptest.Start(t, NewOperator("databases-controller").Init,
			apptest.WithEnv(map[string]string{"METRICS_ADDRESS": "localhost"}))
		require.Equal(t, 78, a.Wait())
		require.Equal(t, "init: config CONTROLLER_NAME: not found\n"+
			"config POD_NAMESPACE: not found\n"+
			"config POD_NAME: not found\n"+
			"config METRICS_ADDRESS: "+httpmetrics.CheckAddress("localhost").Error()+"\n"+
			errNoExporter.Error()+"\n", a.Stderr())
	})
}

func TestOperatorInit_with_its_Telemetry_exits_78_naming_only_the_variables(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		op := NewOperator("databases-controller")
		a := apptest.Start(t, op.Init,
			apptest.WithEnv(map[string]string{"METRICS_ADDRESS": "8080"}),
			apptest.WithAppOptions(app.WithTelemetry(op.Telemetry)))
		require.Equal(t, 78, a.Wait())
		require.Contains(t, a.Stderr(), "config CONTROLLER_NAME: not found\n")
		require.Contains(t, a.Stderr(), "config METRICS_ADDRESS")
		require.NotContains(t, a.Stderr(), errNoExporter.Error())
	})
}
