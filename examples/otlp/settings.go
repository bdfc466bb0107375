package otlp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/config"
)

// The defaults the OpenTelemetry specification gives the variables.
const (
	defaultTimeout              = 10 * time.Second
	defaultMetricExportInterval = 60 * time.Second
	defaultMetricExportTimeout  = 30 * time.Second
	defaultSampler              = "parentbased_always_on"
	protocolHTTPProtobuf        = "http/protobuf"
	protocolHTTPJSON            = "http/json"
	protocolGRPC                = "grpc"
	// The specification's endpoints for an exporter that is otlp with
	// none set: an OpenTelemetry Collector's on the same machine.
	defaultHTTPEndpoint = "http://localhost:4318"
	defaultGRPCEndpoint = "http://localhost:4317"
)

// Settings are what the OTEL_* variables say: whether and where each
// signal is exported, the resource that names the process, and how traces
// are sampled. Read sources them from a Process's environment; the zero
// Settings export nothing.
type Settings struct {
	// Disabled is OTEL_SDK_DISABLED: nothing is exported by OTLP.
	Disabled bool
	// ServiceName is OTEL_SERVICE_NAME, "" when it isn't set.
	ServiceName string
	// ResourceAttributes are OTEL_RESOURCE_ATTRIBUTES', in their order.
	ResourceAttributes []attribute.KeyValue
	// Traces, Metrics and Logs say where each signal is exported.
	Traces, Metrics, Logs Signal
	// Sampler is OTEL_TRACES_SAMPLER, such as "parentbased_always_on", the
	// default, and SamplerArg OTEL_TRACES_SAMPLER_ARG, the ratio of a
	// traceidratio sampler (1 by default).
	Sampler    string
	SamplerArg float64
	// MetricExportInterval and MetricExportTimeout are
	// OTEL_METRIC_EXPORT_INTERVAL's and OTEL_METRIC_EXPORT_TIMEOUT's,
	// 60s and 30s by default. A MetricExportTimeout of 0 is no limit, as
	// the specification reads a timeout of 0: New gives the reader
	// 2³¹−1 milliseconds, the specification's "very long time".
	MetricExportInterval, MetricExportTimeout time.Duration
	// Propagators are OTEL_PROPAGATORS' names, such as tracecontext and
	// b3, in their order and each once; nil when it isn't set, which
	// leaves the App's default, tracecontext and baggage, as the
	// specification's is. ["none"] propagates nothing.
	Propagators []string
}

// Signal is where one signal, traces, metrics or logs, is exported.
type Signal struct {
	// Endpoint is the URL the exporter sends to, such as
	// http://collector:4318/v1/traces for http/protobuf, or
	// https://collector:4317 for grpc, whose path is not used. Its scheme
	// says whether TLS is used. "" exports nothing.
	Endpoint string
	// Protocol is http/protobuf, the default, http/json (traces alone) or
	// grpc. "" is http/protobuf.
	Protocol string
	// Headers are sent with every export, such as an API key: HTTP
	// headers, or gRPC metadata.
	Headers map[string]string
	// Timeout bounds one export, its retries included; 10s by default.
	// 0 is no limit of the exporter's own, as the specification reads
	// a timeout of 0: the batch processors' 30s, or the metric export
	// timeout, and Shutdown's context still bound each export.
	Timeout time.Duration
	// Gzip compresses each export's body.
	Gzip bool
	// Certificate is the PEM of the certificates that verify the
	// collector's, in place of the machine's roots; nil trusts the
	// machine's.
	Certificate []byte
	// ClientCertificate and ClientKey are the PEM of the certificate and
	// key the exporter presents to a collector that asks for one (mutual
	// TLS); both nil or both set.
	ClientCertificate, ClientKey []byte
}

// signal is one signal's variables and its path under the base endpoint.
type signal struct {
	name string // TRACES, METRICS or LOGS
	path string // /v1/traces …
}

// signals are the three signals, in the order they are reported.
func signals() []signal {
	return []signal{{"TRACES", "/v1/traces"}, {"METRICS", "/v1/metrics"}, {"LOGS", "/v1/logs"}}
}

// Variables returns the OTEL_* variables Read supports, sorted. Every
// other variable whose name begins with OTEL_ fails Read.
func Variables() []string {
	vars := []string{
		"OTEL_SDK_DISABLED",
		"OTEL_SERVICE_NAME",
		"OTEL_RESOURCE_ATTRIBUTES",
		"OTEL_TRACES_SAMPLER",
		"OTEL_TRACES_SAMPLER_ARG",
		"OTEL_METRIC_EXPORT_INTERVAL",
		"OTEL_METRIC_EXPORT_TIMEOUT",
		"OTEL_PROPAGATORS",
	}
	for _, name := range exporterVariables() {
		vars = append(vars, "OTEL_EXPORTER_OTLP_"+name)
	}
	for _, s := range signals() {
		vars = append(vars, "OTEL_"+s.name+"_EXPORTER")
		for _, name := range exporterVariables() {
			vars = append(vars, "OTEL_EXPORTER_OTLP_"+s.name+"_"+name)
		}
	}
	slices.Sort(vars)
	return vars
}

