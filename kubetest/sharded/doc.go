// Package sharded holds the tests that need the ShardedListAndWatch feature
// gate: sharded list and watch (KEP-5866), where a ListOptions.ShardSelector
// such as shardRange(object.metadata.uid, '0x0000000000000000',
// '0x8000000000000000') returns only the objects whose hashed field falls in
// the range, and what is built on it, such as a controller's objects split
// across its replicas.
//
// The gate must be on in the process's global feature gate, which the API
// server's storage layer reads, and kubetest.WithFeatureGates sets it there
// for the rest of the process. The tests of package e2e, which expect the
// default gates, therefore cannot share a binary with these; they live
// here, one linked test binary with one shared cluster, and each test takes
// a namespace of its own.
package sharded
