package otlp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/examples/otlp"
)

// defaults are the Settings of an environment with no OTEL_* variable.
func defaults() otlp.Settings {
	signal := otlp.Signal{Protocol: "http/protobuf", Headers: map[string]string{}, Timeout: 10 * time.Second}
	return otlp.Settings{
		Traces: signal, Metrics: signal, Logs: signal,
		Sampler: "parentbased_always_on", SamplerArg: 1,
		MetricExportInterval: time.Minute, MetricExportTimeout: 30 * time.Second,
	}
}

func TestRead(t *testing.T) {
	tests := []struct {
		name   string
		env    apptest.Env
		change func(s *otlp.Settings)
	}{
		{name: "nothing set exports nothing", env: apptest.Env{"CONTROLLER_NAME": "memcached"}, change: func(*otlp.Settings) {}},
		{
			// The specification: "Enum values SHOULD be interpreted in a
			// case-insensitive manner."
			name: "enum values in any case",
			env: apptest.Env{
				"OTEL_EXPORTER_OTLP_ENDPOINT":         "http://collector:4317",
				"OTEL_EXPORTER_OTLP_PROTOCOL":         "GRPC",
				"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL":  "HTTP/Protobuf",
				"OTEL_EXPORTER_OTLP_COMPRESSION":      "GZip",
				"OTEL_LOGS_EXPORTER":                  "None",
				"OTEL_METRICS_EXPORTER":               "OTLP",
				"OTEL_TRACES_SAMPLER":                 "Always_Off",
				"OTEL_PROPAGATORS":                    "TraceContext,B3Multi",
				"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "",
			},
			change: func(s *otlp.Settings) {
				s.Traces.Endpoint = "http://collector:4317/v1/traces"
				s.Metrics.Endpoint = "http://collector:4317"
				s.Metrics.Protocol, s.Logs.Protocol = "grpc", "grpc"
				s.Traces.Gzip, s.Metrics.Gzip, s.Logs.Gzip = true, true, true
				s.Sampler = "always_off"
				s.Propagators = []string{"tracecontext", "b3multi"}
			},
		},
		{
			// The specification: "Implementations SHOULD interpret timeout
			// zero values as no limit".
			name: "a timeout of 0 is no limit",
			env: apptest.Env{
				"OTEL_EXPORTER_OTLP_TIMEOUT":         "0",
				"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT": "2000",
				"OTEL_METRIC_EXPORT_TIMEOUT":         "0",
			},
			change: func(s *otlp.Settings) {
				s.Traces.Timeout, s.Logs.Timeout = 0, 0
				s.Metrics.Timeout = 2 * time.Second
				s.MetricExportTimeout = 0
			},
		},
		{
			name: "the base endpoint, beneath which each signal has its path",
			env:  apptest.Env{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"},
			change: func(s *otlp.Settings) {
				s.Traces.Endpoint = "http://collector:4318/v1/traces"
				s.Metrics.Endpoint = "http://collector:4318/v1/metrics"
				s.Logs.Endpoint = "http://collector:4318/v1/logs"
			},
		},
		{
			name: "a base endpoint with a path",
			env:  apptest.Env{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://gateway.example.com/otlp"},
			change: func(s *otlp.Settings) {
				s.Traces.Endpoint = "https://gateway.example.com/otlp/v1/traces"
				s.Metrics.Endpoint = "https://gateway.example.com/otlp/v1/metrics"
				s.Logs.Endpoint = "https://gateway.example.com/otlp/v1/logs"
			},
		},
		{
			name: "a signal's own endpoint is used as it is, and none turns a signal off",
			env: apptest.Env{
				"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://collector:4318",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://tempo:4318/custom",
				"OTEL_LOGS_EXPORTER":                 "none",
				"OTEL_METRICS_EXPORTER":              "otlp",
			},
			change: func(s *otlp.Settings) {
				s.Traces.Endpoint = "http://tempo:4318/custom"
				s.Metrics.Endpoint = "http://collector:4318/v1/metrics"
			},
		},
		{
			name: "only one signal's endpoint exports only that signal",
			env:  apptest.Env{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://mimir:4318/otlp/v1/metrics"},
			change: func(s *otlp.Settings) {
				s.Metrics.Endpoint = "http://mimir:4318/otlp/v1/metrics"
			},
		},
		{
			name: "headers, timeout and compression, a signal's own replacing the base's",
			env: apptest.Env{
				"OTEL_EXPORTER_OTLP_HEADERS":             "api-key=secret, team=a%20b",
				"OTEL_EXPORTER_OTLP_LOGS_HEADERS":        "tenant=logs",
				"OTEL_EXPORTER_OTLP_TIMEOUT":             "2500",
				"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT":     "500",
				"OTEL_EXPORTER_OTLP_COMPRESSION":         "gzip",
				"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION":  "none",
				"OTEL_EXPORTER_OTLP_PROTOCOL":            "http/protobuf",
				"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL":     "http/protobuf",
				"OTEL_EXPORTER_OTLP_METRICS_COMPRESSION": "",
			},
			change: func(s *otlp.Settings) {
				base := map[string]string{"api-key": "secret", "team": "a b"}
				s.Traces = otlp.Signal{Protocol: "http/protobuf", Headers: base, Timeout: 2500 * time.Millisecond}
				s.Metrics = otlp.Signal{Protocol: "http/protobuf", Headers: base, Timeout: 500 * time.Millisecond, Gzip: true}
				s.Logs = otlp.Signal{Protocol: "http/protobuf", Headers: map[string]string{"tenant": "logs"}, Timeout: 2500 * time.Millisecond, Gzip: true}
			},
		},
		{
			name: "the resource, the sampler and the metric interval",
			env: apptest.Env{
				"OTEL_SERVICE_NAME":           "memcached-operator",
				"OTEL_RESOURCE_ATTRIBUTES":    "deployment.environment.name=staging,k8s.pod.name=memcached-0,note=a%2Cb",
				"OTEL_TRACES_SAMPLER":         "parentbased_traceidratio",
				"OTEL_TRACES_SAMPLER_ARG":     "0.25",
				"OTEL_METRIC_EXPORT_INTERVAL": "15000",
				"OTEL_METRIC_EXPORT_TIMEOUT":  "5000",
				"OTEL_SDK_DISABLED":           "FALSE",
			},
			change: func(s *otlp.Settings) {
				s.ServiceName = "memcached-operator"
				s.ResourceAttributes = []attribute.KeyValue{
					attribute.String("deployment.environment.name", "staging"),
					attribute.String("k8s.pod.name", "memcached-0"),
					attribute.String("note", "a,b"),
				}
				s.Sampler = "parentbased_traceidratio"
				s.SamplerArg = 0.25
				s.MetricExportInterval = 15 * time.Second
				s.MetricExportTimeout = 5 * time.Second
			},
		},
		{
			name:   "a sampler's argument is read only for a ratio",
			env:    apptest.Env{"OTEL_TRACES_SAMPLER": "always_off", "OTEL_TRACES_SAMPLER_ARG": "not read"},
			change: func(s *otlp.Settings) { s.Sampler = "always_off" },
		},
		{
			name:   "disabled",
			env:    apptest.Env{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
			change: func(s *otlp.Settings) { s.Disabled = true; setEndpoints(s, "http://collector:4318") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := defaults()
			tt.change(&want)
			got, err := otlp.Read(t.Context(), tt.env, nil)
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

func TestReadANilEnvironment(t *testing.T) {
	s, err := otlp.Read(t.Context(), nil, nil)
	require.NoError(t, err)
	require.Equal(t, defaults(), s)
}

func TestSettingsService(t *testing.T) {
	tests := []struct {
		name     string
		s        otlp.Settings
		fallback string
		want     string
	}{
		{name: "the fallback", fallback: "memcached-operator", want: "memcached-operator"},
		{name: "none at all", want: "unknown_service"},
		{name: "the resource's", s: otlp.Settings{ResourceAttributes: []attribute.KeyValue{attribute.String("service.name", "from-attributes")}}, fallback: "memcached-operator", want: "from-attributes"},
		{name: "OTEL_SERVICE_NAME first", s: otlp.Settings{ServiceName: "named", ResourceAttributes: []attribute.KeyValue{attribute.String("service.name", "from-attributes")}}, fallback: "memcached-operator", want: "named"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.s.Service(tt.fallback))
		})
	}
}

// setEndpoints sets each signal's endpoint beneath base.
func setEndpoints(s *otlp.Settings, base string) {
	s.Traces.Endpoint = base + "/v1/traces"
	s.Metrics.Endpoint = base + "/v1/metrics"
	s.Logs.Endpoint = base + "/v1/logs"
}

func TestReadReportsEveryMistakeTogether(t *testing.T) {
	env := apptest.Env{
		"OTEL_SDK_DISABLED":                     "yes",
		"OTEL_RESOURCE_ATTRIBUTES":              "team,bad=%zz",
		"OTEL_EXPORTER_OTLP_ENDPOINT":           "collector:4318",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":    "http://",
		"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT":      "ftp://collector",
		"OTEL_EXPORTER_OTLP_HEADERS":            "=x",
		"OTEL_EXPORTER_OTLP_TIMEOUT":            "10s",
		"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT":    "-1",
		"OTEL_EXPORTER_OTLP_COMPRESSION":        "zstd",
		"OTEL_EXPORTER_OTLP_PROTOCOL":           "http/xml",
		"OTEL_EXPORTER_OTLP_LOGS_PROTOCOL":      "http/json",
		"OTEL_LOGS_EXPORTER":                    "otlp",
		"OTEL_EXPORTER_OTLP_INSECURE":           "maybe",
		"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": "ca.pem",
		"OTEL_TRACES_SAMPLER":                   "traceidratio",
		"OTEL_TRACES_SAMPLER_ARG":               "1.5",
		"OTEL_METRIC_EXPORT_INTERVAL":           "-1",
		"OTEL_TRACES_EXPORTER":                  "jaeger",
		"OTEL_METRICS_EXPORTER":                 "prometheus",
		"OTEL_BSP_SCHEDULE_DELAY":               "100",
		"OTEL_PROPAGATORS":                      "b3, xray,none",
		"OTEL_EXPORTER_OTLP_ENDPIONT":           "http://typo:4318",
		"OTEL_LOG_LEVEL":                        "", // empty is unset
		"NOT_OTEL_EXPORTER":                     "ignored",
	}
	_, err := otlp.Read(t.Context(), env, nil)
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	for _, name := range []string{
		"OTEL_SDK_DISABLED", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
		"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "OTEL_EXPORTER_OTLP_COMPRESSION",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "OTEL_TRACES_SAMPLER_ARG",
		"OTEL_METRIC_EXPORT_INTERVAL", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER",
		"OTEL_BSP_SCHEDULE_DELAY", "OTEL_PROPAGATORS", "OTEL_EXPORTER_OTLP_ENDPIONT",
		"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
	} {
		require.Condition(t, func() bool {
			for _, l := range lines {
				if strings.HasPrefix(l, "config "+name+": ") {
					return true
				}
			}
			return false
		}, "no line names %s in:\n%s", name, err)
	}
	require.NotContains(t, err.Error(), "OTEL_LOG_LEVEL", "an empty variable is unset")
	require.NotContains(t, err.Error(), "NOT_OTEL")
	require.Contains(t, err.Error(), `config OTEL_EXPORTER_OTLP_PROTOCOL: "http/xml" is not supported: only grpc, http/protobuf or http/json is`)
	require.Contains(t, err.Error(), `config OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: "http/json" is supported for traces alone`)
	require.Contains(t, err.Error(), `config OTEL_PROPAGATORS: "xray" is not supported: only tracecontext, baggage, b3, b3multi, jaeger, ottrace, none`)
	require.Contains(t, err.Error(), `none propagates nothing, so it can't be listed with others`)
	require.Contains(t, err.Error(), "config OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE: ca.pem: the Host has no FS to read it through")
	require.Contains(t, err.Error(), "config OTEL_EXPORTER_OTLP_ENDPIONT: not supported")
	require.Contains(t, err.Error(), `pair 1, "team", is not key=value`)
	require.Contains(t, err.Error(), `pair 2, the value of "bad", is not percent-encoded`)
}

// lookupOnly is an Environment that can't list its names.
type lookupOnly map[string]string

func (e lookupOnly) LookupEnv(name string) (string, bool) {
	v, ok := e[name]
	return v, ok
}

func TestReadWithoutAListFindsTheSpecifiedVariables(t *testing.T) {
	var env app.Environment = lookupOnly{
		"OTEL_BSP_MAX_QUEUE_SIZE":                "10",
		"OTEL_GO_X_OBSERVABILITY":                "true",
		"OTEL_EXPORTER_OTLP_ENDPIONT":            "a typo only a list would find",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":     "http://collector:4318/v1/traces",
		"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "64",
	}
	_, err := otlp.Read(t.Context(), env, nil)
	require.EqualError(t, err, strings.Join([]string{
		"config OTEL_BSP_MAX_QUEUE_SIZE: not supported: examples/otlp reads only the variables otlp.Variables lists",
		"config OTEL_GO_X_OBSERVABILITY: not supported: examples/otlp reads only the variables otlp.Variables lists",
		"config OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: not supported: examples/otlp reads only the variables otlp.Variables lists",
	}, "\n"))
}

func TestVariables(t *testing.T) {
	vars := otlp.Variables()
	require.IsIncreasing(t, vars)
	for _, name := range []string{
		"OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_METRIC_EXPORT_INTERVAL",
		"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER",
	} {
		require.Contains(t, vars, name)
	}
	require.Len(t, vars, 47, "9 exporter variables, general and for each signal; each signal's exporter; 8 more")
}

// TestReadRejectsHeadersNoRequestCanCarry shows a header list whose
// names or decoded values no HTTP request or gRPC call can carry fails
// Read, naming each pair, rather than an exporter whose every export
// then fails.
func TestReadRejectsHeadersNoRequestCanCarry(t *testing.T) {
	tests := []struct {
		name, headers, want string
	}{
		{"a space in the name", "api key=secret", `pair 1, the name "api key", is not a header name`},
		{"a colon in the name", "x:y=1", `pair 1, the name "x:y", is not a header name`},
		{"a non-ASCII name", "clé=1", `pair 1, the name "clé", is not a header name`},
		{"a newline, percent-encoded", "ok=1,auth=a%0D%0AX-Injected:%201", `pair 2, the value of "auth", holds a control character`},
		{"a NUL, percent-encoded", "auth=a%00b", `pair 1, the value of "auth", holds a control character`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := otlp.Read(t.Context(), apptest.Env{
				"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://collector:4318",
				"OTEL_EXPORTER_OTLP_TRACES_HEADERS":  tt.headers,
				"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT": "soon",
			}, nil)
			require.ErrorContains(t, err, "config OTEL_EXPORTER_OTLP_TRACES_HEADERS: "+tt.want)
			require.ErrorContains(t, err, "config OTEL_EXPORTER_OTLP_METRICS_TIMEOUT: ", "reported with the other mistakes")
		})
	}

	// gRPC metadata is narrower than HTTP's headers: grpc-go refuses
	// these on every call.
	_, err := otlp.Read(t.Context(), apptest.Env{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_EXPORTER_OTLP_HEADERS":  "x!y=1,team=caf%C3%A9,key-bin=%C3%A9,Api-Key=ok",
	}, nil)
	require.ErrorContains(t, err, `config OTEL_EXPORTER_OTLP_HEADERS: the value of "team" is not printable ASCII`)
	require.ErrorContains(t, err, `the name "x!y" is not gRPC metadata's`)
	require.Equal(t, 1, strings.Count(err.Error(), `"x!y"`), "the general variable's error is reported once, not once a signal:\n%s", err)
	require.NotContains(t, err.Error(), "key-bin", "a -bin value is binary")
	require.NotContains(t, err.Error(), "Api-Key", "gRPC lowercases a name")

	s, err := otlp.Read(t.Context(), apptest.Env{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
		"OTEL_EXPORTER_OTLP_HEADERS":  "Authorization=Bearer%20a%2Bb%3D%3D, x-tab=a%09b,api_key.v2=%C3%A9",
	}, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"Authorization": "Bearer a+b==", "x-tab": "a\tb", "api_key.v2": "é"}, s.Traces.Headers,
		"a value is percent-decoded; a tab and UTF-8 are a header value's")
}

// TestReadRejectsAnEndpointsPortOutOfRange shows an endpoint whose port
// no TCP connection can have fails Read, rather than every export's dial.
func TestReadRejectsAnEndpointsPortOutOfRange(t *testing.T) {
	for _, endpoint := range []string{"http://collector:99999", "http://collector:0", "https://collector:65536/otlp"} {
		_, err := otlp.Read(t.Context(), apptest.Env{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint}, nil)
		require.ErrorContains(t, err, "config OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "+`"`+endpoint+`" has a port out of range: from 1 to 65535`)
	}
	for _, env := range []apptest.Env{
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:65535"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://[::1]:4318/v1/traces"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
	} {
		_, err := otlp.Read(t.Context(), env, nil)
		require.NoError(t, err)
	}
}