// exporterVariables are the OTLP exporter's variables, each both general,
// OTEL_EXPORTER_OTLP_ENDPOINT, and a signal's own,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.
func exporterVariables() []string {
	return []string{
		"ENDPOINT", "HEADERS", "TIMEOUT", "COMPRESSION", "PROTOCOL", "INSECURE",
		"CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY",
	}
}

// knownUnsupported are variables of the OpenTelemetry specification, and
// of the Go SDK, that Read doesn't support. Read reports each one that is
// set even in an Environment that can't list its names, where it can't
// find every OTEL_* variable.
func knownUnsupported() []string {
	vars := []string{
		"OTEL_LOG_LEVEL", "OTEL_CONFIG_FILE", "OTEL_EXPERIMENTAL_CONFIG_FILE",
		"OTEL_RESOURCE_DETECTORS", "OTEL_SEMCONV_STABILITY_OPT_IN",
		"OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
		"OTEL_BLRP_SCHEDULE_DELAY", "OTEL_BLRP_EXPORT_TIMEOUT", "OTEL_BLRP_MAX_QUEUE_SIZE", "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE",
		"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_COUNT_LIMIT",
		"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "OTEL_SPAN_EVENT_COUNT_LIMIT",
		"OTEL_SPAN_LINK_COUNT_LIMIT", "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT",
		"OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT",
		"OTEL_METRICS_EXEMPLAR_FILTER",
		"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION",
		"OTEL_EXPORTER_PROMETHEUS_HOST", "OTEL_EXPORTER_PROMETHEUS_PORT",
		"OTEL_EXPORTER_ZIPKIN_ENDPOINT", "OTEL_EXPORTER_ZIPKIN_TIMEOUT",
		"OTEL_GO_X_OBSERVABILITY", "OTEL_GO_X_SELF_OBSERVABILITY", "OTEL_GO_X_CARDINALITY_LIMIT", "OTEL_GO_X_RESOURCE",
	}
	return vars
}

// errUnsupported is the cause of every unsupported variable's error.
var errUnsupported = errors.New("not supported: examples/otlp reads only the variables otlp.Variables lists")

