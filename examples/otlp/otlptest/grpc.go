package otlptest

import (
	"context"
	"net/http"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // a collector accepts gzipped requests
	"google.golang.org/grpc/metadata"
)

// RegisterGRPC registers r on s as the OTLP collector's three gRPC
// services, TraceService, MetricsService and LogsService, so s receives
// what r's ServeHTTP does by OTLP/gRPC: each Request's Path is the method,
// such as /opentelemetry.proto.collector.trace.v1.TraceService/Export, and
// its Header the request's metadata. s decompresses gzip.
func (r *Receiver) RegisterGRPC(s *grpc.Server) {
	coltracepb.RegisterTraceServiceServer(s, traceService{r: r})
	colmetricspb.RegisterMetricsServiceServer(s, metricsService{r: r})
	collogspb.RegisterLogsServiceServer(s, logsService{r: r})
}

// The full names of the services' Export methods, as Request.Path holds
// them.
const (
	TraceExportMethod   = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
	MetricsExportMethod = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
	LogsExportMethod    = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
)

type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

// Export keeps req's spans.
func (s traceService) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	s.r.keep(Request{Path: TraceExportMethod, Header: header(ctx)}, req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type metricsService struct {
	colmetricspb.UnimplementedMetricsServiceServer
	r *Receiver
}

// Export keeps req's metrics.
func (s metricsService) Export(ctx context.Context, req *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	s.r.keep(Request{Path: MetricsExportMethod, Header: header(ctx)}, req)
	return &colmetricspb.ExportMetricsServiceResponse{}, nil
}

type logsService struct {
	collogspb.UnimplementedLogsServiceServer
	r *Receiver
}

// Export keeps req's log records.
func (s logsService) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	s.r.keep(Request{Path: LogsExportMethod, Header: header(ctx)}, req)
	return &collogspb.ExportLogsServiceResponse{}, nil
}

// header returns the incoming metadata of ctx as an http.Header, whose
// Get finds a key in any case.
func header(ctx context.Context) http.Header {
	h := http.Header{}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, vs := range md {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return h
}
