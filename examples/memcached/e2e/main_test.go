package e2e

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/loam-dev/loam/kubetest"
)

// cluster is the package's one API server: the first test that asks
// starts it, and TestMain stops it after the last.
var cluster = kubetest.NewShared()

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(cluster.Wrap(m), kubetest.GoleakOptions()...)
}
