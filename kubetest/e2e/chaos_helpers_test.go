package e2e

import (
	"context"
	"errors"
	"flag"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/internal/controllerapp"
)

// The chaos tests put a controller through the faults the spec says it
// survives — a dead connection, a rotated or failing token, deletions
// racing its reconciles, panics of the end user's code — on the package's
// shared cluster, each in a namespace and an API group of its own, as the
// controller tests do. Each asserts the promise, not that code ran, and
// logs what it measured on lines that start with "figure:".

// chaosFull runs the chaos tests at full size: more objects, longer
// windows. make chaos sets it; make test runs them bounded.
var chaosFull = flag.Bool("chaos.full", false, "run the chaos tests at full size")

// chaosSize returns bounded when the tests run bounded, and full under
// -chaos.full.
func chaosSize[T any](bounded, full T) T {
	if *chaosFull {
		return full
	}
	return bounded
}

// startChaosController runs an App whose Init builds a Client of conn and
// the Controller build returns, on host, with opts after Start's own.
// Its controllerApp has no network of the controller tests: the test holds
// its own.
func startChaosController(t *testing.T, conn kube.Connection, host app.Host, build controllerapp.Build, opts ...app.Option) *controllerApp {
	t.Helper()
	a, ctrl := controllerapp.Start(t, conn, build, append([]app.Option{app.WithHost(host)}, opts...)...)
	return &controllerApp{App: a, ctrl: ctrl}
}

// chaosNetwork is an App's network that the test can Cut, as an API
// server that is down or a partitioned network does, until Restore.
// &chaosNetwork{} dials the real network; with Network: via(addr), every
// dial goes to addr instead, such as a proxy the test controls.
type chaosNetwork = apptest.Switch

// via is a network that dials addr, whatever address it is asked for.
type via string

func (v via) Dial(ctx context.Context, network, _ string) (net.Conn, error) {
	return app.OSHost().Dial(ctx, network, string(v))
}

func (v via) Listen(context.Context, string, string) (net.Listener, error) {
	return nil, errors.New("a controller's App listens on nothing")
}

// tcpProxy passes TCP connections on to an upstream address byte for
// byte, until the test black-holes them: from then on it forwards nothing
// of those connections, either way, and closes neither side, as a network
// that silently drops packets — a dead NAT entry, a pulled cable, a peer
// that froze — leaves a connection. Only TCP's own timeouts, or the
// application's health checks, can tell such a connection is dead.
// Connections accepted after the black hole are passed on as before.
type tcpProxy struct {
	ln       net.Listener
	upstream string
	wg       sync.WaitGroup

	mu     sync.Mutex
	closed bool
	pairs  []*tcpPair
}

// tcpPair is one proxied connection: the client's and the upstream's
// sides.
type tcpPair struct {
	client, server net.Conn
	holed          atomic.Bool

	mu sync.Mutex
	// clientGone is when the client closed its side of the holed
	// connection: when it noticed the connection was dead.
	clientGone time.Time
}

// startTCPProxy starts a proxy to upstream on loopback; it closes every
// connection and stops when the test ends, after the Apps the test starts
// later.
func startTCPProxy(t *testing.T, upstream string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &tcpProxy{ln: ln, upstream: upstream}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// addr is the proxy's host:port.
func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		var d net.Dialer
		s, err := d.Dial("tcp", p.upstream)
		if err != nil {
			_ = c.Close()
			continue
		}
		pair := &tcpPair{client: c, server: s}
		p.mu.Lock()
		closed := p.closed
		if !closed {
			p.pairs = append(p.pairs, pair)
		}
		p.mu.Unlock()
		if closed {
			_ = c.Close()
			_ = s.Close()
			return
		}
		p.wg.Go(func() { pair.pipe(s, c, true) })
		p.wg.Go(func() { pair.pipe(c, s, false) })
	}
}

// pipe copies src to dst until src ends, dropping what it reads once the
// pair is holed. An end of src is passed on to dst only while the pair is
// not holed.
func (pp *tcpPair) pipe(dst, src net.Conn, fromClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !pp.holed.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil && !pp.holed.Load() {
				_ = src.Close()
				_ = dst.Close()
				return
			}
		}
		if err == nil {
			continue
		}
		if pp.holed.Load() {
			if fromClient {
				pp.mu.Lock()
				pp.clientGone = time.Now()
				pp.mu.Unlock()
			}
			_ = src.Close()
			return
		}
		_ = src.Close()
		_ = dst.Close()
		return
	}
}

// blackhole black-holes every connection the proxy has passed on so far,
// and returns how many it has.
func (p *tcpProxy) blackhole() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pair := range p.pairs {
		pair.holed.Store(true)
	}
	return len(p.pairs)
}

// accepted returns how many connections the proxy has accepted.
func (p *tcpProxy) accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pairs)
}

// clientsGone returns when the clients of the holed connections closed
// them, for those that did.
func (p *tcpProxy) clientsGone() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var gone []time.Time
	for _, pair := range p.pairs {
		pair.mu.Lock()
		if !pair.clientGone.IsZero() {
			gone = append(gone, pair.clientGone)
		}
		pair.mu.Unlock()
	}
	return gone
}

func (p *tcpProxy) close() {
	p.mu.Lock()
	p.closed = true
	pairs := p.pairs
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, pair := range pairs {
		_ = pair.client.Close()
		_ = pair.server.Close()
	}
	p.wg.Wait()
}

// authWire is a recording proxy between a Client and the cluster, like
// the fault tests' wire, that keeps the bearer token of every request and
// when it arrived, and counts the API server's 401s. Only the test reads
// what it keeps.
type authWire struct {
	mu           sync.Mutex
	requests     []authRequest
	unauthorized atomic.Int32
}

