package memcached

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/config"
	"github.com/loam-dev/loam/app/health"
	"github.com/loam-dev/loam/app/httphealth"
	"github.com/loam-dev/loam/app/httpmetrics"
	"github.com/loam-dev/loam/app/tlsfiles"
	"github.com/loam-dev/loam/examples/connection"
	"github.com/loam-dev/loam/examples/telemetry"
	"github.com/loam-dev/loam/kube"
)

// The environment variables Init reads, besides the two the kubelet sets
// for connection.InPod. The names are the operator's own choice: loam defines none.
const (
	// kubeconfigVariable names a kubeconfig to connect with instead of the
	// pod's service account, for running the operator outside a cluster.
	kubeconfigVariable = "MEMCACHED_KUBECONFIG"
	// probeAddressVariable is where the probes Service listens.
	probeAddressVariable = "PROBE_ADDRESS"
	// metricsAddressVariable is where the metrics Service listens.
	metricsAddressVariable = "METRICS_ADDRESS"
	// metricsCertFileVariable and metricsKeyFileVariable name the files of
	// /metrics' TLS certificate; unset, /metrics is plain HTTP.
	metricsCertFileVariable = "METRICS_CERT_FILE"
	metricsKeyFileVariable  = "METRICS_KEY_FILE"
	// metricsAuthVariable, on, lets only the scrapers the API server
	// authenticates and RBAC allows to get /metrics read it
	// (kube.MetricsAuth); it needs the certificate's files.
	metricsAuthVariable = "METRICS_AUTH"
	// webhooksVariable turns the webhooks on or off: "on" serves them,
	// "off", the default, serves none, so an operator whose cluster has
	// no webhook configurations runs as it did before it had any.
	webhooksVariable = "WEBHOOKS"
	// webhookAddressVariable is where the webhooks listen.
	webhookAddressVariable = "WEBHOOK_ADDRESS"
	// webhookCertFileVariable and webhookKeyFileVariable name the
	// serving certificate's PEM files.
	webhookCertFileVariable = "WEBHOOK_CERT_FILE"
	webhookKeyFileVariable  = "WEBHOOK_KEY_FILE"
	// allowedImagesVariable is the comma-separated prefixes of the images
	// a Memcached may run, Images.Allowed.
	allowedImagesVariable = "MEMCACHED_ALLOWED_IMAGES"
	// defaultImageVariable is the image of a Memcached that names none,
	// Images.DefaultImage.
	defaultImageVariable = "MEMCACHED_DEFAULT_IMAGE"
	// shardsVariable is the Memcached controller's Settings.Shards: 0, the
	// default, for one leader reconciling every Memcached, or a power of
	// two from 1 to 256 for that many shards, shared among the replicas.
	shardsVariable = "CONTROLLER_SHARDS"
)

// The webhook settings' defaults. The certificate's are where
// deploy/deployment.yaml mounts the Secret memcached-webhooks-tls, a
// kubernetes.io/tls Secret as cert-manager or webhookcerts writes it:
// the paths controller-runtime's webhook server reads by default, so a
// reader of kubebuilder's manifests finds them where they expect.
const (
	defaultWebhookCertFile = "/tmp/k8s-webhook-server/serving-certs/tls.crt"
	defaultWebhookKeyFile  = "/tmp/k8s-webhook-server/serving-certs/tls.key"
	// defaultAllowedImages allows memcached's own images on Docker Hub,
	// which v1alpha1's schema alone allowed.
	defaultAllowedImages = "memcached:"
)

// defaultProbeAddress is where the probes Service listens unless
// PROBE_ADDRESS says otherwise; deploy/deployment.yaml's probes name it.
const defaultProbeAddress = ":8081"

// defaultMetricsAddress is where the metrics Service listens unless
// METRICS_ADDRESS says otherwise; deploy/deployment.yaml's metrics port
// names it.
const defaultMetricsAddress = ":8080"

// UserAgent is the User-Agent of the Reconcilers' own requests: the
// Deployments and PodDisruptionBudgets they apply.
const UserAgent = "memcached-operator"

// ManagedByLabel is the label the Reconciler sets on each Deployment it
// applies, to the operator's name, UserAgent. Budget's Settings select
// Deployments by it, so the operator caches the Deployments it made
// rather than every Deployment of the cluster.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// managedBy selects the Deployments the Reconciler applied.
const managedBy = ManagedByLabel + "=" + UserAgent

