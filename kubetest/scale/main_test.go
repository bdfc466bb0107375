package scale

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/loam-dev/loam/kubetest"
)

// Each run of the harness starts its own cluster in TestScale; the child
// process of the start-up and memory phases starts none.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, kubetest.GoleakOptions()...)
}
