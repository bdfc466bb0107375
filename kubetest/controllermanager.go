package kubetest

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/server/healthz"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/controller-manager/pkg/clientbuilder"
	cmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	cmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
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
// With workloads, it also runs workloadControllers.
func startControllerManager(ctx context.Context, kubeconfigPath string, workloads bool) (*controllerManager, error) {
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
	controllerCtx, err := cmapp.CreateControllerContext(runCtx, completed, builder, builder)
	if err != nil {
		cancel()
		completed.EventBroadcaster.Shutdown()
		return nil, fmt.Errorf("kube-controller-manager controller context: %w", err)
	}
	// Every controller but the garbage collector is built by
	// kube-controller-manager's own constructors; the collector is built
	// here, so that it looks for new resources more often.
	descriptors := cmapp.NewControllerDescriptors()
	delete(descriptors, names.GarbageCollectorController)
	built, err := cmapp.BuildControllers(runCtx, controllerCtx, descriptors, nil, ignoreHealthChecks{})
	if err != nil {
		cancel()
		completed.EventBroadcaster.Shutdown()
		return nil, fmt.Errorf("build kube-controller-manager controllers: %w", err)
	}
	gc, err := newGarbageCollector(runCtx, controllerCtx)
	if err != nil {
		cancel()
		completed.EventBroadcaster.Shutdown()
		return nil, fmt.Errorf("build kube-controller-manager's garbage collector: %w", err)
	}
	if gc != nil {
		built = append(built, gc)
	}
	controllerCtx.InformerFactory.Start(runCtx.Done())
	controllerCtx.ObjectOrMetadataInformerFactory.Start(runCtx.Done())
	close(controllerCtx.InformersStarted)

	m := &controllerManager{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		defer completed.EventBroadcaster.Shutdown()
		defer controllerCtx.InformerFactory.Shutdown()
		if !cmapp.RunControllers(runCtx, controllerCtx, built, 0, controllerShutdownTimeout) {
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

// ignoreHealthChecks stands in for the controller manager's /healthz, which
// kubetest does not serve.
type ignoreHealthChecks struct{}

func (ignoreHealthChecks) AddHealthChecker(...healthz.HealthChecker) {}