// ScenarioAnnotation is the annotation that carries a failure scenario into
// a Memcached's reconciles, and on to its Deployment's.
const ScenarioAnnotation = "acme.example.com/failure-scenario"

// scenarioNamespace is the one namespace whose Memcacheds run experiments:
// deploy/admission.yaml lets only the chaos harness set the annotation
// there.
const scenarioNamespace = "staging"

// errNoExporter is what Operator.Init reports when the App's telemetry
// was not built by the Operator's HostTelemetry or Telemetry.
var errNoExporter = fmt.Errorf("memcached: Operator.Init: %w", telemetry.ErrNoExporter)

// Init is the operator's Init: it sources the settings and the
// Connection, builds the Client and a clientset on it, and returns the two
// controllers, Memcacheds' and Budget's, with a probes Service on
// PROBE_ADDRESS whose readiness is the Memcached controller's Synced, and
// a metrics Service on METRICS_ADDRESS that serves the exporter o's
// HostTelemetry made. With WEBHOOKS=on, it also returns the Webhooks of
// Hooks on WEBHOOK_ADDRESS, which both controllers wait for and readiness
// includes. With FAILURE_INJECTION_SWITCH, it also returns the
// kube.FaultSwitch of that ConfigMap in POD_NAMESPACE. A variable that is
// missing or wrong fails Init,
// naming every one, so the App exits 78; so does an App whose telemetry
// o's HostTelemetry (or Telemetry) did not build, reported with them, and
// a serving certificate that doesn't read.
func (o *Operator) Init(ctx context.Context, s *app.Setup) ([]app.Service, error) {
	return initOperator(ctx, s, true, o.Exporter())
}

// Init is the operator's Init for an App whose telemetry another builder
// makes, such as the in-memory Telemetry of apptest that a test reads: all
// that Operator.Init returns but the metrics Service, which would have no
// exporter to serve. It checks METRICS_ADDRESS all the same, so a value
// one fails is one the other fails. Command memcached runs Operator.Init.
func Init(ctx context.Context, s *app.Setup) ([]app.Service, error) {
	return initOperator(ctx, s, false, nil)
}

// initOperator is both Inits: with serveMetrics, the services include a
// metrics Service of exporter, and a nil exporter is one more mistake.
func initOperator(ctx context.Context, s *app.Setup, serveMetrics bool, exporter *httpmetrics.Exporter) ([]app.Service, error) {
	settings, err := readSettings(ctx, s)
	if serveMetrics && exporter == nil {
		err = errors.Join(err, errNoExporter)
	}
	if err != nil {
		return nil, err
	}
	// The webhooks are made before the Connection, and their mistakes
	// reported with its, so a missing certificate and a missing
	// kubeconfig show in one run.
	var webhooks *kube.Webhooks
	var webhooksErr error
	if settings.webhooksOn {
		webhooks, webhooksErr = kube.NewWebhooks(s, settings.webhooks, Hooks(settings.images)...)
	}
	conn, err := connection.Connect(ctx, s, kubeconfigVariable)
	if err := errors.Join(webhooksErr, err); err != nil {
		return nil, err
	}

	client, err := kube.NewClient(s, conn) // opens no connection: Serve does
	if err != nil {
		return nil, err
	}
	cfg := client.Config()
	// The Reconcilers' requests name the operator, so the API server's
	// audit log and metrics tell them from those of loam's informers,
	// Leases and status applies, which go with client-go's default.
	cfg.UserAgent = UserAgent
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	budgetSettings := settings.controller
	budgetSettings.Name = settings.controller.Name + "-budget" // its own Lease and field manager
	budgetSettings.LabelSelector = managedBy
	// Budget stays leader-elected: CONTROLLER_SHARDS shards the Memcached
	// controller only.
	budgetSettings.Shards = 0
	// The API server lists and watches Memcacheds of v1alpha1, and their
	// metadata for Budget, through the conversion webhook: both
	// controllers wait for the webhooks made on s to listen, and retry
	// their first check while the API server does not reach them yet,
	// without being told (kube.NewWebhooks).
	memcacheds, budgets, err := operator(s, client, settings.controller, budgetSettings, kc, scenarioNamespace)
	if err != nil {
		return nil, err
	}
	ready := []health.Monitor{memcacheds.Synced(), budgets.Synced()}
	var services []app.Service
	if webhooks != nil {
		// Readiness keeps both controllers' Synced, and adds the
		// webhooks: a rollout waits for a pod that answers reviews. The
		// webhook Service publishes not-ready addresses all the same,
		// since the caches sync only through the conversion webhook
		// (deploy/webhooks-service.yaml).
		ready = append(ready, webhooks)
		services = append(services, webhooks)
	}
	// Live fails while a shard's hand-off waits on a reconcile that
	// ignored its cancel: the kubelet restarts the pod, which frees the
	// Lease.
	probes, err := httphealth.NewService(s, settings.probes, health.Readiness(ready...),
		health.Liveness(memcacheds.Live(), budgets.Live()).Named("controllers"))
	if err != nil {
		return nil, err
	}
	services = append(services, memcacheds, budgets, probes)
	if settings.faultSwitch.Name != "" {
		sw, err := kube.NewFaultSwitch(s, client, settings.faultSwitch)
		if err != nil {
			return nil, err
		}
		services = append(services, sw)
	}
	if serveMetrics {
		var opts []httpmetrics.ServiceOption
		if settings.metricsAuth {
			auth, err := kube.MetricsAuth(s, client)
			if err != nil {
				return nil, err
			}
			opts = append(opts, httpmetrics.WithFilter(auth))
		}
		metrics, err := httpmetrics.NewService(s, settings.metrics, exporter, opts...)
		if err != nil {
			return nil, err
		}
		services = append(services, metrics)
	}
	return services, nil
}

