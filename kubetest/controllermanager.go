package kubetest

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/healthz"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cacheddiscovery "k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	basecompatibility "k8s.io/component-base/compatibility"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	"k8s.io/controller-manager/pkg/clientbuilder"
	"k8s.io/controller-manager/pkg/informerfactory"
	cmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	cmconfig "k8s.io/kubernetes/cmd/kube-controller-manager/app/config"
	cmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
)

// controllers are the kube-controller-manager controllers a cluster runs:
// owner references cascade, and the aggregated ClusterRoles (view, edit,
// admin) get their rules.
const controllers = "garbagecollector,clusterrole-aggregation"

// workloadControllers are those WithWorkloadControllers adds: Deployments
// make ReplicaSets, ReplicaSets and StatefulSets make Pods, and every
// namespace gets the default ServiceAccount its Pods run as, without
// which the API server refuses a Pod of a namespace made by kubectl.
const workloadControllers = "deployment,replicaset,statefulset,serviceaccount"

// controllerShutdownTimeout bounds how long stop waits for the controllers.
const controllerShutdownTimeout = 10 * time.Second

// controllerManager is kube-controller-manager's controllers running in this
// process.
type controllerManager struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when every controller and informer stopped
	err    error         // read after done
}

// startControllerManager configures kube-controller-manager from its own
// flags and runs its controllers the way its Run does without leader
// election: controller context, controllers, informers, then the
// controllers' loops. What Run adds around that is left out on purpose: its
// HTTP server, its leader election, and its /configz entry, which is global
// to the process and would keep two clusters from running side by side.
//
// instance names the cluster among those of the process (its directory):
// the controller manager's informers are named after it.
//
// With workloads, it also runs workloadControllers.
func startControllerManager(ctx context.Context, kubeconfigPath, instance string, workloads bool) (*controllerManager, error) {
	registerDefaultGlobals()
	opts, err := cmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager options: %w", err)
	}
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	registry := basecompatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(basecompatibility.DefaultKubeComponent, effectiveVersion(), featureGate); err != nil {
		return nil, fmt.Errorf("register the controller manager's version and feature gates: %w", err)
	}
	opts.ComponentGlobalsRegistry = registry

	all, disabled, aliases := cmapp.KnownControllers(), cmapp.ControllersDisabledByDefault(), cmapp.ControllerAliases()
	named := opts.Flags(all, disabled, aliases)
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, set := range named.FlagSets {
		fs.AddFlagSet(set)
	}
	enabled := controllers
	if workloads {
		enabled += "," + workloadControllers
	}
	err = fs.Parse([]string{
		"--kubeconfig=" + kubeconfigPath,
		"--controllers=" + enabled,
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
	})
	if err != nil {
		return nil, fmt.Errorf("parse kube-controller-manager flags: %w", err)
	}
	if err := registry.Set(); err != nil {
		return nil, fmt.Errorf("apply the controller manager's version and feature gates: %w", err)
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	config, err := opts.Config(runCtx, all, disabled, aliases)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("configure kube-controller-manager: %w", err)
	}
	completed := config.Complete()

	builder := clientbuilder.SimpleControllerClientBuilder{ClientConfig: completed.Kubeconfig}
	cc, err := newControllerContext(runCtx, completed, builder, informerNamePrefix+instance)
	if err != nil {
		cancel()
		completed.EventBroadcaster.Shutdown()
		return nil, fmt.Errorf("kube-controller-manager controller context: %w", err)
	}
	// Until the controllers run, a failure releases what cc holds: its
	// informers' name, and its REST mapper's goroutine.
	abandon := func() {
		cancel()
		cc.stop()
		completed.EventBroadcaster.Shutdown()
	}
	// Every controller but the garbage collector is built by
	// kube-controller-manager's own constructors; the collector is built
	// here, so that it looks for new resources more often.
	descriptors := cmapp.NewControllerDescriptors()
	delete(descriptors, names.GarbageCollectorController)
	built, err := cmapp.BuildControllers(runCtx, cc.ControllerContext, descriptors, nil, ignoreHealthChecks{})
	if err != nil {
		abandon()
		return nil, fmt.Errorf("build kube-controller-manager controllers: %w", err)
	}
	gc, err := newGarbageCollector(runCtx, cc.ControllerContext)
	if err != nil {
		abandon()
		return nil, fmt.Errorf("build kube-controller-manager's garbage collector: %w", err)
	}
	if gc != nil {
		built = append(built, gc)
	}
	cc.InformerFactory.Start(runCtx.Done())
	cc.ObjectOrMetadataInformerFactory.Start(runCtx.Done())
	close(cc.InformersStarted)

	m := &controllerManager{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		defer completed.EventBroadcaster.Shutdown()
		defer cc.stop()
		if !cmapp.RunControllers(runCtx, cc.ControllerContext, built, 0, controllerShutdownTimeout) {
			m.err = fmt.Errorf("kube-controller-manager controllers did not stop within %s", controllerShutdownTimeout)
		}
	}()
	return m, nil
}

// stop ends the controllers and waits for them, or for ctx.
func (m *controllerManager) stop(ctx context.Context) error {
	m.cancel()
	select {
	case <-m.done:
		return m.err
	case <-ctx.Done():
		return fmt.Errorf("wait for kube-controller-manager to stop: %w", context.Cause(ctx))
	}
}

