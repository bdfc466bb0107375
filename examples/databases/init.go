package databases

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/config"
	"github.com/loam-dev/loam/app/health"
	"github.com/loam-dev/loam/app/httphealth"
	"github.com/loam-dev/loam/app/httpmetrics"
	"github.com/loam-dev/loam/examples/connection"
	"github.com/loam-dev/loam/examples/telemetry"
	"github.com/loam-dev/loam/kube"
)

// kubeconfigVariable names a kubeconfig to connect with instead of the
// pod's service account, for running the controller outside a cluster.
const kubeconfigVariable = "DATABASES_KUBECONFIG"

// ScenarioAnnotation is the annotation that carries a failure scenario into
// a Database's reconciles, in the namespace EXPERIMENT_NAMESPACE names,
// when the App runs with failure injection.
const ScenarioAnnotation = "databases.example.com/failure-scenario"

// defaultProbeAddress is where the probes Service listens unless
// PROBE_ADDRESS says otherwise.
const defaultProbeAddress = ":8081"

// defaultMetricsAddress is where the metrics Service listens unless
// METRICS_ADDRESS says otherwise; deploy/deployment.yaml's metrics port
// names it.
const defaultMetricsAddress = ":8080"

// Settings is everything Init sources besides the Connection.
type Settings struct {
	// Controller is the controller's: CONTROLLER_NAME, CONTROLLER_WORKERS,
	// WATCH_NAMESPACE, POD_NAMESPACE and POD_NAME.
	Controller kube.Settings
	// Postgres is the server's: POSTGRES_HOST, POSTGRES_PORT,
	// POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DATABASE. Its Dial is
	// left to Init.
	Postgres Postgres
	// ExperimentNamespace, EXPERIMENT_NAMESPACE, is the one namespace
	// whose Databases are trusted with a failure scenario; "" trusts none.
	ExperimentNamespace string
	// Probes is the probes Service's: PROBE_ADDRESS, ":8081" by default.
	Probes httphealth.Settings
	// Metrics is the metrics Service's: METRICS_ADDRESS, ":8080" by
	// default.
	Metrics httpmetrics.Settings
}

// errNoExporter is what Operator.Init reports when the App's telemetry
// was not built by the Operator's Telemetry.
var errNoExporter = fmt.Errorf("databases: Operator.Init: %w", telemetry.ErrNoExporter)

// Init is the controller's Init: it sources the Settings and the
// Connection, and returns the Database controller, which owns Secrets,
// drops databases with its finalizer, and trusts the failure scenario on
// the Databases of EXPERIMENT_NAMESPACE, with a probes Service on
// PROBE_ADDRESS whose readiness is the controller's Synced, and a metrics
// Service on METRICS_ADDRESS that serves the exporter o's Telemetry made.
// A variable that is missing or wrong fails Init, naming every one, so the
// App exits 78; so does an App whose telemetry o's Telemetry did not
// build, reported with them.
func (o *Operator) Init(ctx context.Context, s *app.Setup) ([]app.Service, error) {
	return initController(ctx, s, true, o.Exporter())
}

// Init is the controller's Init for an App whose telemetry another builder
// makes, such as the in-memory Telemetry of apptest that a test reads: all
// that Operator.Init returns but the metrics Service, which would have no
// exporter to serve. It checks METRICS_ADDRESS all the same, so a value
// one fails is one the other fails. Command databases runs Operator.Init.
func Init(ctx context.Context, s *app.Setup) ([]app.Service, error) {
	return initController(ctx, s, false, nil)
}

// initController is both Inits: with serveMetrics, the services include a
// metrics Service of exporter, and a nil exporter is one more mistake.
func initController(ctx context.Context, s *app.Setup, serveMetrics bool, exporter *httpmetrics.Exporter) ([]app.Service, error) {
	settings, err := ReadSettings(ctx, s.Process.Environment)
	if serveMetrics && exporter == nil {
		err = errors.Join(err, errNoExporter)
	}
	if err != nil {
		return nil, err
	}
	conn, err := connection.Connect(ctx, s, kubeconfigVariable)
	if err != nil {
		return nil, err
	}
	client, err := kube.NewClient(s, conn) // opens no connection: Serve does
	if err != nil {
		return nil, err
	}
	ctrl, err := Controller(s, client, settings.Controller, settings.Postgres, settings.ExperimentNamespace)
	if err != nil {
		return nil, err
	}
	probes, err := httphealth.NewService(s, settings.Probes, health.Readiness(ctrl.Synced()),
		health.Liveness(ctrl.Live()).Named("controller"))
	if err != nil {
		return nil, err
	}
	services := []app.Service{ctrl, probes}
	if serveMetrics {
		metrics, err := httpmetrics.NewService(s, settings.Metrics, exporter)
		if err != nil {
			return nil, err
		}
		services = append(services, metrics)
	}
	return services, nil
}

