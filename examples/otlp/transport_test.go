package otlp_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/examples/otlp"
	"github.com/loam-dev/loam/examples/otlp/otlptest"
)

// receiveGRPC starts a Receiver's gRPC services on loopback, with TLS when
// cfg isn't nil, stopped when the test ends, and returns its host:port.
func receiveGRPC(t *testing.T, cfg *tls.Config) (*otlptest.Receiver, string) {
	t.Helper()
	r := otlptest.NewReceiver()
	var opts []grpc.ServerOption
	if cfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg)))
	}
	srv := grpc.NewServer(opts...)
	r.RegisterGRPC(srv)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return r, l.Addr().String()
}

// requireEverySignal checks that r received emit's span, metric and log
// record, each request with the api-key header.
func requireEverySignal(t *testing.T, r *otlptest.Receiver) {
	t.Helper()
	require.Len(t, r.SpansNamed("reconcile Memcached"), 1)
	require.NotEmpty(t, r.MetricsNamed("loam.kube.controller.queue.adds"))
	require.Len(t, r.Logs(), 1)
	for _, req := range r.Requests() {
		require.Equal(t, "secret", req.Header.Get("Api-Key"), req.Path)
	}
}

func TestNewExportsEverySignalByGRPC(t *testing.T) {
	tests := []struct {
		name string
		env  func(addr string) apptest.Env
	}{
		{name: "an http endpoint is plaintext", env: func(addr string) apptest.Env {
			return apptest.Env{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + addr}
		}},
		{name: "host:port, insecure", env: func(addr string) apptest.Env {
			return apptest.Env{"OTEL_EXPORTER_OTLP_ENDPOINT": addr, "OTEL_EXPORTER_OTLP_INSECURE": "true"}
		}},
		{name: "each signal's own endpoint, as it is", env: func(addr string) apptest.Env {
			return apptest.Env{
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":  "http://" + addr,
				"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://" + addr + "/ignored",
				"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT":    addr,
				"OTEL_EXPORTER_OTLP_LOGS_INSECURE":    "true",
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			receiver, addr := receiveGRPC(t, nil)
			env := tt.env(addr)
			env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "grpc"
			env["OTEL_EXPORTER_OTLP_HEADERS"] = "api-key=secret"
			env["OTEL_EXPORTER_OTLP_COMPRESSION"] = "gzip"
			s, err := otlp.Read(t.Context(), env, nil)
			require.NoError(t, err)
			network := &countingNetwork{}
			tel, shutdown, err := otlp.New(t.Context(), app.Host{Network: network}, s, otlp.Options{ServiceName: "memcached-operator"})
			require.NoError(t, err)
			emit(t, tel)
			require.NoError(t, shutdown(t.Context()))

			requireEverySignal(t, receiver)
			methods := map[string]bool{}
			for _, r := range receiver.Requests() {
				methods[r.Path] = true
			}
			require.Equal(t, map[string]bool{otlptest.TraceExportMethod: true, otlptest.MetricsExportMethod: true, otlptest.LogsExportMethod: true}, methods)
			spans := receiver.SpansNamed("reconcile Memcached")
			require.Equal(t, map[string]any{"service.name": "memcached-operator"}, spans[0].Resource)
			require.Equal(t, map[string]any{"service.name": "memcached-operator"}, receiver.Logs()[0].Resource)
			require.Positive(t, network.dials.Load(), "the exporters dial through the Host")
		})
	}
}

// pki is a CA of the test's own, a server certificate for 127.0.0.1 and a
// client certificate, both signed by it, in PEM.
type pki struct {
	ca                   *x509.CertPool
	caPEM                []byte
	server               tls.Certificate
	clientPEM, clientKey []byte
}

// newPKI makes a pki on apptest's CA.
func newPKI(t *testing.T) pki {
	t.Helper()
	ca := apptest.NewCA(t)
	client := ca.ClientCert("otlp-exporter")
	return pki{
		ca: ca.Pool(), caPEM: ca.PEM(),
		server: ca.ServerCert("127.0.0.1").TLS, clientPEM: client.CertPEM, clientKey: client.KeyPEM,
	}
}

// serverTLS is a receiver's TLS: p's server certificate, and a client
// certificate of p's CA required.
func (p pki) serverTLS() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{p.server},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.ca,
	}
}