// informerNamePrefix begins the name of a controller manager's informers,
// which client-go reserves in the process for their metrics
// (cache.NewInformerName) until they stop: kube-controller-manager's own
// name, then the cluster's, so that each cluster's is its own.
const informerNamePrefix = "kube-controller-manager "

// controllerManagerName labels the controllers' metrics, as
// kube-controller-manager's own do.
const controllerManagerName = "kube-controller-manager"

// restMapperResetPeriod is how often the controllers' REST mapper forgets
// what discovery told it, as in kube-controller-manager.
const restMapperResetPeriod = 30 * time.Second

// controllerContext is the context kube-controller-manager's controllers
// are built with, and what stop must end with them.
type controllerContext struct {
	cmapp.ControllerContext
	metadataInformers metadatainformer.SharedInformerFactory
	cancelReset       context.CancelFunc
	resetDone         chan struct{} // closed when the REST mapper's resets ended
}

// newControllerContext makes what kube-controller-manager's
// CreateControllerContext makes, with one change: its typed informers are
// named name, where CreateControllerContext names them
// "kube-controller-manager". client-go reserves an informer name in the
// whole process until the informers shut down, so with that fixed name a
// second controller manager, of another cluster, failed to start while the
// first ran. Two more, because kubetest owns what it starts: it does not
// wait for the API server, which is ready before the controller manager
// starts; and the goroutine that resets the REST mapper is one stop waits
// for. ctx ends the controllers' informers and the garbage collector's
// graph.
func newControllerContext(ctx context.Context, completed *cmconfig.CompletedConfig, builder clientbuilder.ControllerClientBuilder, name string) (*controllerContext, error) {
	// Informers drop managedFields, as kube-controller-manager's do: no
	// controller reads them.
	trim := func(obj any) (any, error) {
		if accessor, err := meta.Accessor(obj); err == nil && accessor.GetManagedFields() != nil {
			accessor.SetManagedFields(nil)
		}
		return obj, nil
	}
	client, err := builder.Client("shared-informers")
	if err != nil {
		return nil, fmt.Errorf("client of the shared informers: %w", err)
	}
	metadataConfig, err := builder.Config("metadata-informers")
	if err != nil {
		return nil, fmt.Errorf("client config of the metadata informers: %w", err)
	}
	metadataClient, err := metadata.NewForConfig(metadataConfig)
	if err != nil {
		return nil, fmt.Errorf("client of the metadata informers: %w", err)
	}
	discoveryClient, err := builder.DiscoveryClient("controller-discovery")
	if err != nil {
		return nil, fmt.Errorf("discovery client of the controllers: %w", err)
	}
	informerName, err := cache.NewInformerName(name)
	if err != nil {
		return nil, fmt.Errorf("name the controllers' informers: %w", err)
	}

	resync := cmapp.ResyncPeriod(completed)
	typed := informers.NewSharedInformerFactoryWithOptions(client, resync(), informers.WithTransform(trim), informers.WithInformerName(informerName))
	metadataInformers := metadatainformer.NewSharedInformerFactoryWithOptions(metadataClient, resync(), metadatainformer.WithTransform(trim))
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cacheddiscovery.NewMemCacheClient(discoveryClient))
	cc := cmapp.ControllerContext{
		ClientBuilder:                   builder,
		InformerFactory:                 typed,
		ObjectOrMetadataInformerFactory: informerfactory.NewInformerFactory(typed, metadataInformers),
		ComponentConfig:                 completed.ComponentConfig,
		RESTMapper:                      mapper,
		InformersStarted:                make(chan struct{}),
		ResyncPeriod:                    resync,
		ControllerManagerMetrics:        controllersmetrics.NewControllerManagerMetrics(controllerManagerName),
	}
	gcConfig := cc.ComponentConfig.GarbageCollectorController
	if gcConfig.EnableGarbageCollector && cc.IsControllerEnabled(cmapp.NewControllerDescriptors()[names.GarbageCollectorController]) {
		ignored := make(map[schema.GroupResource]struct{}, len(gcConfig.GCIgnoredResources))
		for _, r := range gcConfig.GCIgnoredResources {
			ignored[schema.GroupResource{Group: r.Group, Resource: r.Resource}] = struct{}{}
		}
		cc.GraphBuilder = garbagecollector.NewDependencyGraphBuilder(ctx, metadataClient, mapper, ignored, cc.ObjectOrMetadataInformerFactory, cc.InformersStarted)
	}
	// The controllers' metric, running_managed_controllers, registered
	// once in the process: the clusters' controller managers share it.
	controllersmetrics.Register()

	resetCtx, cancelReset := context.WithCancel(ctx)
	resetDone := make(chan struct{})
	go func() {
		defer close(resetDone)
		wait.Until(mapper.Reset, restMapperResetPeriod, resetCtx.Done())
	}()
	return &controllerContext{ControllerContext: cc, metadataInformers: metadataInformers, cancelReset: cancelReset, resetDone: resetDone}, nil
}

// stop ends the REST mapper's resets, waits for the informers, which end
// with the context they were started with, and releases the informers'
// name.
func (c *controllerContext) stop() {
	c.cancelReset()
	<-c.resetDone
	c.InformerFactory.Shutdown() // releases the name too
	c.metadataInformers.Shutdown()
}

// ignoreHealthChecks stands in for the controller manager's /healthz, which
// kubetest does not serve.
type ignoreHealthChecks struct{}

func (ignoreHealthChecks) AddHealthChecker(...healthz.HealthChecker) {}
