package memcached

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

func TestInit_exits_78_for_a_bad_value(t *testing.T) {
	valid := map[string]string{
		"CONTROLLER_NAME": "memcached-controller",
		"POD_NAMESPACE":   "memcached-system",
		"POD_NAME":        "memcached-controller-0",
	}
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{name: "workers", env: map[string]string{"CONTROLLER_WORKERS": "0"}, want: "config CONTROLLER_WORKERS"},
		{name: "workers not a number", env: map[string]string{"CONTROLLER_WORKERS": "two"}, want: "config CONTROLLER_WORKERS"},
		{name: "shards not a power of two", env: map[string]string{"CONTROLLER_SHARDS": "3"}, want: "config CONTROLLER_SHARDS"},
		{name: "shards above 256", env: map[string]string{"CONTROLLER_SHARDS": "512"}, want: "config CONTROLLER_SHARDS"},
		{name: "shards not a number", env: map[string]string{"CONTROLLER_SHARDS": "x"}, want: "config CONTROLLER_SHARDS"},
		{name: "namespaces twice", env: map[string]string{"WATCH_NAMESPACES": "team-a, team-a"}, want: `config WATCH_NAMESPACES: ["team-a" "team-a"]: [1] "team-a" is [0] too`},
		{name: "namespaces with an empty one", env: map[string]string{"WATCH_NAMESPACES": "team-a,,team-b"}, want: `config WATCH_NAMESPACES: ["team-a" "" "team-b"]: [1] is empty`},
		{name: "reconcile timeout", env: map[string]string{"CONTROLLER_RECONCILE_TIMEOUT": "0s"}, want: "config CONTROLLER_RECONCILE_TIMEOUT"},
		{name: "reconcile timeout not a duration", env: map[string]string{"CONTROLLER_RECONCILE_TIMEOUT": "5"}, want: "config CONTROLLER_RECONCILE_TIMEOUT"},
		{name: "name", env: map[string]string{"CONTROLLER_NAME": "Memcached Controller"}, want: "config CONTROLLER_NAME"},
		{name: "probe address", env: map[string]string{"PROBE_ADDRESS": "8081"}, want: "config PROBE_ADDRESS"},
		{name: "metrics address", env: map[string]string{"METRICS_ADDRESS": "8080"}, want: "config METRICS_ADDRESS"},
		{name: "webhooks neither on nor off", env: map[string]string{"WEBHOOKS": "yes"}, want: `config WEBHOOKS: "yes" is neither on nor off`},
		{name: "webhook address", env: map[string]string{"WEBHOOK_ADDRESS": "9443"}, want: `config WEBHOOK_ADDRESS: address "9443" is not host:port`},
		{name: "webhook port", env: map[string]string{"WEBHOOK_ADDRESS": ":https"}, want: `config WEBHOOK_ADDRESS: address ":https": port "https" is not a number`},
		{name: "an empty allowed prefix", env: map[string]string{"MEMCACHED_ALLOWED_IMAGES": "memcached:, ,registry.example.com/"}, want: `config MEMCACHED_ALLOWED_IMAGES: ["memcached:" "" "registry.example.com/"]: empty prefixes at [1]`},
		{name: "a default image not allowed", env: map[string]string{"MEMCACHED_DEFAULT_IMAGE": "nginx:1.27"}, want: `config MEMCACHED_DEFAULT_IMAGE: the default image "nginx:1.27" starts with none of the allowed prefixes ["memcached:"]`},
		{name: "a default image the prefixes allow", env: map[string]string{"MEMCACHED_ALLOWED_IMAGES": "registry.example.com/", "MEMCACHED_DEFAULT_IMAGE": "memcached:1.6"}, want: `config MEMCACHED_DEFAULT_IMAGE: the default image "memcached:1.6" starts with none of the allowed prefixes ["registry.example.com/"]`},
		{name: "a default image that is no reference", env: map[string]string{"MEMCACHED_DEFAULT_IMAGE": "memcached:Latest Alpine"}, want: `config MEMCACHED_DEFAULT_IMAGE: the default image "memcached:Latest Alpine" is not an image reference`},
		{name: "a fault switch that is no ConfigMap's name", env: map[string]string{"FAILURE_INJECTION_SWITCH": "Failure Injection"}, want: `config FAILURE_INJECTION_SWITCH: "Failure Injection" is not a ConfigMap's name`},
		{name: "webhooks on without their certificate", env: map[string]string{"WEBHOOKS": "on"}, want: "/tmp/k8s-webhook-server/serving-certs/tls.crt"},
		{name: "a kubeconfig that isn't there", env: map[string]string{"MEMCACHED_KUBECONFIG": "/nowhere/kubeconfig"}, want: "MEMCACHED_KUBECONFIG /nowhere/kubeconfig"},
		{name: "no service account", env: map[string]string{}, want: "ca.crt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				env := map[string]string{}
				for k, v := range valid {
					env[k] = v
				}
				for k, v := range tt.env {
					env[k] = v
				}
				a := apptest.Start(t, Init, apptest.WithEnv(env))
				require.Equal(t, 78, a.Wait(), "stderr: %s", a.Stderr())
				require.Contains(t, a.Stderr(), tt.want)
			})
		})
	}
}