func TestNewExportsByMutualTLSWithTheCertificateFiles(t *testing.T) {
	p := newPKI(t)
	host := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{
		"tls/ca.pem": p.caPEM, "tls/client.pem": p.clientPEM, "tls/client-key.pem": p.clientKey,
	}))
	tlsEnv := func(endpoint string) apptest.Env {
		return apptest.Env{
			"OTEL_EXPORTER_OTLP_ENDPOINT":           endpoint,
			"OTEL_EXPORTER_OTLP_HEADERS":            "api-key=secret",
			"OTEL_EXPORTER_OTLP_CERTIFICATE":        host.Path("tls/ca.pem"),
			"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": host.Path("tls/client.pem"),
			"OTEL_EXPORTER_OTLP_CLIENT_KEY":         host.Path("tls/client-key.pem"),
		}
	}
	tests := []struct {
		name    string
		receive func(t *testing.T) (*otlptest.Receiver, apptest.Env)
	}{
		{name: "http/protobuf", receive: func(t *testing.T) (*otlptest.Receiver, apptest.Env) {
			r := otlptest.NewReceiver()
			srv := httptest.NewUnstartedServer(r)
			srv.TLS = p.serverTLS()
			srv.StartTLS()
			t.Cleanup(srv.Close)
			return r, tlsEnv(srv.URL)
		}},
		{name: "grpc", receive: func(t *testing.T) (*otlptest.Receiver, apptest.Env) {
			r, addr := receiveGRPC(t, p.serverTLS())
			env := tlsEnv(addr) // host:port, not insecure: TLS
			env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "grpc"
			return r, env
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			receiver, env := tt.receive(t)
			s, err := otlp.Read(t.Context(), env, host.FS())
			require.NoError(t, err)
			tel, shutdown, err := otlp.New(t.Context(), app.Host{Network: &countingNetwork{}, FS: host.FS()}, s, otlp.Options{})
			require.NoError(t, err)
			emit(t, tel)
			require.NoError(t, shutdown(t.Context()))
			requireEverySignal(t, receiver)
		})
	}
}

func TestReadReportsBadCertificateFiles(t *testing.T) {
	p := newPKI(t)
	other := newPKI(t)
	host := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{
		"ca.pem": p.caPEM, "client.pem": p.clientPEM, "other-key.pem": other.clientKey, "garbage.pem": []byte("not PEM"),
	}))
	env := apptest.Env{
		"OTEL_EXPORTER_OTLP_ENDPOINT":                   "https://collector:4318",
		"OTEL_EXPORTER_OTLP_CERTIFICATE":                host.Path("garbage.pem"),
		"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE":         host.Path("ca.pem"),
		"OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE":        host.Path("ca.pem"),
		"OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE":           host.Path("missing.pem"),
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE":         host.Path("client.pem"),
		"OTEL_EXPORTER_OTLP_CLIENT_KEY":                 host.Path("other-key.pem"),
		"OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE": host.Path("client.pem"),
	}
	_, err := otlp.Read(t.Context(), env, host.FS())
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, "config OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE: reading the file: open "+host.Path("missing.pem"))
	pair := "the certificate " + host.Path("client.pem") + " and OTEL_EXPORTER_OTLP_CLIENT_KEY's key " + host.Path("other-key.pem") + " are not a pair"
	require.Contains(t, msg, "config OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: "+pair)
	require.Contains(t, msg, "config OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE: "+pair)
	require.NotContains(t, msg, "garbage.pem", "every signal names its own CA, so the general one is not read")

	env["OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE"] = ""
	_, err = otlp.Read(t.Context(), env, host.FS())
	require.ErrorContains(t, err, "config OTEL_EXPORTER_OTLP_CERTIFICATE: "+host.Path("garbage.pem")+" holds no PEM certificate",
		"the error names the file as well as the variable")
}

// hungCollector is a listener on loopback that accepts connections and
// never answers: a collector that hangs. Its connections close when the
// test ends.
func hungCollector(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

func TestAHungCollectorHoldsNoExportPastItsTimeout(t *testing.T) {
	const (
		timeout = 300 * time.Millisecond
		// margin is what a loaded 2-core machine may add to a bound:
		// scheduling, the TCP handshake and the SDK's own bookkeeping.
		margin = 1500 * time.Millisecond
		grace  = 10 * time.Second
	)
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			addr := hungCollector(t)
			s, err := otlp.Read(t.Context(), apptest.Env{
				"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + addr,
				"OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
				"OTEL_EXPORTER_OTLP_TIMEOUT":  "300",
			}, nil)
			require.NoError(t, err)
			tel, shutdown, err := otlp.New(t.Context(), app.Host{Network: &countingNetwork{}}, s, otlp.Options{})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(t.Context(), grace)
			defer cancel()

			// One export of each signal returns its error within the timeout.
			emit(t, tel)
			flushes := map[string]func(context.Context) error{
				"traces":  tel.TracerProvider.(*sdktrace.TracerProvider).ForceFlush,
				"metrics": tel.MeterProvider.(*sdkmetric.MeterProvider).ForceFlush,
				"logs":    tel.LoggerProvider.(*sdklog.LoggerProvider).ForceFlush,
			}
			for signal, flush := range flushes {
				start := time.Now()
				err := flush(ctx)
				elapsed := time.Since(start)
				if signal != "logs" {
					// The log SDK's batch processor hands its export's
					// error to the global handler, not to ForceFlush.
					require.Error(t, err, signal)
				}
				t.Logf("%s: the flush returned in %v", signal, elapsed)
				require.Less(t, elapsed, timeout+margin, "%s: a flush held %v by a collector that hangs", signal, elapsed)
			}

			// Shutdown exports what is left, each signal in turn, every
			// export bounded by the timeout: well within the grace.
			emit(t, tel)
			start := time.Now()
			_ = shutdown(ctx)
			elapsed := time.Since(start)
			t.Logf("shutdown returned in %v", elapsed)
			require.Less(t, elapsed, 3*timeout+margin, "shutdown held %v by a collector that hangs", elapsed)
			require.NoError(t, ctx.Err(), "shutdown returned within its grace")
		})
	}
}

