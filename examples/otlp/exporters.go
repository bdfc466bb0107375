package otlp

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// traceExporter returns s's span exporter: otlptracegrpc's on a gRPC
// connection of c's, or otlptracehttp's with an HTTP client of c's, every
// setting passed so that none comes from the real environment.
func traceExporter(ctx context.Context, c *conns, s Signal) (sdktrace.SpanExporter, error) {
	if s.Protocol == protocolGRPC {
		conn, err := c.grpcConn(s)
		if err != nil {
			return nil, err
		}
		exp, err := otlptracegrpc.New(ctx,
			otlptracegrpc.WithGRPCConn(conn),
			otlptracegrpc.WithHeaders(s.Headers),
			otlptracegrpc.WithTimeout(s.Timeout),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{
				Enabled: true, InitialInterval: retryInitialInterval, MaxInterval: retryMaxInterval, MaxElapsedTime: retryMaxElapsed,
			}),
		)
		if err != nil {
			return nil, fmt.Errorf("grpc: %w", err)
		}
		return exp, nil
	}
	client, tlsCfg, err := c.httpClient(s)
	if err != nil {
		return nil, err
	}
	compression := otlptracehttp.NoCompression
	if s.Gzip {
		compression = otlptracehttp.GzipCompression
	}
	encoding := otlptracehttp.EncodingProtobuf
	if s.Protocol == protocolHTTPJSON {
		encoding = otlptracehttp.EncodingJSON
	}
	exp, err := otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(s.Endpoint),
		otlptracehttp.WithEncoding(encoding),
		otlptracehttp.WithHeaders(s.Headers),
		otlptracehttp.WithTimeout(s.Timeout),
		otlptracehttp.WithCompression(compression),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{
			Enabled: true, InitialInterval: retryInitialInterval, MaxInterval: retryMaxInterval, MaxElapsedTime: retryMaxElapsed,
		}),
		// The client's transport has the TLS; the exporter's own setting,
		// nil for http, which it requires of an insecure endpoint, keeps
		// a certificate named in the real environment from applying.
		otlptracehttp.WithTLSClientConfig(tlsCfg),
		// WithHTTPClient overrides WithTimeout: the client's Timeout and
		// stampedSpans' deadline bound the export instead.
		otlptracehttp.WithHTTPClient(client),
	)
	if err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	return exp, nil
}

// metricExporter returns s's metric exporter, as traceExporter does its
// span exporter, with the SDK's default temporality and aggregation.
func metricExporter(ctx context.Context, c *conns, s Signal) (sdkmetric.Exporter, error) {
	if s.Protocol == protocolGRPC {
		conn, err := c.grpcConn(s)
		if err != nil {
			return nil, err
		}
		exp, err := otlpmetricgrpc.New(ctx,
			otlpmetricgrpc.WithGRPCConn(conn),
			otlpmetricgrpc.WithHeaders(s.Headers),
			otlpmetricgrpc.WithTimeout(s.Timeout),
			otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{
				Enabled: true, InitialInterval: retryInitialInterval, MaxInterval: retryMaxInterval, MaxElapsedTime: retryMaxElapsed,
			}),
			otlpmetricgrpc.WithTemporalitySelector(sdkmetric.DefaultTemporalitySelector),
			otlpmetricgrpc.WithAggregationSelector(sdkmetric.DefaultAggregationSelector),
		)
		if err != nil {
			return nil, fmt.Errorf("grpc: %w", err)
		}
		return exp, nil
	}
	client, tlsCfg, err := c.httpClient(s)
	if err != nil {
		return nil, err
	}
	compression := otlpmetrichttp.NoCompression
	if s.Gzip {
		compression = otlpmetrichttp.GzipCompression
	}
	exp, err := otlpmetrichttp.New(ctx,
		otlpmetrichttp.WithEndpointURL(s.Endpoint),
		otlpmetrichttp.WithHeaders(s.Headers),
		otlpmetrichttp.WithTimeout(s.Timeout),
		otlpmetrichttp.WithCompression(compression),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{
			Enabled: true, InitialInterval: retryInitialInterval, MaxInterval: retryMaxInterval, MaxElapsedTime: retryMaxElapsed,
		}),
		otlpmetrichttp.WithTLSClientConfig(tlsCfg),
		otlpmetrichttp.WithTemporalitySelector(sdkmetric.DefaultTemporalitySelector),
		otlpmetrichttp.WithAggregationSelector(sdkmetric.DefaultAggregationSelector),
		otlpmetrichttp.WithHTTPClient(client),
	)
	if err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	return exp, nil
}