// Controller returns the Database controller as Init makes it, from its
// Settings and PostgreSQL's, whose Dial it sets to the App's s.Host.Dial:
// it owns the Databases' Secrets, drops their databases with its
// finalizer, and trusts the ScenarioAnnotation of the Databases in the
// namespace experiments ("" trusts none). It is for a test that runs the
// controller without Init, as the explorer's does
// (examples/databases/explore). It returns what kube.NewController
// returns.
func Controller(s *app.Setup, client *kube.Client, settings kube.Settings, pg Postgres, experiments string) (*kube.Controller, error) {
	kc, err := kubernetes.NewForConfig(client.Config())
	if err != nil {
		return nil, err
	}
	pg.Dial = s.Host.Dial
	r := Reconciler{Kube: kc, Postgres: pg, FieldManager: settings.Name}
	return kube.NewController(s, client, settings, Database, r,
		kube.Owns(corev1.SchemeGroupVersion.WithResource("secrets")),
		kube.Finalize(Finalizer, r.Finalize),
		kube.TrustScenario(ScenarioAnnotation, func(obj metav1.Object) bool {
			return experiments != "" && obj.GetNamespace() == experiments
		}),
	)
}

// ReadSettings sources the Settings from env, reporting every variable
// that is missing or wrong at once.
func ReadSettings(ctx context.Context, env app.Environment) (Settings, error) {
	v := func(name string) config.Value[string] { return config.Env(env, name) }
	d := kube.DefaultSettings()
	return config.Struct(func(r *config.Resolver) Settings {
		k := d
		// No .Default: the name, and the Lease's namespace and identity, are required.
		k.Name = r.Get(v("CONTROLLER_NAME").Validate(kube.CheckName))
		k.Workers = r.Get(v("CONTROLLER_WORKERS").Parse(strconv.Atoi).Default(d.Workers).Validate(kube.CheckWorkers))
		k.Namespace = r.Get(v("WATCH_NAMESPACE").Default("").Validate(optionalNamespace))
		k.LeaderElection.Namespace = r.Get(v("POD_NAMESPACE").Validate(kube.CheckNamespace))
		k.LeaderElection.Identity = r.Get(v("POD_NAME").Validate(kube.CheckIdentity))
		metrics := httpmetrics.DefaultSettings()
		metrics.Address = r.Get(v("METRICS_ADDRESS").Default(defaultMetricsAddress).Validate(httpmetrics.CheckAddress))
		return Settings{
			Controller: k,
			Postgres: Postgres{
				Host:     r.Get(v("POSTGRES_HOST").Default("127.0.0.1").Validate(checkHost)),
				Port:     r.Get(v("POSTGRES_PORT").Parse(parsePort).Default(5432)),
				User:     r.Get(v("POSTGRES_USER").Default("postgres")),
				Password: r.Get(v("POSTGRES_PASSWORD").Default("")),
				Database: r.Get(v("POSTGRES_DATABASE").Default("postgres")),
			},
			ExperimentNamespace: r.Get(v("EXPERIMENT_NAMESPACE").Default("").Validate(optionalNamespace)),
			Probes:              httphealth.Settings{Address: r.Get(v("PROBE_ADDRESS").Default(defaultProbeAddress).Validate(httphealth.CheckAddress))},
			Metrics:             metrics,
		}
	}).Read(ctx)
}

// optionalNamespace accepts "" or a namespace's name.
func optionalNamespace(ns string) error {
	if ns == "" {
		return nil
	}
	return kube.CheckNamespace(ns)
}

// checkHost accepts an IP address or a DNS name.
func checkHost(host string) error {
	if net.ParseIP(host) != nil {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(host); len(errs) > 0 {
		return fmt.Errorf("%q is neither an IP address nor a DNS name: %v", host, errs)
	}
	return nil
}

// parsePort reads a TCP port, 1 to 65535.
func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, errors.New("not a TCP port, 1 to 65535")
	}
	return uint16(n), nil
}