// ConfigMaps is Kubernetes' own ConfigMap kind, which the Memcached
// controller watches and caches for the flags a Memcached names.
var ConfigMaps = kube.Kind[corev1.ConfigMap]{
	GVR:   corev1.SchemeGroupVersion.WithResource("configmaps"),
	Kind:  "ConfigMap",
	Scope: kube.Namespaced,
}

// configMapIndex names the Index of Memcacheds by the ConfigMap each
// names.
const configMapIndex = "configMap"

// configMapOf is the Index's keys: the ConfigMap m names, in m's
// namespace, or none.
func configMapOf(m Object) []kube.Key {
	if m.Spec.ConfigMap == "" {
		return nil
	}
	return []kube.Key{{Namespace: m.Namespace, Name: m.Spec.ConfigMap}}
}

// keepData is the ConfigMap cache's Transform: it keeps what the
// Reconciler reads, the data, and drops what it never reads, the binary
// data and the annotations, where kubectl apply keeps a second copy of the
// whole ConfigMap. The cache holds every ConfigMap of the namespaces the
// operator watches, not only those a Memcached names, since a Memcached
// may name one before it exists.
func keepData(cm *corev1.ConfigMap) {
	cm.BinaryData = nil
	cm.Annotations = nil
}

// operator returns the operator's two controllers: the Memcached
// controller, which trusts the scenario on a Memcached in the namespace
// experiments and has parts besides, and Budget's, which carries the
// scenario a Memcached's reconcile sets on its Deployment into the
// Deployment's reconciles.
//
// The Memcached controller watches ConfigMaps into a cache that its
// Reconciler reads, so reading a Memcached's flags sends no request, and
// keeps an Index of Memcacheds by the ConfigMap each names, so a
// ConfigMap's change, its creation included, reconciles exactly the
// Memcacheds that name it.
func operator(s *app.Setup, client *kube.Client, settings, budgetSettings kube.Settings, kc kubernetes.Interface, experiments string) (*kube.Controller, *kube.Controller, error) {
	configMaps := kube.NewCache(ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{Transform: keepData})
	// The Memcached controller's trust, which Budget's asks of each
	// Deployment's Memcached too.
	inExperiments := func(obj metav1.Object) bool { return obj.GetNamespace() == experiments }
	byConfigMap := kube.NewIndex(configMapIndex, configMapOf)
	memcacheds, err := kube.NewController(s, client, settings, Memcached, Reconciler{Kube: kc, ConfigMaps: configMaps},
		// Only the Deployments the Reconciler applied, which it labels.
		kube.Owns(appsv1.SchemeGroupVersion.WithResource("deployments"), kube.Selector{Labels: managedBy}),
		kube.Watches(configMaps, kube.ByIndex(byConfigMap)),
		kube.Indexes(byConfigMap),
		// A status write, the Controller's own included, asks for no
		// reconcile: the status follows from the spec and the Deployment,
		// whose changes still reconcile.
		kube.FilterUpdates(kube.SkipStatusOnly()),
		// An admission policy lets only the chaos harness set the annotation
		// in scenarioNamespace, which Init passes as experiments.
		kube.TrustScenario(ScenarioAnnotation, inExperiments),
	)
	if err != nil {
		return nil, nil, err
	}
	// The Memcacheds' metadata, so Budget trusts a Deployment's scenario
	// only while its Memcached carries the same one, names it, and is one
	// the Memcached controller trusts: anyone who can write Deployments,
	// but not Memcacheds, can't put Budget under a scenario.
	// The admission policy of deploy/admission.yaml keeps the annotation
	// on Deployments to the operator's ServiceAccount too.
	owners := kube.NewCache(MemcachedMetadata, kube.CacheOptions[metav1.PartialObjectMetadata]{})
	budgets, err := kube.NewKindController(s, client, budgetSettings, Deployments, Budget{Kube: kc},
		kube.Owns(policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")),
		// A Memcached's change, its annotation's included, reconciles the
		// Deployment of its name.
		kube.Watches(owners, kube.MapFunc(func(m metav1.Object) []kube.Key {
			return []kube.Key{{Namespace: m.GetNamespace(), Name: m.GetName()}}
		})),
		kube.TrustOwnerScenario(ScenarioAnnotation, owners, inExperiments),
	)
	if err != nil {
		return nil, nil, err
	}
	return memcacheds, budgets, nil
}

// Controllers returns the operator's two controllers, the Memcached
// controller and Budget's, as Init makes them, from their Settings and a
// clientset, trusting the ScenarioAnnotation of the Memcacheds in the
// namespace experiments, as Init does in staging: for a test that runs
// them without Init, as the explorer's does (examples/memcached/explore).
// It returns the first's error.
func Controllers(s *app.Setup, client *kube.Client, settings, budgetSettings kube.Settings, kc kubernetes.Interface, experiments string) (*kube.Controller, *kube.Controller, error) {
	return operator(s, client, settings, budgetSettings, kc, experiments)
}

// settings is everything Init sources besides the Connection.
type settings struct {
	controller kube.Settings
	probes     httphealth.Settings
	metrics    httpmetrics.Settings
	// metricsAuth is METRICS_AUTH: whether /metrics asks the API server
	// who may read it.
	metricsAuth bool
	// webhooksOn is WEBHOOKS: whether Init serves webhooks, as
	// webhooks and images say.
	webhooksOn bool
	webhooks   kube.WebhookSettings
	images     Images
	// faultSwitch is FAILURE_INJECTION_SWITCH: the ConfigMap of the
	// failure injection's kill switch, or "" for none.
	faultSwitch kube.FaultSwitchSettings
}

// readSettings sources the settings from the environment, reporting every
// variable that is missing or wrong at once. It checks the webhooks'
// variables whether WEBHOOKS is on or off, so turning them on never
// reveals a mistake that was there all along.
func readSettings(ctx context.Context, s *app.Setup) (settings, error) {
	env := func(name string) config.Value[string] { return config.Env(s.Process.Environment, name) }

	d := kube.DefaultSettings()
	return config.Struct(func(r *config.Resolver) settings {
		k := d
		// No .Default: the name, and the Lease's namespace and identity, are required.
		k.Name = r.Get(env("CONTROLLER_NAME").Validate(kube.CheckName))
		k.Workers = r.Get(env("CONTROLLER_WORKERS").Parse(strconv.Atoi).Default(d.Workers).Validate(kube.CheckWorkers))
		// The Memcached controller's alone: initOperator leaves Budget's
		// leader-elected.
		k.Shards = r.Get(env(shardsVariable).Parse(strconv.Atoi).Default(d.Shards).Validate(checkShards))
		// Unset, the operator watches every namespace.
		k.Namespaces = r.Get(env("WATCH_NAMESPACES").Parse(namespaceList).Default(nil))
		k.ReconcileTimeout = r.Get(env("CONTROLLER_RECONCILE_TIMEOUT").Parse(time.ParseDuration).Default(d.ReconcileTimeout).Validate(kube.CheckReconcileTimeout))
		// The pod's spec sets both from the downward API.
		k.LeaderElection.Namespace = r.Get(env("POD_NAMESPACE").Validate(kube.CheckNamespace))
		k.LeaderElection.Identity = r.Get(env("POD_NAME").Validate(kube.CheckIdentity))

		probes := httphealth.Settings{Address: r.Get(env(probeAddressVariable).Default(defaultProbeAddress).Validate(httphealth.CheckAddress))}
		metrics := httpmetrics.DefaultSettings()
		metrics.Address = r.Get(env(metricsAddressVariable).Default(defaultMetricsAddress).Validate(httpmetrics.CheckAddress))
		metricsTLS := tlsfiles.DefaultSettings()
		metricsTLS.CertFile = r.Get(env(metricsCertFileVariable).Default(""))
		metricsTLS.KeyFile = r.Get(env(metricsKeyFileVariable).Default(""))
		if metricsTLS.CertFile != "" || metricsTLS.KeyFile != "" {
			metrics.TLS = &metricsTLS
		}
		metricsAuth := r.Get(env(metricsAuthVariable).Parse(onOff).Default(false))

		w := kube.DefaultWebhookSettings()
		on := r.Get(env(webhooksVariable).Parse(onOff).Default(false))
		w.Address = r.Get(env(webhookAddressVariable).Default(kube.DefaultWebhookAddress).Validate(httphealth.CheckAddress))
		w.TLS.CertFile = r.Get(env(webhookCertFileVariable).Default(defaultWebhookCertFile))
		w.TLS.KeyFile = r.Get(env(webhookKeyFileVariable).Default(defaultWebhookKeyFile))
		images := Images{Allowed: r.Get(env(allowedImagesVariable).Default(defaultAllowedImages).Parse(prefixList))}
		// The default image is checked against the prefixes, so a
		// default the policy refuses fails Init rather than every
		// Memcached that names no image.
		images.DefaultImage = r.Get(env(defaultImageVariable).Default(DefaultImage).Validate(func(image string) error {
			return Images{Allowed: images.Allowed, DefaultImage: image}.Check()
		}))
		faultSwitch := kube.FaultSwitchSettings{
			Namespace: k.LeaderElection.Namespace,
			Name:      r.Get(env(faultSwitchVariable).Default("").Validate(checkConfigMapName)),
		}
		return settings{controller: k, probes: probes, metrics: metrics, metricsAuth: metricsAuth, webhooksOn: on, webhooks: w, images: images, faultSwitch: faultSwitch}
	}).Read(ctx)
}

// checkConfigMapName checks FAILURE_INJECTION_SWITCH: "" for none, or a
// ConfigMap's name.
func checkConfigMapName(name string) error {
	if name == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%q is not a ConfigMap's name: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// checkShards checks CONTROLLER_SHARDS as Settings.Shards is checked: 0,
// for no sharding, or what kube.CheckShards allows.
func checkShards(shards int) error {
	if shards == 0 {
		return nil
	}
	return kube.CheckShards(shards)
}

// onOff parses WEBHOOKS: on or off, and nothing else, so a typo such as
// "yes" fails rather than silently meaning one of them.
func onOff(s string) (bool, error) {
	switch s {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is neither on nor off", s)
}

// prefixList parses MEMCACHED_ALLOWED_IMAGES, comma-separated image
// prefixes such as "memcached:,registry.example.com/cache/", each
// trimmed. An empty prefix is a mistake, naming each by its index, since
// it would allow every image while it looks like a typo: the variable
// always restricts the images, and unset, to defaultAllowedImages.
func prefixList(s string) ([]string, error) {
	prefixes := strings.Split(s, ",")
	var empty []string
	for i, p := range prefixes {
		prefixes[i] = strings.TrimSpace(p)
		if prefixes[i] == "" {
			empty = append(empty, fmt.Sprintf("[%d]", i))
		}
	}
	if len(empty) > 0 {
		return nil, fmt.Errorf("%q: empty prefixes at %s", prefixes, strings.Join(empty, ", "))
	}
	return prefixes, nil
}

// namespaceList parses WATCH_NAMESPACES, a comma-separated set of
// namespaces such as "team-a,team-b", and checks it as Settings.Namespaces
// is checked.
func namespaceList(s string) ([]string, error) {
	namespaces := strings.Split(s, ",")
	for i, ns := range namespaces {
		namespaces[i] = strings.TrimSpace(ns)
	}
	if err := kube.CheckNamespaces(namespaces); err != nil {
		return nil, err
	}
	return namespaces, nil
}
