package kube_test

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
)

// apiServer is an in-memory stand-in for the API server's HTTP side: it
// answers a list of namespaces, streams a watch of them until the request
// ends, and records what each request carried.
type apiServer struct {
	mu       sync.Mutex
	auth     []string // each request's Authorization header
	clientCN []string // each request's client certificate's subject, if any
	headers  []http.Header
	conns    atomic.Int32
	closed   atomic.Int32
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.auth = append(a.auth, r.Header.Get("Authorization"))
	a.headers = append(a.headers, r.Header.Clone())
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		a.clientCN = append(a.clientCN, r.TLS.PeerCertificates[0].Subject.CommonName)
	}
	a.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("watch") == "true" {
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"type":   "ADDED",
			"object": corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "default", ResourceVersion: "2"}},
		})
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	_ = json.NewEncoder(w).Encode(corev1.NamespaceList{
		TypeMeta: metav1.TypeMeta{Kind: "NamespaceList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: "1"},
		Items:    []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "default"}}},
	})
}

func (a *apiServer) authorizations() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.auth...)
}

// serve starts api on the Host's network at addr, over TLS with a
// certificate for hosts, and stops it when the test ends.
func serve(t *testing.T, h *apptest.Host, ca *apptest.CA, addr string, api *apiServer, hosts ...string) {
	t.Helper()
	ln, err := h.Listen(t.Context(), "tcp", addr)
	require.NoError(t, err)
	srv := &http.Server{
		Handler:           api,
		TLSConfig:         ca.ServerConfig(hosts...),
		ReadHeaderTimeout: time.Minute,
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				api.conns.Add(1)
			case http.StateClosed, http.StateHijacked:
				api.closed.Add(1)
			}
		},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.ServeTLS(ln, "", "")
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
}

// setup returns a Setup on h, recording telemetry in tel.
func setup(h *apptest.Host, tel *apptest.Telemetry) *app.Setup {
	return &app.Setup{Host: h.Host(), Telemetry: tel.Telemetry}
}

// newClient returns a Client for conn whose idle connections close when
// the test ends, as the App's OnStop closes them.
func newClient(t *testing.T, s *app.Setup, conn kube.Connection) *kube.Client {
	t.Helper()
	c, err := kube.NewClient(s, conn)
	require.NoError(t, err)
	t.Cleanup(func() {
		if tr, ok := c.RoundTripper().(interface{ CloseIdleConnections() }); ok {
			tr.CloseIdleConnections()
		}
	})
	return c
}

func listNamespaces(ctx context.Context, c *kube.Client) error {
	kc, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	_, err = kc.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	return err
}

func TestClient_calls_Token_at_most_once_a_minute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ca, api := apptest.NewHost(t), apptest.NewCA(t), &apiServer{}
		serve(t, h, ca, "api.test:443", api, "api.test")
		var calls atomic.Int32
		c := newClient(t, setup(h, apptest.NewTelemetry()), kube.Connection{
			Server: "api.test:443",
			TLS:    &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
			Token: func(context.Context) (string, error) {
				return fmt.Sprintf("token-%d", calls.Add(1)), nil
			},
		})

		for range 1000 {
			require.NoError(t, listNamespaces(t.Context(), c))
		}
		require.Equal(t, int32(1), calls.Load(), "one call for 1000 requests within a minute")

		time.Sleep(time.Minute)
		require.NoError(t, listNamespaces(t.Context(), c))
		require.Equal(t, int32(2), calls.Load(), "a minute later, Token is called again")
		auth := api.authorizations()
		require.Equal(t, "Bearer token-1", auth[0])
		require.Equal(t, "Bearer token-2", auth[len(auth)-1])
	})
}

func TestClient_picks_up_a_rotated_token_file_within_a_minute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"serviceaccount/token": []byte("first\n")}))
		ca, api := apptest.NewCA(t), &apiServer{}
		serve(t, h, ca, "api.test:443", api, "api.test")
		fsys, dir := h.FS(), h.Path("serviceaccount/")
		c := newClient(t, setup(h, apptest.NewTelemetry()), kube.Connection{
			Server: "api.test:443",
			TLS:    &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
			Token: func(context.Context) (string, error) {
				f, err := fsys.Open(dir + "token")
				if err != nil {
					return "", err
				}
				defer func() { _ = f.Close() }()
				b, err := io.ReadAll(f)
				return strings.TrimSpace(string(b)), err
			},
		})

		require.NoError(t, listNamespaces(t.Context(), c))
		h.WriteFile("serviceaccount/token", []byte("second\n"))
		start := time.Now()
		for api.authorizations()[len(api.authorizations())-1] != "Bearer second" {
			time.Sleep(time.Second)
			require.NoError(t, listNamespaces(t.Context(), c))
		}
		require.LessOrEqual(t, time.Since(start), time.Minute, "the rotated token is used within a minute")
	})
}