func TestTheDefaultEndpoint(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:4318")
	if err != nil {
		t.Skipf("localhost:4318, the specification's default endpoint, is taken (%v): a collector may be running", err)
	}
	receiver := otlptest.NewReceiver()
	srv := httptest.NewUnstartedServer(receiver)
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)

	s, err := otlp.Read(t.Context(), apptest.Env{
		"OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp", "OTEL_LOGS_EXPORTER": "otlp",
		"OTEL_EXPORTER_OTLP_HEADERS": "api-key=secret",
	}, nil)
	require.NoError(t, err)
	tel, shutdown, err := otlp.New(t.Context(), app.Host{Network: &countingNetwork{}}, s, otlp.Options{})
	require.NoError(t, err)
	emit(t, tel)
	require.NoError(t, shutdown(t.Context()))
	requireEverySignal(t, receiver)
}

func TestNewPropagatesAsOTELPropagatorsSays(t *testing.T) {
	tests := []struct {
		propagators string
		want        []string // the headers injected
	}{
		{propagators: "tracecontext", want: []string{"traceparent"}},
		{propagators: "baggage", want: []string{"baggage"}},
		{propagators: "b3", want: []string{"b3"}},
		{propagators: "b3multi", want: []string{"x-b3-sampled", "x-b3-spanid", "x-b3-traceid"}},
		{propagators: "jaeger", want: []string{"uber-trace-id"}},
		{propagators: "ottrace", want: []string{"ot-tracer-sampled", "ot-tracer-spanid", "ot-tracer-traceid", "ot-baggage-tenant"}},
		{propagators: "tracecontext, b3 ,tracecontext", want: []string{"b3", "traceparent"}},
		{propagators: "none", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.propagators, func(t *testing.T) {
			s, err := otlp.Read(t.Context(), apptest.Env{"OTEL_PROPAGATORS": tt.propagators}, nil)
			require.NoError(t, err)
			tel, shutdown, err := otlp.New(t.Context(), app.Host{}, s, otlp.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
			require.NotNil(t, tel.Propagator)

			sc := trace.NewSpanContext(trace.SpanContextConfig{
				// The high half zero: ottrace carries 64 bits.
				TraceID: trace.TraceID{8: 1, 15: 2}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled,
			})
			member, err := baggage.NewMember("tenant", "a")
			require.NoError(t, err)
			bag, err := baggage.New(member)
			require.NoError(t, err)
			ctx := baggage.ContextWithBaggage(trace.ContextWithSpanContext(t.Context(), sc), bag)
			carrier := propagation.MapCarrier{}
			tel.Propagator.Inject(ctx, carrier)
			got := carrier.Keys()
			for i := range got {
				got[i] = strings.ToLower(got[i])
			}
			require.ElementsMatch(t, tt.want, got)

			if len(tt.want) > 0 && tt.propagators != "baggage" {
				extracted := trace.SpanContextFromContext(tel.Propagator.Extract(context.Background(), carrier))
				require.Equal(t, sc.TraceID(), extracted.TraceID(), "what is injected is extracted")
			}
		})
	}
}

func TestNewLeavesTheDefaultPropagatorWithoutOTELPropagators(t *testing.T) {
	s, err := otlp.Read(t.Context(), apptest.Env{}, nil)
	require.NoError(t, err)
	tel, shutdown, err := otlp.New(t.Context(), app.Host{}, s, otlp.Options{})
	require.NoError(t, err)
	require.NoError(t, shutdown(t.Context()))
	require.Nil(t, tel.Propagator, "app fills in its default, tracecontext and baggage, the specification's")
}

var _ http.Handler = (*otlptest.Receiver)(nil)
