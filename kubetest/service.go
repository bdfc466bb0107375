package kubetest

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ServiceProxy stands for a Service in front of one pod's port, such as
// the webhook Service the API server calls an App's webhooks through: a
// TCP proxy on loopback that forwards a connection to the pod only while
// the pod is one of the Service's endpoints, and refuses it otherwise, as
// a cluster's Service with no endpoint does. So a test that configures
// its webhooks at the proxy's URL sees what a cluster's routing does to
// them, where a URL straight to the App would always reach it.
// ServeService starts one.
type ServiceProxy struct {
	ln      net.Listener
	target  string
	svc     *corev1.Service
	ready   func(ctx context.Context) bool
	refused atomic.Int64
	passed  atomic.Int64
	conns   sync.WaitGroup
}

// ServeService starts a ServiceProxy on a free loopback port standing for
// svc, whose one pod listens on target, such as an App's webhooks'
// Address. The pod is an endpoint while ready reports true, as the
// kubelet's readiness probe says (ReadyAt probes an App's /readyz), or at
// all times when svc publishes not-ready addresses; a connection the
// proxy takes while the pod is no endpoint is reset at once, and so is
// one the pod itself refuses. TLS passes through: the pod's certificate
// is what the client verifies. The proxy stops when the test ends, after
// the Apps the test started later, and fails the test if it can't start.
func ServeService(t testing.TB, svc *corev1.Service, target string, ready func(ctx context.Context) bool) *ServiceProxy {
	t.Helper()
	// The proxy stands for the cluster's network, outside any App's Host.
	ln, err := net.Listen("tcp", "127.0.0.1:0") //nolint:forbidigo // a Service is the cluster's, not an App's
	if err != nil {
		t.Fatalf("kubetest: ServeService: %v", err)
	}
	p := &ServiceProxy{ln: ln, target: target, svc: svc, ready: ready}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		p.accept()
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-accepted
		p.conns.Wait()
	})
	return p
}

// Addr returns the proxy's host:port, which a WebhookClient's URL names
// in the test in place of the Service.
func (p *ServiceProxy) Addr() string { return p.ln.Addr().String() }

// Refused returns how many connections the proxy reset: taken while the
// pod was no endpoint, or refused by the pod.
func (p *ServiceProxy) Refused() int { return int(p.refused.Load()) }

// Forwarded returns how many connections reached the pod.
func (p *ServiceProxy) Forwarded() int { return int(p.passed.Load()) }

// accept serves each connection until the listener closes.
func (p *ServiceProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.conns.Add(1)
		go func() {
			defer p.conns.Done()
			p.serve(c)
		}()
	}
}

// endpointProbeTimeout bounds one readiness probe, as a probe's
// timeoutSeconds does.
const endpointProbeTimeout = time.Second

// serve forwards c to the pod while the pod is an endpoint, or resets it.
func (p *ServiceProxy) serve(c net.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), endpointProbeTimeout)
	defer cancel()
	endpoint := p.svc.Spec.PublishNotReadyAddresses || p.ready(ctx)
	var pod net.Conn
	if endpoint {
		var d net.Dialer
		pod, _ = d.DialContext(ctx, "tcp", p.target)
	}
	if pod == nil {
		p.refused.Add(1)
		reset(c)
		return
	}
	p.passed.Add(1)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(pod, c)
	go pipe(c, pod)
	<-done
	<-done
	_ = pod.Close()
	_ = c.Close()
}

// reset closes c with a TCP reset, as a refused connection ends.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// ReadyAt returns a readiness probe of an App's probes Service: ready
// while a GET of url, such as http://127.0.0.1:8081/readyz, answers 200,
// as the kubelet's httpGet probe decides.
func ReadyAt(url string) func(ctx context.Context) bool {
	return func(ctx context.Context) bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false
		}
		// A client of its own, with no idle connection left behind.
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close() == nil && resp.StatusCode == http.StatusOK
	}
}
