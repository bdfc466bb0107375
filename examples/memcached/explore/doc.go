// Package explore explores the Memcached operator with kubetest's
// explorer (docs/testing.md, "Exploring an operator"). It holds the test
// alone, in a package of its own, so that the operator's own fuzz target
// doesn't link, and instrument, an API server.
package explore
