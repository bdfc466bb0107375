// Package otlp exports an App's traces, metrics and log records by OTLP,
// over HTTP (http/protobuf, or http/json for traces) or gRPC, when the
// OpenTelemetry specification's standard variables say so, read from the
// App's Process, never from the real environment:
//
//	app.Main(Init, app.WithHostTelemetry(otlp.Builder(otlp.Options{ServiceName: "memcached-operator"})))
//
// Variables lists what Read supports: OTEL_SDK_DISABLED,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_PROPAGATORS, every
// OTEL_EXPORTER_OTLP_* variable of the specification for HTTP and gRPC,
// general and each signal's own (endpoint, protocol, headers, timeout,
// compression, insecure, and the CA, client certificate and client key
// files, read through the Host's FS), OTEL_{TRACES,METRICS,LOGS}_EXPORTER
// (otlp or none), OTEL_TRACES_SAMPLER and its argument, and
// OTEL_METRIC_EXPORT_INTERVAL and _TIMEOUT. Any other OTEL_* variable that
// is set, and every bad value or file, fails Read, all named in one error.
//
// A signal is exported when an endpoint is set for it, or when its
// exporter is otlp, then to the specification's default endpoint,
// localhost:4318 for HTTP and localhost:4317 for gRPC, when none is. With
// neither, and under OTEL_SDK_DISABLED=true, it has no OTLP exporter at
// all, and an App that passes no processor or reader of its own for it
// gets a no-op provider. Every export, its retries included, ends within
// the signal's timeout.
//
// OpenTelemetry's SDK and exporters read the OTEL_* variables from the
// real environment with os.Getenv themselves, so New passes every one of
// their settings explicitly (endpoint, headers, timeout, compression,
// retries, TLS, the HTTP client or gRPC connection, sampler, limits,
// batching, temporality and aggregation) and exports every span, metric
// and log record with the resource built from the Process's variables,
// which the SDK otherwise merges with the real OTEL_RESOURCE_ATTRIBUTES
// and OTEL_SERVICE_NAME. Log records are encoded by an exporter of the
// package's own, since an SDK record's resource can't be replaced. The
// exporters dial through the App's Host, with no proxy. What the real
// environment still reaches: the providers' own resources, which OTLP
// never sends but an App's own exporters may read, such as Prometheus'
// target_info; the SDK's experimental OTEL_GO_X_* switches; and, for an
// https endpoint with no certificate file named, the machine's root
// certificates, which crypto/x509 reads from the disk.
package otlp
