// Package lintselftest proves that .golangci.yml's exemption from the
// no-controller-runtime rule covers package crcontroller alone: built with
// the lintselftest tag, it imports controller-runtime as any other package
// of the benchmarks module might, and `make benchmarks-lint-selftest`
// checks that golangci-lint reports every line marked "want:".
package lintselftest