// CONTROLLER_SHARDS of 0, no sharding, and of a power of two are good
// values: Init fails on the Connection alone.
func TestInit_takes_0_and_a_power_of_two_for_CONTROLLER_SHARDS(t *testing.T) {
	for _, shards := range []string{"0", "1", "4", "256"} {
		t.Run(shards, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := apptest.Start(t, Init, apptest.WithEnv(map[string]string{
					"CONTROLLER_NAME":   "memcached-controller",
					"POD_NAMESPACE":     "memcached-system",
					"POD_NAME":          "memcached-controller-0",
					"CONTROLLER_SHARDS": shards,
				}))
				require.Equal(t, 78, a.Wait())
				require.Contains(t, a.Stderr(), "ca.crt", "the Connection's mistake")
				require.NotContains(t, a.Stderr(), "CONTROLLER_SHARDS")
			})
		})
	}
}

func TestOperatorInit_exits_78_naming_every_variable_and_the_telemetry_not_its_own(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// apptest's in-memory Telemetry, which no exporter of op's reads.
		a := apptest.Start(t, NewOperator("memcached-operator").Init,
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
		op := NewOperator("memcached-operator")
		a := apptest.Start(t, op.Init,
			apptest.WithEnv(map[string]string{"METRICS_ADDRESS": "8080"}),
			apptest.WithAppOptions(app.WithTelemetry(op.Telemetry)))
		require.Equal(t, 78, a.Wait())
		require.Contains(t, a.Stderr(), "config CONTROLLER_NAME: not found\n")
		require.Contains(t, a.Stderr(), "config METRICS_ADDRESS")
		require.NotContains(t, a.Stderr(), errNoExporter.Error())
	})
}

// Every webhook variable's mistake is in one run's error, WEBHOOKS on or
// not.
func TestInit_exits_78_naming_every_webhook_variable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := apptest.Start(t, Init, apptest.WithEnv(map[string]string{
			"CONTROLLER_NAME":          "memcached-controller",
			"POD_NAMESPACE":            "memcached-system",
			"POD_NAME":                 "memcached-controller-0",
			"WEBHOOKS":                 "true",
			"WEBHOOK_ADDRESS":          "localhost",
			"MEMCACHED_ALLOWED_IMAGES": ",",
			"MEMCACHED_DEFAULT_IMAGE":  "nginx",
		}))
		require.Equal(t, 78, a.Wait())
		require.Equal(t, "init: config WEBHOOKS: \"true\" is neither on nor off\n"+
			"config WEBHOOK_ADDRESS: address \"localhost\" is not host:port: address localhost: missing port in address\n"+
			"config MEMCACHED_ALLOWED_IMAGES: [\"\" \"\"]: empty prefixes at [0], [1]\n"+
			"config MEMCACHED_DEFAULT_IMAGE: the default image \"nginx\" is not an image reference, such as "+DefaultImage+"\n", a.Stderr())
	})
}

// With WEBHOOKS=on, a certificate that isn't there and a Connection that
// can't be made are both reported; with it off, the certificate is never
// read.
func TestInit_reads_the_webhook_certificate_only_with_webhooks_on(t *testing.T) {
	for _, tt := range []struct {
		webhooks string
		reads    bool
	}{{"on", true}, {"off", false}, {"", false}} {
		t.Run("WEBHOOKS="+tt.webhooks, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := apptest.Start(t, Init, apptest.WithEnv(map[string]string{
					"CONTROLLER_NAME":   "memcached-controller",
					"POD_NAMESPACE":     "memcached-system",
					"POD_NAME":          "memcached-controller-0",
					"WEBHOOKS":          tt.webhooks,
					"WEBHOOK_CERT_FILE": "/nowhere/tls.crt",
					"WEBHOOK_KEY_FILE":  "/nowhere/tls.key",
				}))
				require.Equal(t, 78, a.Wait())
				require.Contains(t, a.Stderr(), "ca.crt", "the Connection's mistake")
				if tt.reads {
					require.Contains(t, a.Stderr(), "/nowhere/tls.crt")
					require.Contains(t, a.Stderr(), "/nowhere/tls.key")
				} else {
					require.NotContains(t, a.Stderr(), "/nowhere/")
				}
			})
		})
	}
}