func TestClient_keeps_the_last_token_when_Token_fails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ca, api := apptest.NewHost(t), apptest.NewCA(t), &apiServer{}
		serve(t, h, ca, "api.test:443", api, "api.test")
		var fail atomic.Bool
		c := newClient(t, setup(h, apptest.NewTelemetry()), kube.Connection{
			Server: "api.test:443",
			TLS:    &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
			Token: func(context.Context) (string, error) {
				if fail.Load() {
					return "", errors.New("the token file is gone")
				}
				return "good", nil
			},
		})
		require.NoError(t, listNamespaces(t.Context(), c))
		fail.Store(true)
		time.Sleep(2 * time.Minute)
		require.NoError(t, listNamespaces(t.Context(), c), "the request goes on with the last token")
		auth := api.authorizations()
		require.Equal(t, "Bearer good", auth[len(auth)-1])
	})
}

func TestClient_fails_each_request_until_Token_first_succeeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ca, api := apptest.NewHost(t), apptest.NewCA(t), &apiServer{}
		serve(t, h, ca, "api.test:443", api, "api.test")
		var calls atomic.Int32
		tokens := map[int32]string{1: "", 2: ""}
		c := newClient(t, setup(h, apptest.NewTelemetry()), kube.Connection{
			Server: "api.test:443",
			TLS:    &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
			Token: func(context.Context) (string, error) {
				n := calls.Add(1)
				if n == 1 {
					return "", errors.New("no token yet")
				}
				if tok, ok := tokens[n]; ok {
					return tok, nil // empty: a failure too
				}
				return "finally", nil
			},
		})

		err := listNamespaces(t.Context(), c)
		require.ErrorContains(t, err, "no token yet")
		err = listNamespaces(t.Context(), c)
		require.ErrorContains(t, err, "the token is empty", "an empty token fails, never a bare Bearer")
		require.NoError(t, listNamespaces(t.Context(), c))
		require.Equal(t, int32(3), calls.Load(), "each request called Token until one succeeded")
		require.Equal(t, []string{"Bearer finally"}, api.authorizations(), "failed requests reached no server")
	})
}

func TestClient_with_nil_Token_sends_no_Authorization_and_a_client_certificate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ca, api := apptest.NewHost(t), apptest.NewCA(t), &apiServer{}
		serve(t, h, ca, "api.test:443", api, "api.test")
		cert := ca.ClientCert("alice", "developers")
		c := newClient(t, setup(h, apptest.NewTelemetry()), kube.Connection{
			Server: "api.test:443",
			TLS:    &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert.TLS}, MinVersion: tls.VersionTLS12},
		})
		require.NoError(t, listNamespaces(t.Context(), c))
		require.Equal(t, []string{""}, api.authorizations())
		require.Equal(t, []string{"alice"}, api.clientCN)
	})
}

func TestClient_ServerName_defaults_to_the_Server_host(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ca := apptest.NewHost(t), apptest.NewCA(t)
		// A pod dials the kubernetes Service's cluster IP, which the API
		// server's certificate names; a load balancer's name it doesn't.
		serve(t, h, ca, "10.96.0.1:443", &apiServer{}, "10.96.0.1")
		serve(t, h, ca, "lb.example.com:443", &apiServer{}, "kubernetes.default.svc")
		s := setup(h, apptest.NewTelemetry())
		roots := ca.Pool()

		byIP := newClient(t, s, kube.Connection{Server: "10.96.0.1:443", TLS: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}})
		require.NoError(t, listNamespaces(t.Context(), byIP))

		lb := newClient(t, s, kube.Connection{Server: "lb.example.com:443", TLS: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}})
		err := listNamespaces(t.Context(), lb)
		require.ErrorContains(t, err, "certificate is valid for kubernetes.default.svc, not lb.example.com")

		named := newClient(t, s, kube.Connection{Server: "lb.example.com:443", TLS: &tls.Config{RootCAs: roots, ServerName: "kubernetes.default.svc", MinVersion: tls.VersionTLS12}})
		require.NoError(t, listNamespaces(t.Context(), named))
	})
}

func TestClient_uses_no_proxy_whatever_the_environment_says(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
	t.Setenv("HTTP_PROXY", "http://proxy.invalid:3128")
	t.Setenv("DISABLE_HTTP2", "true")
	synctest.Test(t, func(t *testing.T) {
		h, ca, api := apptest.NewHost(t), apptest.NewCA(t), &apiServer{}
		serve(t, h, ca, "api.test:443", api, "api.test")
		c := newClient(t, setup(h, apptest.NewTelemetry()), kube.Connection{
			Server: "api.test:443",
			TLS:    &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
		})
		// The network has no proxy.invalid: a request that went through the
		// proxy would be refused.
		require.NoError(t, listNamespaces(t.Context(), c))
	})
}

