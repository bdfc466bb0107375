package cloudtoken

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
)

func staticToken(context.Context) (string, error) { return "t", nil }

func TestConnection_takes_each_cloud_s_form_of_endpoint(t *testing.T) {
	ca := caPEM(t)
	tests := []struct {
		endpoint string
		server   string
	}{
		{"https://ABCDEF.gr7.us-west-2.eks.amazonaws.com", "ABCDEF.gr7.us-west-2.eks.amazonaws.com:443"}, // EKS
		{"34.118.1.2", "34.118.1.2:443"}, // GKE
		{"demo-dns-1a2b3c.hcp.westeurope.azmk8s.io:443", "demo-dns-1a2b3c.hcp.westeurope.azmk8s.io:443"}, // AKS
		{"https://api.example.com:6443/", "api.example.com:6443"},
		{"https://[2001:db8::1]:8443", "[2001:db8::1]:8443"},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			conn, err := Connection(tt.endpoint, ca, staticToken)
			require.NoError(t, err)
			require.Equal(t, tt.server, conn.Server)
			require.NotNil(t, conn.TLS.RootCAs, "only the cluster's CA is trusted")
			require.Equal(t, uint16(tls.VersionTLS12), conn.TLS.MinVersion)
			require.False(t, conn.TLS.InsecureSkipVerify)
			tok, err := conn.Token(t.Context())
			require.NoError(t, err)
			require.Equal(t, "t", tok)
		})
	}
}

func TestConnection_reports_every_mistake_at_once(t *testing.T) {
	ca := caPEM(t)
	tests := []struct {
		name     string
		endpoint string
		ca       []byte
		token    func(context.Context) (string, error)
		want     []string
	}{
		{"http", "http://api.example.com", ca, staticToken, []string{`the endpoint "http://api.example.com": the scheme is "http", not https`}},
		{"a path", "https://api.example.com/k8s", ca, staticToken, []string{`the endpoint "https://api.example.com/k8s": it has more than a host and a port`}},
		{"a query", "https://api.example.com/?x=1", ca, staticToken, []string{"it has more than a host and a port"}},
		{"no host", "https://:443", ca, staticToken, []string{`the endpoint "https://:443": it names no host`}},
		{"a bad port", "https://api.example.com:99999", ca, staticToken, []string{`the endpoint "https://api.example.com:99999"`}},
		{"everything", "", []byte("not PEM"), nil, []string{
			`the endpoint "": it names no host`,
			"the CA holds no PEM certificate",
			"the Token function is nil",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Connection(tt.endpoint, tt.ca, tt.token)
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

// network dials loopback with net.Dialer, and records each address.
type network struct {
	mu     sync.Mutex
	dialed []string
}

func (n *network) Dial(ctx context.Context, nw, address string) (net.Conn, error) {
	n.mu.Lock()
	n.dialed = append(n.dialed, address)
	n.mu.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, nw, address)
}

func (n *network) Listen(ctx context.Context, nw, address string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, nw, address)
}

func TestHTTPClient_dials_through_the_Setup_s_Host(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	n := &network{}
	c := HTTPClient(&app.Setup{Host: app.Host{Network: n}})
	t.Cleanup(c.CloseIdleConnections)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, "ok", string(body))
	require.Equal(t, []string{srv.Listener.Addr().String()}, n.dialed)
}
