package e2e

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
)

// listening is a Service that accepts connections on its listener and
// writes each what it was given.
type listening struct {
	ln   net.Listener
	text string
}

func (l listening) Serve(context.Context) error {
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			return nil
		}
		_, _ = io.WriteString(conn, l.text)
		_ = conn.Close()
	}
}

func (l listening) Shutdown(context.Context) error { return l.ln.Close() }

// StartApp runs an App on the real network with a Connection to the
// cluster and the kubeconfig in its Host: its Init reaches the API server,
// reads the kubeconfig and listens on a loopback address the test dials.
func TestStartApp_runs_an_App_against_the_cluster_on_the_real_network(t *testing.T) {
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	addr := make(chan string, 1)
	newInit := func(conn kube.Connection) app.Init {
		return func(ctx context.Context, s *app.Setup) ([]app.Service, error) {
			f, err := s.Host.FS.Open(kubetest.KubeconfigFile)
			if err != nil {
				return nil, err
			}
			kubeconfig, err := io.ReadAll(f)
			_ = f.Close()
			if err != nil {
				return nil, err
			}
			client, err := kube.NewClient(s, conn)
			if err != nil {
				return nil, err
			}
			kc, err := kubernetes.NewForConfig(client.Config())
			if err != nil {
				return nil, err
			}
			if _, err := kc.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
				return nil, err
			}
			ln, err := s.Host.Listen(ctx, "tcp", "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			addr <- ln.Addr().String()
			return []app.Service{listening{ln: ln, text: string(kubeconfig)}}, nil
		}
	}
	a := kubetest.StartApp(t, c, newInit(c.Connection()))
	var address string
	select {
	case address = <-addr:
	case <-a.Done():
		t.Fatalf("the App exited with %d: %s", a.Wait(), a.Stderr())
	}
	conn, err := net.Dial("tcp", address)
	require.NoError(t, err)
	got, err := io.ReadAll(conn)
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	require.Contains(t, string(got), "certificate-authority-data", "the Host holds the cluster's kubeconfig")
	require.Zero(t, a.Stop())
}
