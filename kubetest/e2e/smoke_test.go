package e2e

import (
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/kube"
)

// TestSmokeListNamespaces reaches the shared cluster through nothing but a
// kube.Connection turned into a plain client-go config, and finds the
// test's own namespace.
func TestSmokeListNamespaces(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)

	clients, err := kubernetes.NewForConfig(restConfig(c.Connection()))
	require.NoError(t, err)
	list, err := clients.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)

	var names []string
	for _, item := range list.Items {
		names = append(names, item.Name)
	}
	require.Contains(t, names, ns)
	require.True(t, slices.Contains(names, metav1.NamespaceSystem), "namespaces: %v", names)
}

// restConfig is a client-go config that dials conn's server with conn's
// TLS and sends conn's token with each request.
func restConfig(conn kube.Connection) *rest.Config {
	return &rest.Config{
		Host:      "https://" + conn.Server,
		Transport: &http.Transport{TLSClientConfig: conn.TLS, ForceAttemptHTTP2: true},
		WrapTransport: func(next http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
				token, err := conn.Token(req.Context())
				if err != nil {
					return nil, err
				}
				req = req.Clone(req.Context())
				req.Header.Set("Authorization", "Bearer "+token)
				return next.RoundTrip(req)
			})
		},
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