type authRequest struct {
	at                  time.Time
	token, method, path string
}

// startAuthWire starts the proxy to c's API server, and returns it and a
// Connection that reaches the cluster through it with no Token: the test
// sets its own. It stops when the test ends, after the Apps the test
// starts later.
func startAuthWire(t *testing.T, c *kubetest.Cluster) (*authWire, kube.Connection) {
	t.Helper()
	w := &authWire{}
	conn := startProxy(t, c, func(rw http.ResponseWriter, r *http.Request, next http.Handler) {
		w.mu.Lock()
		w.requests = append(w.requests, authRequest{
			at:     time.Now(),
			token:  strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "),
			method: r.Method,
			path:   r.URL.Path,
		})
		w.mu.Unlock()
		next.ServeHTTP(&codeWriter{ResponseWriter: rw, w: w}, r)
	})
	return w, conn
}

// codeWriter counts the 401s the API server answers.
type codeWriter struct {
	http.ResponseWriter
	w *authWire
}

func (c *codeWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		c.w.unauthorized.Add(1)
	}
	c.ResponseWriter.WriteHeader(code)
}

// Unwrap lets the proxy flush a watch's events through.
func (c *codeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// all returns every request the proxy has passed on.
func (w *authWire) all() []authRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.requests)
}

// firstWith returns when the first request carrying token arrived, and
// false if none has.
func (w *authWire) firstWith(token string) (time.Time, bool) {
	for _, r := range w.all() {
		if r.token == token {
			return r.at, true
		}
	}
	return time.Time{}, false
}

// telemetryTexts is every string an App's in-memory telemetry holds, by
// where it holds it: span names, status descriptions, attributes, events
// and links; records' bodies, severities and attributes; metrics' names
// and every data point's attributes; and the resource of each.
type telemetryTexts struct {
	spans, records, metrics []string
}

// textsOf collects tel's strings. It fails the test on a kind of metric
// data it can't read, so nothing is left out unread.
func textsOf(t *testing.T, tel *apptest.Telemetry) telemetryTexts {
	t.Helper()
	var out telemetryTexts
	for _, s := range tel.Spans() {
		out.spans = append(out.spans, s.Name, s.Status.Description, s.InstrumentationScope.Name)
		out.spans = append(out.spans, kvTexts(s.Attributes)...)
		if s.Resource != nil {
			out.spans = append(out.spans, kvTexts(s.Resource.Attributes())...)
		}
		for _, e := range s.Events {
			out.spans = append(out.spans, e.Name)
			out.spans = append(out.spans, kvTexts(e.Attributes)...)
		}
		for _, l := range s.Links {
			out.spans = append(out.spans, kvTexts(l.Attributes)...)
		}
	}
	for _, r := range tel.Records() {
		out.records = append(out.records, r.Body().String(), r.SeverityText(), r.EventName(), r.InstrumentationScope().Name)
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			out.records = append(out.records, string(kv.Key), kv.Value.String())
			return true
		})
	}
	rm, err := tel.Metrics(context.Background())
	require.NoError(t, err)
	if rm.Resource != nil {
		out.metrics = append(out.metrics, kvTexts(rm.Resource.Attributes())...)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out.metrics = append(out.metrics, m.Name, m.Description, m.Unit)
			sets, ok := metricSets(m.Data)
			require.True(t, ok, "metric %s: data of a kind the grep can't read: %T", m.Name, m.Data)
			for _, set := range sets {
				out.metrics = append(out.metrics, kvTexts(set.ToSlice())...)
			}
		}
	}
	return out
}

// metricSets returns the attribute sets of every data point of data, and
// false for a kind of data it doesn't know.
func metricSets(data metricdata.Aggregation) ([]attribute.Set, bool) {
	switch d := data.(type) {
	case metricdata.Gauge[int64]:
		return pointSets(d.DataPoints), true
	case metricdata.Gauge[float64]:
		return pointSets(d.DataPoints), true
	case metricdata.Sum[int64]:
		return pointSets(d.DataPoints), true
	case metricdata.Sum[float64]:
		return pointSets(d.DataPoints), true
	case metricdata.Histogram[int64]:
		return histogramSets(d.DataPoints), true
	case metricdata.Histogram[float64]:
		return histogramSets(d.DataPoints), true
	}
	return nil, false
}

func pointSets[N int64 | float64](dps []metricdata.DataPoint[N]) []attribute.Set {
	var sets []attribute.Set
	for _, dp := range dps {
		sets = append(sets, dp.Attributes)
		for _, e := range dp.Exemplars {
			sets = append(sets, attribute.NewSet(e.FilteredAttributes...))
		}
	}
	return sets
}

func histogramSets[N int64 | float64](dps []metricdata.HistogramDataPoint[N]) []attribute.Set {
	var sets []attribute.Set
	for _, dp := range dps {
		sets = append(sets, dp.Attributes)
		for _, e := range dp.Exemplars {
			sets = append(sets, attribute.NewSet(e.FilteredAttributes...))
		}
	}
	return sets
}

func kvTexts(kvs []attribute.KeyValue) []string {
	texts := make([]string, 0, 2*len(kvs))
	for _, kv := range kvs {
		texts = append(texts, string(kv.Key), kv.Value.String())
	}
	return texts
}

// containing returns the texts that contain needle.
func containing(texts []string, needle string) []string {
	var found []string
	for _, s := range texts {
		if strings.Contains(s, needle) {
			found = append(found, s)
		}
	}
	return found
}
