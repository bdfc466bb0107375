// Package chaos holds the part of loam's chaos suite that needs clusters
// of its own: each test starts a kubetest cluster, runs one or more
// replicas of a controller against it as whole Apps, and disturbs them —
// it restarts the API server, kills the leader without releasing its
// Lease, takes the Lease away mid-reconcile, or sends SIGTERM mid-reconcile
// — and then asserts what loam promises under that fault.
//
// The tests run in `make test` at bounded sizes, smaller still under
// -short, and at full size with the package flag -chaos.full:
//
//	cd kubetest && go test -count=1 -timeout 60m -run Chaos ./chaos -args -chaos.full
//
// Each test logs what it measured on lines that start with "figure:".
package chaos
