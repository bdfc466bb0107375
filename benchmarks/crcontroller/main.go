// Package crcontroller is the comparison's controller-runtime controller,
// written the way controller-runtime's own documentation and kubebuilder's
// scaffold teach: a Scheme with the API's types, ctrl.GetConfig, a Manager
// with leader election and its metrics server, and a controller built with
// For and Owns whose Reconciler applies the child and the status with
// server-side apply. Its Reconciler does the work loam's does in package
// loamcontroller, line for line. It runs at controller-runtime's defaults,
// or, tuned, with the options its documentation recommends (Tune).
//
// It is the one package of loam's repository that imports
// controller-runtime (.golangci.yml's depguard rule exempts it alone).
package crcontroller

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/loam-dev/loam/benchmarks/internal/probe"
	"github.com/loam-dev/loam/benchmarks/memcached"
)

// Main runs the controller as a kubebuilder project's main does, with the
// process's arguments (after the program's name) and streams, and returns
// its exit code. It reads the kubeconfig that KUBECONFIG names, as
// ctrl.GetConfig does.
//
// Everything is controller-runtime's default but what the comparison sets
// for both controllers alike: the one namespace the cache watches and the
// Lease lives in, the Lease's name, MaxConcurrentReconciles, and the
// metrics server's address (-metrics-bind-address, as kubebuilder's
// scaffold names it; "0", the default, serves none, and
// controller-runtime records its metrics into its registry all the same).
//
// With -tuned it takes the three options controller-runtime's own
// documentation recommends for a controller like this one (Tune).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crcontroller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	namespace := fs.String("namespace", "", "the one namespace to watch, which holds the Lease too")
	workers := fs.Int("workers", 1, "MaxConcurrentReconciles")
	leaseName := fs.String("leader-election-id", "memcached-controller", "the Lease's name")
	metricsAddr := fs.String("metrics-bind-address", "0", `the metrics server's host:port; "0" serves none`)
	tuned := fs.Bool("tuned", false, "metadata-only Owns, managedFields stripped from the cache, no gzip")
	if err := fs.Parse(args); err != nil {
		return 2
	}

	ctrl.SetLogger(zap.New(zap.WriteTo(stderr)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), memcached.AddToScheme(scheme)); err != nil {
		log.Error(err, "unable to build the scheme")
		return 1
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "unable to get the kubeconfig")
		return 1
	}
	opts := ctrl.Options{
		Scheme:                  scheme,
		LeaderElection:          true,
		LeaderElectionID:        *leaseName,
		LeaderElectionNamespace: *namespace,
		Cache:                   cache.Options{DefaultNamespaces: map[string]cache.Config{*namespace: {}}},
		Metrics:                 metricsserver.Options{BindAddress: *metricsAddr},
	}
	var owns []builder.OwnsOption
	if *tuned {
		owns = Tune(cfg, &opts)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		log.Error(err, "unable to create the manager")
		return 1
	}

	var reconciles atomic.Int64
	err = ctrl.NewControllerManagedBy(mgr).
		For(&memcached.Memcached{}).
		Owns(&corev1.ConfigMap{}, owns...).
		WithOptions(controller.Options{MaxConcurrentReconciles: *workers}).
		Complete(&Reconciler{Client: mgr.GetClient(), Reconciles: &reconciles})
	if err != nil {
		log.Error(err, "unable to create the controller")
		return 1
	}

	p := &probe.Child{In: stdin, Out: stdout, Reconciles: &reconciles,
		CPUProfile: os.Getenv(probe.CPUProfileVariable)} //nolint:forbidigo // the harness's word, as KUBECONFIG is ctrl.GetConfig's
	if err := mgr.Add(probeRunnable{p}); err != nil {
		log.Error(err, "unable to add the harness's probe")
		return 1
	}
	if err := p.Start(); err != nil {
		log.Error(err, "unable to report to the harness")
		return 1
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "the manager failed")
		return 1
	}
	return 0
}

// Tune applies to cfg and opts the options controller-runtime's own
// documentation recommends for a controller that owns many objects it
// never reads, and returns the Owns options that go with them:
//
//   - builder.OnlyMetadata on Owns: the ConfigMaps are watched and cached
//     as metav1.PartialObjectMetadata, since the Reconciler only applies
//     them and never reads one (it would need PartialObjectMetadata to);
//   - cache.TransformStripManagedFields as the cache's default transform:
//     no cached object keeps its managedFields, which the Reconciler never
//     reads;
//   - rest.Config's DisableCompression: no gzip between the controller and
//     an API server beside it, as kube-controller-manager has it.
//
// The client's rate limit stays ctrl.GetConfig's: off (QPS −1), as in the
// default mode.
func Tune(cfg *rest.Config, opts *ctrl.Options) []builder.OwnsOption {
	cfg.DisableCompression = true
	opts.Cache.DefaultTransform = cache.TransformStripManagedFields()
	return []builder.OwnsOption{builder.OnlyMetadata}
}

// probeRunnable serves the harness's probe beside the controller, on
// every replica, leader or not.
type probeRunnable struct{ p *probe.Child }

// Start answers the harness until it ends stdin, which it does before it
// stops the process, and then waits for the Manager to stop.
func (r probeRunnable) Start(ctx context.Context) error {
	if err := r.p.Answer(); err != nil {
		return fmt.Errorf("harness probe: %w", err)
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection tells the Manager to run the probe without the Lease.
func (probeRunnable) NeedLeaderElection() bool { return false }
