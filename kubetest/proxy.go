package kubetest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
)

// Proxy is a TLS server of its own CA in front of a Cluster's API server,
// for a test to see, hold or count what a controller sends: Cluster.Proxy
// starts one.
type Proxy struct {
	server string
	ca     *apptest.CA
}

// Proxy starts a Proxy in front of c's API server. Each request goes to
// inspect, which passes it on, as it came, with next, or answers it
// itself. The client's TLS ends at the proxy, so what inspect sees is
// what the API server receives; the request goes on with the credentials
// it came with. The proxy stops when the test ends, after the Apps the
// test started later, and fails the test if it can't start.
func (c *Cluster) Proxy(t testing.TB, inspect func(rw http.ResponseWriter, r *http.Request, next http.Handler)) *Proxy {
	t.Helper()
	upstream := c.Connection()
	target := &url.URL{Scheme: "https", Host: upstream.Server}
	transport := &http.Transport{TLSClientConfig: upstream.TLS, ForceAttemptHTTP2: true}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1, // a watch streams
		ErrorHandler: func(rw http.ResponseWriter, r *http.Request, err error) {
			// A client that went away, as an App that stopped or was cut
			// off does, is no news; the rest is.
			if !errors.Is(r.Context().Err(), context.Canceled) {
				t.Logf("kubetest: proxy: %s %s: %v", r.Method, r.URL.Path, err)
			}
			rw.WriteHeader(http.StatusBadGateway)
		},
	}
	ca := apptest.NewCA(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		inspect(rw, r, proxy)
	}))
	srv.EnableHTTP2 = true
	srv.TLS = ca.ServerConfig("127.0.0.1")
	srv.StartTLS()
	t.Cleanup(func() {
		srv.Close()
		transport.CloseIdleConnections()
	})
	return &Proxy{server: srv.Listener.Addr().String(), ca: ca}
}

// Connection returns the Connection that reaches the cluster through p,
// with no Token: set the one of the user the test connects as.
func (p *Proxy) Connection() kube.Connection {
	return kube.Connection{
		Server: p.server,
		TLS:    &tls.Config{RootCAs: p.ca.Pool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12},
	}
}

// Kubeconfig returns kubeconfig, one the Cluster wrote, with every
// cluster in it rewritten to reach the API server through p, its
// credentials kept. It fails when kubeconfig doesn't parse.
func (p *Proxy) Kubeconfig(kubeconfig []byte) ([]byte, error) {
	config, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubetest: the kubeconfig to proxy: %w", err)
	}
	for _, cluster := range config.Clusters {
		cluster.Server = "https://" + p.server
		cluster.CertificateAuthorityData = p.ca.PEM()
	}
	b, err := clientcmd.Write(*config)
	if err != nil {
		return nil, fmt.Errorf("kubetest: the proxied kubeconfig: %w", err)
	}
	return b, nil
}

// Lists reports whether r, a request a Proxy's inspect is handed, lists
// objects, as the API server reads it: a LIST of a collection, or a watch
// that asks for the collection's initial events first (sendInitialEvents,
// client-go's watch-list), which lists as it opens. A get, a watch from a
// resourceVersion, a write and a request that isn't for a resource, such
// as discovery, are not.
func Lists(r *http.Request) bool {
	// The API server's own reading of a request's path and query.
	infos := request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	info, err := infos.NewRequestInfo(r)
	if err != nil || !info.IsResourceRequest {
		return false
	}
	switch info.Verb {
	case "list":
		return true
	case "watch":
		return r.URL.Query().Get("sendInitialEvents") == "true"
	}
	return false
}
