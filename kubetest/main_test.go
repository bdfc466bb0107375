package kubetest_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/loam-dev/loam/kubetest"
)

// The tests of this package share one cluster; the few that need other
// options start their own (one more in all), which also proves that two
// clusters run side by side in one process.
var shared *kubetest.Shared

// showLogs sends the clusters' logs to the test output, for debugging:
// go test -args -kubetest.logs=4
var showLogs = flag.Int("kubetest.logs", -1, "write the clusters' logs at this klog verbosity (-1: none)")

// logOptions are the options that carry out -kubetest.logs.
func logOptions(w io.Writer) []kubetest.Option {
	if *showLogs < 0 {
		return nil
	}
	return []kubetest.Option{kubetest.WithLogs(w), kubetest.WithVerbosity(*showLogs)}
}

const (
	restrictedUser  = "dana"
	restrictedToken = "dana-token"
)

// addresses are the API servers' addresses of every cluster the tests
// started: after the last Stop each must be free to bind again.
var addresses struct {
	sync.Mutex
	list []string
}

func rememberAddress(c *kubetest.Cluster) {
	addresses.Lock()
	defer addresses.Unlock()
	addresses.list = append(addresses.list, c.Connection().Server)
}

// TestMain runs the tests with the shared cluster and then checks that
// stopping every cluster released everything: goroutines (goleak, with
// the goroutine per process kubetest documents), file descriptors,
// listening ports and temporary directories.
func TestMain(m *testing.M) {
	os.Exit(runWithLeakChecks(m)) //nolint:forbidigo // TestMain's exit code
}

func runWithLeakChecks(m *testing.M) int {
	flag.Parse()
	shared = kubetest.NewShared(append(logOptions(os.Stderr),
		kubetest.WithUser(restrictedUser, restrictedToken, "kubetest:testers"),
	)...)

	// The clusters' temporary directories go into a directory of our own,
	// so that clusters of other test binaries running at the same time do
	// not count.
	tmp, err := os.MkdirTemp("", "kubetest-leaks-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if err := os.Setenv("TMPDIR", tmp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	fdsBefore, err := openFiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	code := shared.Run(m)
	if code != 0 {
		return code
	}

	var problems []string
	if err := goleak.Find(kubetest.GoleakOptions()...); err != nil {
		problems = append(problems, fmt.Sprintf("goroutines left after Stop: %v", err))
	} else if err := waitForGoroutinesToEnd(); err != nil {
		problems = append(problems, fmt.Sprintf("goroutines still running after Stop: %v", err))
	}
	if fdsAfter, err := openFiles(); err != nil {
		problems = append(problems, err.Error())
	} else if extra := subtract(fdsAfter, fdsBefore); len(extra) > 0 {
		problems = append(problems, fmt.Sprintf("file descriptors left after Stop: %s", strings.Join(extra, ", ")))
	}
	if left, err := filepath.Glob(filepath.Join(tmp, "*")); err != nil {
		problems = append(problems, err.Error())
	} else if len(left) > 0 {
		problems = append(problems, fmt.Sprintf("temporary files left after Stop: %s", strings.Join(left, ", ")))
	}
	addresses.Lock()
	for _, addr := range addresses.list {
		ln, err := net.Listen("tcp", addr) // is the real port free again?
		if err != nil {
			problems = append(problems, fmt.Sprintf("port of %s still taken after Stop: %v", addr, err))
			continue
		}
		_ = ln.Close()
	}
	addresses.Unlock()
	if len(problems) > 0 {
		fmt.Fprintln(os.Stderr, "kubetest leak check failed:\n  "+strings.Join(problems, "\n  "))
		return 1
	}
	return 0
}

// waitForGoroutinesToEnd checks that the goroutines GoleakOptions lets
// through as ending by themselves do end: only the one goroutine per
// process may remain.
func waitForGoroutinesToEnd() error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := goleak.Find(goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/util/wait.Forever"))
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// openFiles lists the process's open file descriptors by what they point
// at, after making sure the runtime's network poller, which opens its own
// descriptors once and keeps them, has started.
func openFiles() ([]string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // starts the runtime's network poller
	if err != nil {
		return nil, err
	}
	_ = ln.Close()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, fmt.Errorf("list open files: %w", err)
	}
	var fds []string
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // the descriptor ReadDir itself used, now closed
		}
		fds = append(fds, e.Name()+"->"+target)
	}
	return fds, nil
}

func subtract(after, before []string) []string {
	seen := map[string]bool{}
	for _, s := range before {
		seen[s] = true
	}
	var extra []string
	for _, s := range after {
		if !seen[s] {
			extra = append(extra, s)
		}
	}
	return extra
}

// cluster returns the shared cluster and remembers its address.
func cluster(t *testing.T) *kubetest.Cluster {
	t.Helper()
	c := shared.Cluster(t)
	rememberAddress(c)
	return c
}

// background is the context of calls made from t.Cleanup.
func background() context.Context { return context.Background() }
