// Package watchlistoff holds the tests that need the API server's
// WatchList feature gate off: a server that refuses a watch asking for
// its initial events first (sendInitialEvents), as a server of an older
// Kubernetes, or one with the gate turned off, does. client-go's
// reflector then falls back to a LIST of the collection and a watch from
// the list's resourceVersion, which is the path these tests hold the
// controller to.
//
// The gate must be off in the process's global feature gate, which the
// API server reads, and kubetest.WithFeatureGates sets it there for the
// rest of the process. The tests of package e2e, which expect the
// default gates, therefore cannot share a binary with these; they live
// here, one linked test binary with one shared cluster, and each test
// takes a namespace of its own.
package watchlistoff
