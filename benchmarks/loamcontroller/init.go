package loamcontroller

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/config"
	"github.com/loam-dev/loam/app/httpmetrics"
	"github.com/loam-dev/loam/benchmarks/internal/probe"
	"github.com/loam-dev/loam/examples/connection"
	"github.com/loam-dev/loam/kube"
)

// The environment variables Init reads. The harness sets them; the names
// are this program's own, as loam defines none.
const (
	// KubeconfigVariable names the kubeconfig to connect with, as
	// controller-runtime's child reads it too.
	KubeconfigVariable = "KUBECONFIG"
	// NamespaceVariable is the one namespace the controller watches, which
	// also holds its Lease.
	NamespaceVariable = "CONTROLLER_NAMESPACE"
	// WorkersVariable is the number of reconciles at once.
	WorkersVariable = "CONTROLLER_WORKERS"
	// NameVariable is the controller's name: its Lease and field manager.
	NameVariable = "CONTROLLER_NAME"
	// IdentityVariable is the replica's identity in the Lease.
	IdentityVariable = "POD_NAME"
	// MetricsAddressVariable is the host:port /metrics is served on; unset
	// or empty serves none, though the controller still records its
	// metrics, as controller-runtime's does with its server off.
	MetricsAddressVariable = "METRICS_ADDRESS"
)

// Init returns the App's Init: it builds a Client from the kubeconfig, a
// clientset on it, and a Controller of Memcacheds that owns ConfigMaps,
// with loam's default Settings but for the name, namespace and workers.
// Once all is built it reports its heap to the harness, and it serves the
// Controller, the harness's probe, and /metrics on METRICS_ADDRESS when
// it is set. stdin is where the harness's words arrive: a Process has no
// standard input of its own.
//
// Its metrics are on, as an operator runs in production: the App runs
// with app.WithTelemetry(tel.Build), so the Controller and the Client
// record into an SDK MeterProvider that tel's Prometheus exporter reads.
// Without that telemetry Init fails.
func Init(stdin io.Reader, tel *Telemetry) app.Init {
	return func(ctx context.Context, s *app.Setup) ([]app.Service, error) {
		e, err := readEnvironment(ctx, s)
		if err != nil {
			return nil, err
		}
		exporter := tel.exporter
		if exporter == nil {
			return nil, errNoExporter
		}
		conn, err := connection.FromKubeconfig(s.Host.FS, e.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", KubeconfigVariable, e.kubeconfig, err)
		}
		client, err := kube.NewClient(s, conn)
		if err != nil {
			return nil, err
		}
		kc, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		var reconciles atomic.Int64
		ctrl, err := kube.NewController(s, client, e.settings, Resource,
			Reconciler{Kube: kc, Reconciles: &reconciles, LabelPasses: e.profile != ""},
			kube.Owns(corev1.SchemeGroupVersion.WithResource("configmaps")))
		if err != nil {
			return nil, err
		}

		services := []app.Service{ctrl}
		if e.metrics != "" {
			metrics, err := httpmetrics.NewService(s, httpmetrics.Settings{Address: e.metrics}, exporter)
			if err != nil {
				return nil, err
			}
			services = append(services, metrics)
		}

		p := &probe.Child{In: stdin, Out: s.Process.Stdout, Reconciles: &reconciles, CPUProfile: e.profile}
		if err := p.Start(); err != nil {
			return nil, err
		}
		return append(services, probeService{p}), nil
	}
}

// environment is what the harness tells the App through its
// environment.
type environment struct {
	settings   kube.Settings
	kubeconfig string
	// profile is where the probe writes a CPU profile; "" for none.
	profile string
	// metrics is the address /metrics is served on; "" for none.
	metrics string
}

// readEnvironment sources the Controller's Settings, the kubeconfig's path,
// the profile's and the metrics' address from the Process's environment,
// reporting every bad variable at once.
func readEnvironment(ctx context.Context, s *app.Setup) (environment, error) {
	env := func(name string) config.Value[string] { return config.Env(s.Process.Environment, name) }
	d := kube.DefaultSettings()
	return config.Struct(func(r *config.Resolver) environment {
		k := d
		k.Name = r.Get(env(NameVariable).Validate(kube.CheckName))
		k.Namespace = r.Get(env(NamespaceVariable).Validate(kube.CheckNamespace))
		k.Workers = r.Get(env(WorkersVariable).Parse(strconv.Atoi).Default(d.Workers).Validate(kube.CheckWorkers))
		k.LeaderElection.Namespace = k.Namespace
		k.LeaderElection.Identity = r.Get(env(IdentityVariable).Validate(kube.CheckIdentity))
		return environment{
			settings:   k,
			kubeconfig: r.Get(env(KubeconfigVariable)),
			profile:    r.Get(env(probe.CPUProfileVariable).Default("")),
			metrics:    r.Get(env(MetricsAddressVariable).Default("").Validate(checkOptionalAddress)),
		}
	}).Read(ctx)
}

// checkOptionalAddress reports whether address is "" or one the metrics
// Service can listen on.
func checkOptionalAddress(address string) error {
	if address == "" {
		return nil
	}
	return httpmetrics.CheckAddress(address)
}

// probeService serves the harness's probe beside the Controller.
type probeService struct{ p *probe.Child }

// Serve answers the harness until it ends stdin, which it does before it
// stops the App, and then waits for the App to stop.
func (s probeService) Serve(ctx context.Context) error {
	if err := s.p.Answer(); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// Shutdown returns at once: Serve returns when ctx is done.
func (probeService) Shutdown(context.Context) error { return nil }

// String names the Service in the App's records.
func (probeService) String() string { return "harness probe" }
