package watchlistoff

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/loam-dev/loam/kubetest"
)

// cluster is the package's one cluster, with the WatchList gate off: the
// first test that asks starts it, and TestMain stops it after the last.
// Each test takes a namespace with cluster.Cluster(t).Namespace(t).
var cluster = kubetest.NewShared(
	kubetest.WithFeatureGates(map[string]bool{"WatchList": false}),
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(cluster.Wrap(m), kubetest.GoleakOptions()...)
}
