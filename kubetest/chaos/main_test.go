package chaos

import (
	"flag"
	"testing"

	"go.uber.org/goleak"

	"github.com/loam-dev/loam/kubetest"
)

// full runs every test at full size; without it they run at the bounded
// sizes `make test` can afford, and smaller still under -short. The e2e
// package's chaos tests take the same flag.
var full = flag.Bool("chaos.full", false, "run the chaos tests at full size (make chaos)")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, kubetest.GoleakOptions()...)
}
