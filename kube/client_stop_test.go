package kube_test

import (
	"context"
	"crypto/tls"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
)

// lister lists namespaces once when served, then waits to be stopped.
type lister struct {
	client *kube.Client
	listed chan error
}

func (l lister) Serve(ctx context.Context) error {
	l.listed <- listNamespaces(ctx, l.client)
	<-ctx.Done()
	return nil
}

func (lister) Shutdown(context.Context) error { return nil }

// startWithClient starts an App on h whose Init makes a Client of the API
// server at api.test:443, trusting ca, and serves the Service svc makes
// of it.
func startWithClient(t *testing.T, h *apptest.Host, ca *apptest.CA, svc func(*kube.Client) app.Service) *apptest.App {
	t.Helper()
	return apptest.Start(t, func(_ context.Context, s *app.Setup) ([]app.Service, error) {
		c, err := kube.NewClient(s, kube.Connection{
			Server: "api.test:443",
			TLS:    &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
		})
		if err != nil {
			return nil, err
		}
		return []app.Service{svc(c)}, nil
	}, apptest.WithHost(h))
}

func TestClient_closes_its_idle_connections_when_the_App_stops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ca, api := apptest.NewHost(t), apptest.NewCA(t), &apiServer{}
		serve(t, h, ca, "api.test:443", api, "api.test")
		listed := make(chan error, 1)
		a := startWithClient(t, h, ca, func(c *kube.Client) app.Service { return lister{client: c, listed: listed} })

		require.NoError(t, <-listed)
		synctest.Wait()
		require.Equal(t, int32(1), api.conns.Load())
		require.Zero(t, api.closed.Load(), "the connection stays open for the next request")

		a.Signal(syscall.SIGTERM)
		require.Equal(t, 0, a.Wait())
		synctest.Wait()
		require.Equal(t, int32(1), api.closed.Load(), "OnStop closed the idle connection")
	})
}

// watchLeftOpen starts a watch that outlives its Serve, as a watch being
// torn down while the App stops does, and reports its events' end.
type watchLeftOpen struct {
	client  *kube.Client
	started chan error
	ended   chan struct{}
}

func (w watchLeftOpen) Serve(ctx context.Context) error {
	kc, err := kubernetes.NewForConfig(w.client.Config())
	if err != nil {
		w.started <- err
		return err
	}
	// Not ctx: nothing cancels this watch; only its connection closing
	// ends it.
	wi, err := kc.CoreV1().Namespaces().Watch(context.WithoutCancel(ctx), metav1.ListOptions{})
	w.started <- err
	if err != nil {
		return err
	}
	go func() {
		defer close(w.ended)
		for range wi.ResultChan() {
		}
	}()
	<-ctx.Done()
	return nil
}

func (watchLeftOpen) Shutdown(context.Context) error { return nil }

func TestClient_closes_a_connection_still_in_use_when_the_App_stops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ca, api := apptest.NewHost(t), apptest.NewCA(t), &apiServer{}
		serve(t, h, ca, "api.test:443", api, "api.test")
		w := watchLeftOpen{started: make(chan error, 1), ended: make(chan struct{})}
		a := startWithClient(t, h, ca, func(c *kube.Client) app.Service {
			w.client = c
			return w
		})

		require.NoError(t, <-w.started)
		synctest.Wait()
		require.Equal(t, int32(1), api.conns.Load())

		a.Signal(syscall.SIGTERM)
		require.Equal(t, 0, a.Wait())
		synctest.Wait()
		require.Equal(t, int32(1), api.closed.Load(), "OnStop closed the connection the watch held")
		select {
		case <-w.ended:
		default:
			t.Fatal("the watch's result channel is still open after the App stopped")
		}
	})
}
