//go:build race

package reconcile_test

// raceDetector is whether the tests run under the race detector, whose
// sync.Pool drops a share of what is put back at random, so that a pooled
// buffer is allocated again now and then.
const raceDetector = true
