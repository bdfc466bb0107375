package compare

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/benchmarks/internal/apimetrics"
	"github.com/loam-dev/loam/benchmarks/internal/probe"
	"github.com/loam-dev/loam/benchmarks/internal/proc"
	"github.com/loam-dev/loam/benchmarks/loamcontroller"
)

// leaseName is both controllers' Lease, in the run's namespace, which is
// fresh: so every run's Lease is new, and taken at once.
const leaseName = "memcached-controller"

// Result is what one run measured.
type Result struct {
	Mode Mode
	// Repeat counts from 1.
	Repeat int
	// Namespace is the run's own.
	Namespace string
	// Settled is how many objects the harness's watch saw settled: all
	// of them, since a run that doesn't settle every object fails.
	Settled int
	// Convergence is the time from the first create until the harness's
	// watch had seen every object settled.
	Convergence time.Duration
	// ControllerCPU is the controller process's CPU time (user and
	// system) in that window; zero in the limit.
	ControllerCPU time.Duration
	// Started is what the controller reported before it started: its Go
	// runtime and its heap.
	Started probe.Started
	// Converged is what it reported once every object had settled: its
	// heap and its reconciles.
	Converged probe.Converged
	// ScrapedReconciles is the reconciles the controller's own /metrics
	// counted, scraped once after Converged: loam's
	// loam_kube_controller_reconcile_duration_seconds histogram's count,
	// controller-runtime's controller_runtime_reconcile_total. It shows
	// that each records its metrics as it does in production.
	ScrapedReconciles float64
	// PeakRSS is the controller process's peak resident memory, in bytes,
	// read once every object had settled.
	PeakRSS uint64
	// StartRSS is its peak resident memory once it had reported Started,
	// with its clients and controller built and not one object yet: what
	// the program costs before the objects do.
	StartRSS uint64
	// HarnessCPU is the CPU time of the harness's process in the window:
	// the API server's and etcd's, with the harness's creates and watch
	// (and, in the limit, its applies).
	HarnessCPU time.Duration
	// Requests are the API server's count of the requests it served in
	// the run, from just before the first create until every object had
	// settled, for the kinds the run uses: Memcacheds, ConfigMaps and
	// Leases.
	Requests apimetrics.Requests
	// Left is the number of Memcacheds, ConfigMaps and Leases in the whole
	// cluster once the run had deleted its own, and StoredObjects the API
	// server's apiserver_storage_objects then, which it refreshes once a
	// minute.
	Left          int
	StoredObjects float64
	// Restart is what loam's restart measured, in the loam mode with
	// Config.Restart; nil otherwise.
	Restart *Restart
}

// run runs mode once, in a namespace of its own, and deletes what it
// made.
func (h *harness) run(ctx context.Context, mode Mode, repeat int) (Result, error) {
	ns := mode.short() + "-" + strconv.Itoa(repeat)
	res := Result{Mode: mode, Repeat: repeat, Namespace: ns}
	if _, err := h.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return res, fmt.Errorf("create namespace %s: %w", ns, err)
	}
	watch, err := watchSettled(ctx, h.memcacheds, ns, h.cfg.N)
	if err != nil {
		return res, err
	}
	defer watch.close()

	var c *child
	if mode.controller() {
		if c, err = h.startController(ctx, mode, ns, ""); err != nil {
			return res, err
		}
		defer func() { _ = c.stop() }() // on the paths that fail before the run stops it
		res.Started = c.startedWith
		if res.StartRSS, err = proc.PeakRSS(c.pid()); err != nil {
			return res, err
		}
	}
	if err := h.measure(ctx, &res, watch, c); err != nil {
		return res, err
	}
	if c != nil {
		if err := c.stop(); err != nil {
			return res, err
		}
	}
	if mode == Loam && h.cfg.Restart {
		if res.Restart, err = h.restart(ctx, ns); err != nil {
			return res, err
		}
	}
	watch.close()
	return res, h.afterRun(ctx, &res)
}

