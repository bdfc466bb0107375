// Package controllerapp starts an App that serves one Controller, as
// kubetest's end-to-end and chaos suites run each replica of the
// controllers they test.
package controllerapp

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
)

// Build makes the Controller an App serves, from the App's Setup and a
// Client of the test's Connection.
type Build func(s *app.Setup, client *kube.Client) (*kube.Controller, error)

// Start runs an App, with opts after apptest.Start's own, whose Init makes
// a kube.Client of conn and serves the Controller build makes of it. It
// returns once Init has returned, with the App and the Controller, and
// fails t, with the App's stderr, when Init failed. The App stops when
// the test ends.
func Start(t testing.TB, conn kube.Connection, build Build, opts ...app.Option) (*apptest.App, *kube.Controller) {
	t.Helper()
	var ctrl *kube.Controller
	a := apptest.Start(t, func(_ context.Context, s *app.Setup) ([]app.Service, error) {
		client, err := kube.NewClient(s, conn)
		if err != nil {
			return nil, err
		}
		c, err := build(s, client)
		if err != nil {
			return nil, err
		}
		ctrl = c
		return []app.Service{c}, nil
	}, apptest.WithAppOptions(opts...))
	a.Setup() // Init has returned, so ctrl is set if it succeeded
	require.NotNil(t, ctrl, "Init failed; stderr: %s", a.Stderr())
	return a, ctrl
}
