package kubetest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	cmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
)

// GarbageCollectorDiscoveryPeriod is how often the garbage collector of
// WithControllerManager asks discovery for resources it does not watch
// yet, such as those of a CRD installed after the cluster started.
// kube-controller-manager's own period is 30 seconds and can't be set; a
// cluster made for tests looks six times as often, so an owned object of a
// kind installed by Cluster.InstallCRDs is collected within
// GarbageCollectorCollectionBound of its owner's deletion.
const GarbageCollectorDiscoveryPeriod = 5 * time.Second

// GarbageCollectorCollectionBound is how long after its owner is deleted an
// owned object of a kind installed after the cluster started is deleted by
// the garbage collector, at most: GarbageCollectorDiscoveryPeriod, then
// 2 seconds for the discovery request, the list of the new kind and the
// delete (0.1 to 0.3 seconds on an idle machine). An object of a kind the
// collector already watches goes within those 2 seconds.
const GarbageCollectorCollectionBound = GarbageCollectorDiscoveryPeriod + 2*time.Second

// gcInitialSyncTimeout is how long the collector waits for its first
// informers to sync before it collects anyway: kube-controller-manager's.
const gcInitialSyncTimeout = 30 * time.Second

// gcClientName is the user agent of the collector's clients, as in
// kube-controller-manager.
const gcClientName = "generic-garbage-collector"

// garbageCollector is kube-controller-manager's garbage collector, built as
// kube-controller-manager builds it, and run with
// GarbageCollectorDiscoveryPeriod instead of its fixed 30 seconds.
type garbageCollector struct {
	gc        *garbagecollector.GarbageCollector
	discovery discovery.DiscoveryInterface
	workers   int
}

var _ cmapp.Controller = (*garbageCollector)(nil)

// newGarbageCollector builds the collector on the controller context's
// dependency graph builder, REST mapper and client builder, or returns nil
// when the configuration turns garbage collection off.
func newGarbageCollector(ctx context.Context, cc cmapp.ControllerContext) (*garbageCollector, error) {
	config := cc.ComponentConfig.GarbageCollectorController
	if !config.EnableGarbageCollector || cc.GraphBuilder == nil {
		return nil, nil
	}
	client, err := cc.NewClient(gcClientName)
	if err != nil {
		return nil, err
	}
	// A discovery client of its own: the collector resets the REST
	// mapper's when it finds new resources, and must not reset the one it
	// asks.
	disc, err := cc.ClientBuilder.DiscoveryClient(gcClientName)
	if err != nil {
		return nil, fmt.Errorf("garbage collector's discovery client: %w", err)
	}
	restConfig, err := cc.NewClientConfig(gcClientName)
	if err != nil {
		return nil, err
	}
	// Each deletion takes two requests, as kube-controller-manager says.
	restConfig.QPS *= 2
	metadataClient, err := metadata.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("garbage collector's metadata client: %w", err)
	}
	gc, err := garbagecollector.NewComposedGarbageCollector(ctx, client, metadataClient, cc.RESTMapper, cc.GraphBuilder)
	if err != nil {
		return nil, fmt.Errorf("garbage collector: %w", err)
	}
	return &garbageCollector{gc: gc, discovery: disc, workers: int(config.ConcurrentGCSyncs)}, nil
}

// Name returns kube-controller-manager's name for the collector.
func (*garbageCollector) Name() string { return names.GarbageCollectorController }

// Run collects garbage, and looks for new resources every
// GarbageCollectorDiscoveryPeriod, until ctx ends; it returns when both
// loops have.
func (g *garbageCollector) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { g.gc.Run(ctx, g.workers, gcInitialSyncTimeout) })
	wg.Go(func() { g.gc.Sync(ctx, g.discovery, GarbageCollectorDiscoveryPeriod) })
	wg.Wait()
}