func TestClient_speaks_HTTP2_and_drops_a_silent_connection_within_45s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ca := apptest.NewHost(t), apptest.NewCA(t)
		var proto atomic.Value
		api := &apiServer{}
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			proto.Store(r.Proto)
			api.ServeHTTP(w, r)
		})
		ln, err := h.Listen(t.Context(), "tcp", "api.test:443")
		require.NoError(t, err)
		srv := &http.Server{Handler: handler, TLSConfig: ca.ServerConfig("api.test"), ReadHeaderTimeout: time.Minute}
		served := make(chan struct{})
		go func() { defer close(served); _ = srv.ServeTLS(ln, "", "") }()
		defer func() { _ = srv.Close(); <-served }()

		c := newClient(t, setup(h, apptest.NewTelemetry()), kube.Connection{
			Server: "api.test:443",
			TLS:    &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
		})
		kc, err := kubernetes.NewForConfig(c.Config())
		require.NoError(t, err)
		w, err := kc.CoreV1().Namespaces().Watch(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		defer w.Stop()
		require.Equal(t, "HTTP/2.0", proto.Load())
		<-w.ResultChan() // the ADDED event

		require.NoError(t, h.Partition("api.test:443"))
		start := time.Now()
		var last watch.Event
		for ev := range w.ResultChan() {
			last = ev
		}
		require.Equal(t, watch.Error, last.Type)
		require.Contains(t, fmt.Sprint(last.Object), "http2: client connection lost")
		elapsed := time.Since(start)
		require.Greater(t, elapsed, 30*time.Second, "the ping is sent after 30s without a frame")
		require.LessOrEqual(t, elapsed, 45*time.Second, "and the connection dropped 15s later")
		require.NoError(t, h.Heal("api.test:443"))
	})
}

func TestClient_sends_200_requests_without_a_client_side_limit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ca := apptest.NewHost(t), apptest.NewCA(t)
		serve(t, h, ca, "api.test:443", &apiServer{}, "api.test")
		c := newClient(t, setup(h, apptest.NewTelemetry()), kube.Connection{
			Server: "api.test:443",
			TLS:    &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
		})
		kc, err := kubernetes.NewForConfig(c.Config())
		require.NoError(t, err)
		start := time.Now()
		for range 200 {
			_, err := kc.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
		}
		// client-go's default limiter, 5 a second bursting to 10, would
		// have slept ~38s of the bubble's clock.
		require.Zero(t, time.Since(start), "no request waited for a rate limiter")
	})
}

func TestClient_traces_every_request_but_a_watch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ca, tel := apptest.NewHost(t), apptest.NewCA(t), apptest.NewTelemetry()
		serve(t, h, ca, "api.test:443", &apiServer{}, "api.test")
		c := newClient(t, setup(h, tel), kube.Connection{
			Server: "api.test:443",
			TLS:    &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
		})
		kc, err := kubernetes.NewForConfig(c.Config())
		require.NoError(t, err)
		_, err = kc.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		w, err := kc.CoreV1().Namespaces().Watch(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		<-w.ResultChan()
		w.Stop()

		spans := tel.Spans()
		require.Len(t, spans, 1, "the list has a span; the watch has none")
		require.Equal(t, "GET", spans[0].Name)
		m, err := tel.Metric(t.Context(), "http.client.request.duration")
		require.NoError(t, err)
		require.Equal(t, "http.client.request.duration", m.Name)
	})
}

func TestClient_Config_returns_a_new_config_each_call(t *testing.T) {
	h, ca := apptest.NewHost(t), apptest.NewCA(t)
	c, err := kube.NewClient(setup(h, apptest.NewTelemetry()), kube.Connection{Server: "api.test:443", TLS: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	a, b := c.Config(), c.Config()
	a.UserAgent = "changed"
	require.Empty(t, b.UserAgent, "changing one Config changes no other")
	require.Equal(t, "https://api.test:443", b.Host)
	require.Less(t, b.QPS, float32(0), "a negative QPS turns client-go's limiter off")
	require.Zero(t, b.Timeout)
}

func TestClient_asks_for_protobuf_falls_back_to_JSON_and_never_asks_for_gzip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ca, api := apptest.NewHost(t), apptest.NewCA(t), &apiServer{}
		serve(t, h, ca, "api.test:443", api, "api.test")
		c := newClient(t, setup(h, apptest.NewTelemetry()), kube.Connection{
			Server: "api.test:443",
			TLS:    &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
		})
		// The stand-in answers JSON alone, as the API server does for a
		// kind without a protobuf form.
		require.NoError(t, listNamespaces(t.Context(), c))
		api.mu.Lock()
		defer api.mu.Unlock()
		require.Len(t, api.headers, 1)
		require.Equal(t, "application/vnd.kubernetes.protobuf,application/json", api.headers[0].Get("Accept"))
		require.Empty(t, api.headers[0].Get("Accept-Encoding"), "no gzip beside the API server")
	})
}

