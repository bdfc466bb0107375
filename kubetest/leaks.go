package kubetest

import "go.uber.org/goleak"

// GoleakOptions are the options goleak needs to check a process that ran
// clusters, for a TestMain such as:
//
//	goleak.VerifyTestMain(cluster.Wrap(m), kubetest.GoleakOptions()...)
//
// A stopped cluster leaves no goroutine of its own. Two kinds of goroutine
// of the Kubernetes code outlive it, and the options ignore exactly those:
//
//   - The API server's "log" health check starts, once per process, a
//     goroutine that flushes klog every minute for as long as the process
//     lives (a wait.Forever loop, the only one in the code a cluster runs).
//   - The watch cache starts a goroutine for each read at a resource
//     version that sleeps out a 3-second timer before it ends, whether or
//     not the read waited; the last ones are still asleep when Stop
//     returns, and end by themselves.
func GoleakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction(processLifetimeLoop),
		goleak.IgnoreTopFunction("k8s.io/apiserver/pkg/storage/cacher.(*watchCache).waitUntilFreshLocked.func2"),
	}
}

// processLifetimeLoop is the function of the one goroutine per process that
// outlives every cluster.
const processLifetimeLoop = "k8s.io/apimachinery/pkg/util/wait.Forever"