// Read sources the Settings from env, a Process's environment: never the
// real one, which OpenTelemetry's SDK and exporters would otherwise read
// for themselves. The certificate and key files the variables name are
// read through fsys, the Host's files. Its error names every variable
// with a bad value, or a file that can't be read or parsed, and every
// OTEL_* variable that is set but isn't one of Variables, together: all
// of them when env is an app.EnvironmentLister, the ones the
// specification and the Go SDK define otherwise. A nil env has no
// variables; a nil fsys fails any variable that names a file.
func Read(ctx context.Context, env app.Environment, fsys app.FS) (Settings, error) {
	if env == nil {
		// A Process built by hand may have none: it has no variables.
		env = config.Map(nil)
	}
	var errs []error
	for _, name := range unsupported(env) {
		errs = append(errs, &config.Error{Name: name, Err: errUnsupported})
	}
	s, err := config.Struct(func(r *config.Resolver) Settings {
		return resolve(r, env, fsys)
	}).Read(ctx)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// unsupported returns the OTEL_* variables set in env that Read doesn't
// support, sorted.
func unsupported(env app.Environment) []string {
	supported := Variables()
	var names []string
	if l, ok := env.(app.EnvironmentLister); ok {
		for _, name := range l.Names() {
			if strings.HasPrefix(name, "OTEL_") && !slices.Contains(supported, name) && isSet(env, name) {
				names = append(names, name)
			}
		}
	}
	for _, name := range knownUnsupported() {
		if isSet(env, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// isSet reports whether name is set to something other than "", which
// the specification reads as unset.
func isSet(env app.Environment, name string) bool {
	v, ok := env.LookupEnv(name)
	return ok && v != ""
}

// resolve reads every variable through r, which collects their errors.
func resolve(r *config.Resolver, e app.Environment, fsys app.FS) Settings {
	env := func(name string) config.Value[string] { return config.Env(e, name) }
	s := Settings{
		Disabled:             r.Get(env("OTEL_SDK_DISABLED").Parse(parseBool).Default(false)),
		ServiceName:          r.Get(env("OTEL_SERVICE_NAME").Default("")),
		ResourceAttributes:   r.Get(env("OTEL_RESOURCE_ATTRIBUTES").Parse(parseResourceAttributes).Default(nil)),
		Sampler:              r.Get(env("OTEL_TRACES_SAMPLER").Parse(enum(checkSampler)).Default(defaultSampler)),
		MetricExportInterval: r.Get(env("OTEL_METRIC_EXPORT_INTERVAL").Parse(parseMillis).Default(defaultMetricExportInterval)),
		MetricExportTimeout:  r.Get(env("OTEL_METRIC_EXPORT_TIMEOUT").Parse(parseTimeout).Default(defaultMetricExportTimeout)),
		Propagators:          r.Get(env("OTEL_PROPAGATORS").Parse(parsePropagators).Default(nil)),
	}
	s.SamplerArg = 1
	if strings.HasSuffix(s.Sampler, "traceidratio") {
		s.SamplerArg = r.Get(env("OTEL_TRACES_SAMPLER_ARG").Parse(parseRatio).Default(1))
	}

	out := []*Signal{&s.Traces, &s.Metrics, &s.Logs}
	for i, sig := range signals() {
		*out[i] = resolveSignal(r, e, fsys, sig)
	}
	return s
}

// resolveSignal reads one signal's variables, its own before the general
// ones, which it falls back to one by one.
func resolveSignal(r *config.Resolver, e app.Environment, fsys app.FS, sig signal) Signal {
	// first returns the signal's own variable name when it is set, else
	// the general one's: the variable a value comes from, for its error.
	first := func(name string) string {
		own := "OTEL_EXPORTER_OTLP_" + sig.name + "_" + name
		if isSet(e, own) {
			return own
		}
		return "OTEL_EXPORTER_OTLP_" + name
	}
	env := func(name string) config.Value[string] { return config.Env(e, first(name)) }
	// Every variable is read, general and own, so a bad one fails even
	// when the other replaces it.
	for _, name := range exporterVariables() {
		if name == "CERTIFICATE" || name == "CLIENT_CERTIFICATE" || name == "CLIENT_KEY" || name == "ENDPOINT" {
			continue // read below, with the files and the protocol
		}
		general := config.Env(e, "OTEL_EXPORTER_OTLP_"+name)
		own := config.Env(e, "OTEL_EXPORTER_OTLP_"+sig.name+"_"+name)
		for _, v := range []config.Value[string]{general, own} {
			r.Get(v.Validate(checkers()[name]).Default(""))
		}
	}
	exporter := r.Get(config.Env(e, "OTEL_"+sig.name+"_EXPORTER").Parse(enum(checkExporter)).Default(""))
	out := Signal{
		Protocol: r.Get(env("PROTOCOL").Parse(enum(checkProtocol)).Default(protocolHTTPProtobuf)),
		Headers:  r.Get(env("HEADERS").Parse(parseHeaders).Default(map[string]string{})),
		Timeout:  r.Get(env("TIMEOUT").Parse(parseTimeout).Default(defaultTimeout)),
		Gzip:     r.Get(env("COMPRESSION").Parse(parseCompression).Default(false)),
	}
	insecure := r.Get(env("INSECURE").Parse(parseBool).Default(false))
	grpc := out.Protocol == protocolGRPC
	base := r.Get(config.Env(e, "OTEL_EXPORTER_OTLP_ENDPOINT").Parse(endpointParser(grpc, insecure)).Default(nil))
	own := r.Get(config.Env(e, "OTEL_EXPORTER_OTLP_"+sig.name+"_ENDPOINT").Parse(endpointParser(grpc, insecure)).Default(nil))
	files := readFiles(r, e, fsys, first)
	out.Certificate, out.ClientCertificate, out.ClientKey = files.ca, files.cert, files.key

	if exporter == "" && own == nil && base == nil {
		// Nothing asks for this signal: unlike the specification, whose
		// default exporter is otlp, nothing is exported and nothing dials
		// a collector that isn't there.
		return out
	}
	switch {
	case exporter == "none":
	case own != nil:
		// A signal's own endpoint is its whole URL.
		out.Endpoint = own.String()
	case base != nil && grpc:
		// gRPC has no paths: the base endpoint is every signal's.
		out.Endpoint = base.String()
	case base != nil:
		// The base endpoint is the collector's: each signal posts to
		// its path beneath it.
		u := *base
		u.Path = strings.TrimSuffix(u.Path, "/") + sig.path
		out.Endpoint = u.String()
	case grpc:
		// otlp, and no endpoint: the specification's default.
		out.Endpoint = defaultGRPCEndpoint
	default:
		out.Endpoint = defaultHTTPEndpoint + sig.path
	}
	if out.Endpoint != "" && grpc {
		if err := checkGRPCHeaders(out.Headers); err != nil {
			report(r, first("HEADERS"), err)
		}
	}
	if out.Endpoint != "" && out.Protocol == protocolHTTPJSON && sig.name != "TRACES" {
		// The message names no signal, so that the general variable's
		// error, found for metrics and for logs, is reported once.
		report(r, first("PROTOCOL"), errors.New(`"http/json" is supported for traces alone: the Go SDK's metric exporter and examples/otlp's log exporter send http/protobuf or grpc`))
	}
	return out
}

// report records err, naming the variable name, among r's errors.
func report(r *config.Resolver, name string, err error) {
	r.Get(config.Func(name, func(context.Context) (struct{}, bool, error) { return struct{}{}, false, err }))
}
