//go:build !race

package reconcile_test

// raceDetector is whether the tests run under the race detector; see
// race_test.go.
const raceDetector = false
