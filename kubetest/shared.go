package kubetest

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestingM is what a TestMain runs: *testing.M, or a wrapper of it.
type TestingM interface {
	Run() int
}

// Shared is one cluster for all the tests of a package: the first test that
// asks starts it, each test takes its own namespace, and TestMain stops it
// after the last test. Starting a cluster costs about two seconds and a few
// hundred megabytes, so the tests of a package should share one:
//
//	var cluster = kubetest.NewShared(kubetest.WithCRDs(widgetCRD))
//
//	func TestMain(m *testing.M) { os.Exit(cluster.Run(m)) }
//
//	func TestWidget(t *testing.T) {
//		c := cluster.Cluster(t)
//		ns := c.Namespace(t)
//		...
//	}
//
// Tests that restart the API server or need other options start their own
// cluster with Start.
//
// A Shared is one cluster with the options given to NewShared, never
// looked up or reused by options: two NewShared calls are two clusters.
// Options that change what runs (WithControllerManager,
// WithWorkloadControllers, WithFakeKubelet) therefore go to the NewShared
// of the package whose tests need them, and every test of that package
// gets them.
type Shared struct {
	opts   []Option
	stderr io.Writer

	mu      sync.Mutex
	cluster *Cluster
	err     error // why the cluster did not start; later tests fail with it too
}

// NewShared returns a Shared cluster that starts with opts when a test
// first asks for it.
func NewShared(opts ...Option) *Shared {
	return &Shared{opts: opts, stderr: os.Stderr}
}

// Cluster returns the shared cluster, starting it on the first call. If it
// cannot start, Cluster fails t, and every later caller with the same
// error.
func (s *Shared) Cluster(t testing.TB) *Cluster {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cluster == nil && s.err == nil {
		s.cluster, s.err = Run(t.Context(), s.opts...)
	}
	if s.err != nil {
		t.Fatalf("kubetest: start the shared cluster: %v", s.err)
	}
	return s.cluster
}

// Stop stops the shared cluster if a test started it. It is what Run calls
// after the tests.
func (s *Shared) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cluster == nil {
		return nil
	}
	return s.cluster.Stop(ctx)
}

// Run runs the tests, then stops the cluster, and returns the exit code
// for os.Exit: m's, or 1 if the cluster did not stop cleanly (the reason is
// printed on standard error).
func (s *Shared) Run(m TestingM) int {
	code := m.Run()
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		fmt.Fprintf(s.stderr, "kubetest: stop the shared cluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	settle(15 * time.Second)
	return code
}

// settle waits, at most for limit, for the goroutines of the Kubernetes code
// that end by themselves after a cluster stops — a watch-cache read asleep
// on its 3-second timer, a CRD finalizer's list waiting on such a read —
// so a leak check that runs next sees only what would really leak.
func settle(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for goleak.Find(goleak.IgnoreAnyFunction(processLifetimeLoop)) != nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
}

// Wrap returns m with a Run that also stops the cluster after the tests,
// for a TestMain that hands m on to another wrapper:
//
//	goleak.VerifyTestMain(cluster.Wrap(m), kubetest.GoleakOptions()...)
func (s *Shared) Wrap(m TestingM) TestingM {
	return wrapped{s: s, m: m}
}

type wrapped struct {
	s *Shared
	m TestingM
}

func (w wrapped) Run() int { return w.s.Run(w.m) }