// measure runs res's mode from the first create until watch has seen
// every object settled, and fills in res what it measured: the time, the
// CPU of the harness and of the controller c, if any, the controller's
// memory and reconciles, and the API server's count of the requests.
func (h *harness) measure(ctx context.Context, res *Result, watch *settledWatch, c *child) error {
	before, err := apimetrics.Read(ctx, h.kube.Discovery().RESTClient())
	if err != nil {
		return err
	}
	harness0, controller0, err := h.cpu(c)
	if err != nil {
		return err
	}
	profile, err := startProfile(h.cfg.Profile, res.Namespace)
	if err != nil {
		return err
	}
	defer func() { _ = profile.stop() }() // on the paths that fail before it is stopped

	start := time.Now()
	runCtx, cancel := context.WithTimeoutCause(ctx, h.cfg.Timeout,
		fmt.Errorf("%d objects did not settle within %v", h.cfg.N, h.cfg.Timeout))
	defer cancel()
	if err := h.settle(runCtx, res.Mode, res.Namespace); err != nil {
		return err
	}
	settledAt, err := h.awaitSettled(runCtx, watch, c)
	if err != nil {
		return err
	}
	harness1, controller1, err := h.cpu(c)
	if err != nil {
		return err
	}
	if err := profile.stop(); err != nil {
		return err
	}
	res.Settled, res.Convergence = watch.count(), settledAt.Sub(start)
	res.HarnessCPU, res.ControllerCPU = harness1-harness0, controller1-controller0

	if c != nil {
		if res.PeakRSS, err = proc.PeakRSS(c.pid()); err != nil {
			return err
		}
		if res.Converged, err = c.converged(ctx); err != nil {
			return err
		}
		if res.ScrapedReconciles, err = scrapeReconciles(ctx, c); err != nil {
			return err
		}
	}
	after, err := apimetrics.Read(ctx, h.kube.Discovery().RESTClient())
	if err != nil {
		return err
	}
	res.Requests = after.Requests.Since(before.Requests)
	for k := range res.Requests {
		if !runsKind(k) {
			delete(res.Requests, k)
		}
	}
	return nil
}

// afterRun deletes what res's run made, and fills in res what is left in the
// store.
func (h *harness) afterRun(ctx context.Context, res *Result) error {
	if err := h.cleanup(ctx, res.Namespace); err != nil {
		return err
	}
	var err error
	if res.Left, err = h.left(ctx); err != nil {
		return err
	}
	stored, err := apimetrics.Read(ctx, h.kube.Discovery().RESTClient())
	if err != nil {
		return err
	}
	res.StoredObjects = stored.StoredObjects
	return nil
}

// startController starts mode's controller for ns and returns once it
// has reported its heap and taken its Lease: from then on it reconciles
// whatever is created. again is "" for a run's controller; a controller
// started again over the run's objects gets it as the suffix of its
// identity in the Lease (loam's) and of its profile's name, and returns
// only once that identity holds the Lease.
func (h *harness) startController(ctx context.Context, mode Mode, ns, again string) (*child, error) {
	metrics, err := freeAddress()
	if err != nil {
		return nil, err
	}
	var args, env []string
	identity, profile := ns, ns+"-"+string(mode)
	if again != "" {
		identity, profile = identity+"-"+again, profile+"-"+again
	}
	switch mode {
	case ControllerRuntime, ControllerRuntimeTuned:
		args = []string{"-namespace", ns, "-workers", strconv.Itoa(h.cfg.Workers), "-leader-election-id", leaseName,
			"-metrics-bind-address", metrics}
		if mode == ControllerRuntimeTuned {
			args = append(args, "-tuned")
		}
		env = h.env
	case Loam:
		env = append(append([]string(nil), h.env...),
			loamcontroller.NameVariable+"="+leaseName,
			loamcontroller.NamespaceVariable+"="+ns,
			loamcontroller.WorkersVariable+"="+strconv.Itoa(h.cfg.Workers),
			loamcontroller.IdentityVariable+"="+identity,
			loamcontroller.MetricsAddressVariable+"="+metrics,
		)
	}
	if h.cfg.Profile != "" {
		env = append(append([]string(nil), env...),
			probe.CPUProfileVariable+"="+filepath.Join(h.cfg.Profile, profile+".pprof"))
	}
	c, err := startChild(mode, h.bins[mode], args, env)
	if err != nil {
		return nil, err
	}
	c.metrics = metrics
	startCtx, cancel := context.WithTimeoutCause(ctx, 2*time.Minute, errors.New("no report within 2 minutes"))
	defer cancel()
	if c.startedWith, err = c.started(startCtx); err != nil {
		_ = c.stop()
		return nil, err
	}
	holder := ""
	if again != "" {
		holder = identity
	}
	if err := h.awaitLeader(startCtx, ns, holder, c); err != nil {
		_ = c.stop()
		return nil, err
	}
	return c, nil
}

