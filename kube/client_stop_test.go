package kube_test

import (
	"context"
	"crypto/tls"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

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

func TestClient_closes_its_idle_connections_when_the_App_stops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ca, api := apptest.NewHost(t), apptest.NewCA(t), &apiServer{}
		serve(t, h, ca, "api.test:443", api, "api.test")
		listed := make(chan error, 1)
		a := apptest.Start(t, func(_ context.Context, s *app.Setup) ([]app.Service, error) {
			c, err := kube.NewClient(s, kube.Connection{
				Server: "api.test:443",
				TLS:    &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
			})
			if err != nil {
				return nil, err
			}
			return []app.Service{lister{client: c, listed: listed}}, nil
		}, apptest.WithHost(h))

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
