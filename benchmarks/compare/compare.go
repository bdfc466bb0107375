// Package compare is the harness that measures loam against
// controller-runtime, side by side, on one API server: kubetest's, in the
// harness's own process. cmd/compare runs it (`make compare`), and
// TestCompare runs it small in `make test`.
//
// Every run creates N objects at once in a fresh namespace and times them
// from the first create until the harness's own watch has seen every one
// settled. Four modes settle them: the API server's raw write limit, the
// controller-runtime controller of package crcontroller at its defaults
// and tuned, and the loam controller of package loamcontroller, each
// controller in a process of its own, with its metrics on. The modes interleave, in an order rotated every repeat, and
// every run deletes what it made before the next begins. README.md
// describes the modes, the figures and their columns.
package compare

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/benchmarks/loamcontroller"
	"github.com/loam-dev/loam/kubetest"
)

// The controllers' programs, which Run builds when Config.Bin is empty.
// Both controller-runtime modes run one program, with a flag apart.
var programs = map[Mode]string{
	ControllerRuntime:      "github.com/loam-dev/loam/benchmarks/cmd/crcontroller",
	ControllerRuntimeTuned: "github.com/loam-dev/loam/benchmarks/cmd/crcontroller",
	Loam:                   "github.com/loam-dev/loam/benchmarks/cmd/loamcontroller",
}

// Run starts an API server in this process, installs the Memcached CRD,
// and runs every mode of cfg Repeats times, each run in a fresh
// namespace. It returns the figures of every run, and stops at the first
// run that fails.
func Run(ctx context.Context, cfg Config) (res *Results, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "loam-compare-")
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()

	bins, err := programsOf(ctx, cfg, dir)
	if err != nil {
		return nil, err
	}

	crd, err := loamcontroller.Resource.CRD()
	if err != nil {
		return nil, fmt.Errorf("compare: the Memcached CRD: %w", err)
	}
	started := time.Now()
	cluster, err := kubetest.Run(ctx, kubetest.WithCRDs(crd))
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		err = errors.Join(err, cluster.Stop(stopCtx))
	}()
	logf(cfg, "API server ready in %v", time.Since(started).Round(time.Millisecond))

	h, err := newHarness(cfg, cluster, dir, bins)
	if err != nil {
		return nil, err
	}
	if err := h.warmUp(ctx); err != nil {
		return nil, fmt.Errorf("compare: warm-up: %w", err)
	}
	res = &Results{Config: cfg}
	for r := range cfg.Repeats {
		for _, mode := range cfg.order(r) {
			run, err := h.run(ctx, mode, r+1)
			if err != nil {
				return res, fmt.Errorf("compare: %s, repeat %d: %w", mode, r+1, err)
			}
			res.Runs = append(res.Runs, run)
			logf(cfg, "%s", run.summary(cfg.N))
		}
	}
	return res, nil
}

// harness is what every run uses: the cluster, the harness's clients,
// and how to start each controller.
type harness struct {
	cfg        Config
	kube       kubernetes.Interface
	memcacheds *rest.RESTClient
	raw        rawClient
	bins       map[Mode]string
	// env is the controllers' environment.
	env []string
}

func newHarness(cfg Config, cluster *kubetest.Cluster, dir string, bins map[Mode]string) (*harness, error) {
	rc := cluster.RESTConfig()
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	memcacheds, err := memcachedClient(rc)
	if err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	//nolint:forbidigo // the controllers read the cluster's kubeconfig from a file, as any controller run from a laptop does
	if err := os.WriteFile(kubeconfig, cluster.Kubeconfig(), 0o600); err != nil {
		return nil, fmt.Errorf("compare: write the kubeconfig: %w", err)
	}
	return &harness{
		cfg:        cfg,
		kube:       kube,
		memcacheds: memcacheds,
		raw:        rawClient{http: hc, host: rc.Host},
		bins:       bins,
		env:        ControllerEnv(cfg.Environ, kubeconfig),
	}, nil
}

// warmUpObjects is the size of the warm-up run.
const warmUpObjects = 200

// warmUp runs the limit once, small, and records nothing, so that the
// first recorded run doesn't pay alone for what an API server does once:
// building the CRD's schemas and its server-side apply's type converter,
// starting its watch caches.
func (h *harness) warmUp(ctx context.Context) error {
	w := *h
	w.cfg.N = min(h.cfg.N, warmUpObjects)
	started := time.Now()
	if _, err := w.run(ctx, Limit, 0); err != nil {
		return err
	}
	logf(h.cfg, "warmed up with %d objects in %v", w.cfg.N, time.Since(started).Round(time.Millisecond))
	return nil
}

// StrippedVariables are what ControllerEnv removes from the controllers'
// environment, so that both run with the Go runtime's defaults.
var StrippedVariables = []string{"GOGC", "GOMEMLIMIT", "GOMAXPROCS"}

// ControllerEnv is the environment both controllers run with: environ
// without StrippedVariables, and with KUBECONFIG set to kubeconfig.
func ControllerEnv(environ []string, kubeconfig string) []string {
	drop := append([]string{loamcontroller.KubeconfigVariable}, StrippedVariables...)
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, d := range drop {
			keep = keep && name != d
		}
		if keep {
			env = append(env, kv)
		}
	}
	return append(env, loamcontroller.KubeconfigVariable+"="+kubeconfig)
}

// programsOf returns the path of each controller's program that cfg
// needs: in cfg.Bin, or built into dir.
func programsOf(ctx context.Context, cfg Config, dir string) (map[Mode]string, error) {
	bins := map[Mode]string{}
	var build []string
	for _, m := range cfg.Modes {
		pkg, ok := programs[m]
		if !ok {
			continue
		}
		name := filepath.Base(pkg)
		if cfg.Bin != "" {
			bins[m] = filepath.Join(cfg.Bin, name)
			continue
		}
		bins[m] = filepath.Join(dir, name)
		if !slices.Contains(build, pkg) {
			build = append(build, pkg)
		}
	}
	if len(build) == 0 {
		return bins, nil
	}
	started := time.Now()
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", dir + string(filepath.Separator)}, build...)...)
	if cfg.Environ != nil {
		cmd.Env = cfg.Environ
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("compare: go build %s: %w\n%s", strings.Join(build, " "), err, out)
	}
	logf(cfg, "built the controllers in %v", time.Since(started).Round(time.Millisecond))
	return bins, nil
}

func logf(cfg Config, format string, args ...any) {
	_, _ = fmt.Fprintf(cfg.Log, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
