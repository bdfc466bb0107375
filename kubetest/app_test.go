package kubetest_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kubetest"
)

// fatalTB is a testing.TB whose Fatalf stops the goroutine, as a test's
// does, and keeps what it said.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// StartApp given nothing to run stops the test, naming both, rather than
// panic on the nil Cluster.
func TestStartApp_stops_the_test_naming_a_nil_Cluster_and_Init(t *testing.T) {
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		kubetest.StartApp(tb, nil, nil)
	}()
	<-done
	require.Equal(t, "kubetest: StartApp: the Cluster is nil\nthe Init is nil", tb.fatal)
}
