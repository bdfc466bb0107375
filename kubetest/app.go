package kubetest

import (
	"errors"
	"testing"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
)

// KubeconfigFile is the file, in the Host of an App StartApp runs, that
// holds the cluster's kubeconfig for AdminUser, with its CA and token
// embedded: what an Init that connects from a kubeconfig reads, given its
// path as the end user's own variable says, such as
// apptest.WithEnv(map[string]string{"KUBECONFIG": kubetest.KubeconfigFile}).
const KubeconfigFile = "kubeconfig"

// StartApp runs init, the end user's App, against c on the real network,
// as apptest.Start runs it, and stops it when the test ends: its Host
// dials and listens on the machine's own network (loopback addresses
// reach c and the App's own listeners), and reads and writes a temporary
// directory that holds c's kubeconfig as KubeconfigFile. An Init that
// takes its Connection as an argument gets c.Connection() (or
// c.ConnectionFor a user of WithUser) from the test:
//
//	a := kubetest.StartApp(t, c, operator.NewInit(c.Connection()),
//		apptest.WithEnv(map[string]string{"WATCH_NAMESPACE": ns}))
//
// opts add to what StartApp sets: WithEnv, WithArgs, WithFiles (written
// beside the kubeconfig) and WithAppOptions, such as app.WithFaults. The
// returned App gives the test what it needs: its Telemetry's spans,
// metrics and records, its stdout and stderr, its Setup, and its exit
// code; a test that failed logs its stderr and records. A WithHost or an
// app.WithHost among opts replaces the Host, and the real network with
// it.
//
// It stops the test with Fatal, naming each, when c or init is nil.
func StartApp(t testing.TB, c *Cluster, init app.Init, opts ...apptest.Option) *apptest.App {
	t.Helper()
	var errs []error
	if c == nil {
		errs = append(errs, errors.New("the Cluster is nil"))
	}
	if init == nil {
		errs = append(errs, errors.New("the Init is nil"))
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("kubetest: StartApp: %v", err)
		return nil
	}
	h := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{KubeconfigFile: c.Kubeconfig()}))
	all := append([]apptest.Option{
		apptest.WithHost(h),
		apptest.WithAppOptions(app.WithHost(app.Host{Network: app.OSHost().Network, FS: h.FS()})),
	}, opts...)
	return apptest.Start(t, init, all...)
}