// awaitLeader polls the Lease of ns until it has a holder: the child, the
// only candidate, which is holder when holder isn't "" (the Lease may
// still name a controller that stopped before the child started).
func (h *harness) awaitLeader(ctx context.Context, ns, holder string, c *child) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		l, err := h.kube.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
		switch {
		case err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" &&
			(holder == "" || *l.Spec.HolderIdentity == holder):
			return nil
		case err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil:
			return fmt.Errorf("read Lease %s/%s: %w", ns, leaseName, err)
		case !c.running():
			return fmt.Errorf("%s exited before it took Lease %s/%s%s", c.mode, ns, leaseName, c.stderr.report())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never took Lease %s/%s: %w%s", c.mode, ns, leaseName, context.Cause(ctx), c.stderr.report())
		case <-tick.C:
		}
	}
}

// cpu returns the CPU time of the harness's process and of c's, or zero
// for a nil c.
func (h *harness) cpu(c *child) (harness, controller time.Duration, err error) {
	if harness, err = proc.SelfCPU(); err != nil || c == nil {
		return harness, 0, err
	}
	controller, err = proc.CPU(c.pid())
	return harness, controller, err
}

// settle creates the run's objects with the harness's creators, as fast
// as the API server takes them. In the limit, W goroutines make each
// created object's two applies as the creators hand them over; otherwise
// the controller makes them.
func (h *harness) settle(ctx context.Context, mode Mode, ns string) error {
	g, ctx := errgroup.WithContext(ctx)
	var created chan object
	if mode == Limit {
		created = make(chan object, h.cfg.N) // a creator never waits for an applier
	}
	var (
		next     atomic.Int64
		creators sync.WaitGroup
	)
	for range min(h.cfg.Creators, h.cfg.N) {
		creators.Add(1)
		g.Go(func() error {
			defer creators.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= h.cfg.N {
					return nil
				}
				o, err := h.raw.create(ctx, ns, i)
				if err != nil {
					return err
				}
				if created != nil {
					created <- o
				}
			}
		})
	}
	if created != nil {
		g.Go(func() error {
			creators.Wait()
			close(created)
			return nil
		})
		for range h.cfg.Workers {
			g.Go(func() error {
				for o := range created {
					if err := h.raw.applyBoth(ctx, o); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// awaitSettled waits until watch has seen every object settled, and
// returns when it had. It fails early when the controller c, if any,
// exits.
func (h *harness) awaitSettled(ctx context.Context, watch *settledWatch, c *child) (time.Time, error) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-watch.done:
			return watch.settledAt(), nil
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%d of %d objects settled: %w", watch.count(), h.cfg.N, context.Cause(ctx))
		case <-tick.C:
			if c != nil && !c.running() {
				return time.Time{}, fmt.Errorf("%s exited with %d of %d objects settled%s", c.mode, watch.count(), h.cfg.N, c.stderr.report())
			}
		}
	}
}