// gzipped answers with a gzipped body when the request accepts gzip, as
// the API server does, and counts the answers it compressed.
type gzipped struct {
	next       http.Handler
	compressed atomic.Int32
}

func (g *gzipped) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		g.next.ServeHTTP(w, r)
		return
	}
	g.compressed.Add(1)
	w.Header().Set("Content-Encoding", "gzip")
	zw := gzip.NewWriter(w)
	defer func() { _ = zw.Close() }()
	g.next.ServeHTTP(gzipWriter{ResponseWriter: w, w: zw}, r)
}

type gzipWriter struct {
	http.ResponseWriter
	w io.Writer
}

func (g gzipWriter) Write(p []byte) (int, error) { return g.w.Write(p) }

func TestClient_WithGzip_asks_for_gzip_and_reads_the_compressed_answer(t *testing.T) {
	tests := []struct {
		name string
		opts []kube.ClientOption
		gzip bool
	}{
		{"default", nil, false},
		{"on", []kube.ClientOption{kube.WithGzip(true)}, true},
		{"off", []kube.ClientOption{kube.WithGzip(false)}, false},
		{"the last wins", []kube.ClientOption{kube.WithGzip(true), kube.WithGzip(false)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, ca, api := apptest.NewHost(t), apptest.NewCA(t), &apiServer{}
				g := &gzipped{next: api}
				ln, err := h.Listen(t.Context(), "tcp", "api.test:443")
				require.NoError(t, err)
				srv := &http.Server{Handler: g, TLSConfig: ca.ServerConfig("api.test"), ReadHeaderTimeout: time.Minute}
				served := make(chan struct{})
				go func() { defer close(served); _ = srv.ServeTLS(ln, "", "") }()
				defer func() { _ = srv.Close(); <-served }()

				c, err := kube.NewClient(setup(h, apptest.NewTelemetry()), kube.Connection{
					Server: "api.test:443",
					TLS:    &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
				}, tt.opts...)
				require.NoError(t, err)
				defer c.RoundTripper().(interface{ CloseIdleConnections() }).CloseIdleConnections()
				kc, err := kubernetes.NewForConfig(c.Config())
				require.NoError(t, err)
				list, err := kc.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
				require.NoError(t, err, "the answer decodes, compressed or not")
				require.Len(t, list.Items, 1)
				require.Equal(t, "default", list.Items[0].Name)

				api.mu.Lock()
				defer api.mu.Unlock()
				require.Len(t, api.headers, 1)
				if tt.gzip {
					require.Equal(t, "gzip", api.headers[0].Get("Accept-Encoding"))
					require.Equal(t, int32(1), g.compressed.Load(), "the answer came compressed")
				} else {
					require.Empty(t, api.headers[0].Get("Accept-Encoding"))
					require.Zero(t, g.compressed.Load())
				}
			})
		})
	}
}

func TestNewClient_reports_every_mistake_together(t *testing.T) {
	h := apptest.NewHost(t)
	s := setup(h, apptest.NewTelemetry())
	tests := []struct {
		name string
		s    *app.Setup
		conn kube.Connection
		opts []kube.ClientOption
		want []string
	}{
		{"nothing", nil, kube.Connection{}, nil, []string{"the Setup is nil", "Connection.Server: is empty", "Connection.TLS: is nil"}},
		{"no port", s, kube.Connection{Server: "api.test", TLS: &tls.Config{}}, nil, []string{`Connection.Server: "api.test" is not host:port`}},
		{"bad port", s, kube.Connection{Server: "api.test:0", TLS: &tls.Config{}}, nil, []string{`port "0" is not a number between 1 and 65535`}},
		{"no host", s, kube.Connection{Server: ":443", TLS: &tls.Config{}}, nil, []string{`":443" has no host`}},
		{"insecure and old", &app.Setup{}, kube.Connection{Server: "api.test:443", TLS: &tls.Config{InsecureSkipVerify: true}}, nil, []string{"the Setup's Host has no Network", "InsecureSkipVerify is set"}},
		{"TLS 1.0", s, kube.Connection{Server: "api.test:443", TLS: &tls.Config{MinVersion: tls.VersionTLS10}}, nil, []string{"MinVersion 0x301 is below TLS 1.2"}},
		{"a nil option", s, kube.Connection{Server: "api.test", TLS: &tls.Config{}}, []kube.ClientOption{kube.WithGzip(true), nil}, []string{"option 1 is nil", `Connection.Server: "api.test" is not host:port`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := kube.NewClient(tt.s, tt.conn, tt.opts...)
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
			require.Len(t, strings.Split(err.Error(), "\n"), len(tt.want), "one line a mistake: %v", err)
		})
	}
}
