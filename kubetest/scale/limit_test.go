package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/loam-dev/loam/kubetest"
)

// limitResult is what the limit phase measured for one N and W.
type limitResult struct {
	n, w int
	via  string
	// applied is the time until the last of the 2N applies returned;
	// seen is until the harness's watch had seen every status.
	applied, seen time.Duration
	// creating is how long the loader took to create the n objects
	// beforehand, untimed in the limit: with -scale.load=while the
	// Controller's convergence includes those creates.
	creating time.Duration
	cpu      time.Duration
	// others is the CPU other processes of the machine took meanwhile,
	// in cores.
	others   float64
	requests requestCounts
}

// statusApply is the body of a status apply, as loam's writer sends it:
// the object's names, its uid, and the status.
type statusApply struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   statusApplyMeta `json:"metadata"`
	Status     memcachedStatus `json:"status"`
}

type statusApplyMeta struct {
	Name      string    `json:"name"`
	Namespace string    `json:"namespace"`
	UID       types.UID `json:"uid"`
}

// The clients the limit's workers use, and whether informers watch.
const (
	viaClientGo = "client-go"
	viaLoam     = "loam"
	viaWatched  = "watched"
)

// applyBoth applies o's ConfigMap and then its status, as a reconcile
// does.
func applyBoth(ctx context.Context, cl clients, o owner) error {
	if _, err := cl.kube.CoreV1().ConfigMaps(o.namespace).Apply(ctx, configMap(o), metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply ConfigMap %s/%s: %w", o.namespace, o.name, err)
	}
	body, err := json.Marshal(statusApply{
		APIVersion: resource.Group + "/" + resource.Version,
		Kind:       resource.Kind,
		Metadata:   statusApplyMeta{Name: o.name, Namespace: o.namespace, UID: o.uid},
		Status:     readyStatus(memcachedStatus{}, o),
	})
	if err != nil {
		return err
	}
	_, err = cl.dynamic.Resource(resource.GVR()).Namespace(o.namespace).Patch(ctx, o.name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: fieldManager, Force: new(true)}, "status")
	if err != nil {
		return fmt.Errorf("apply the status of %s/%s: %w", o.namespace, o.name, err)
	}
	return nil
}

// measureLimit creates n objects in a namespace of their own, untimed,
// and times a ConfigMap apply and a status apply for each, issued by w
// workers of plain client-go: the writes a reconcile makes, as fast as the
// API server takes them. The harness's watch runs as it does during
// convergence, and the time until it has seen every status is the limit.
//
// via says which clients the workers use: plain client-go's (viaClientGo),
// or client-go's through a kube.Client's transport (viaLoam), which tells
// the cost of loam's transport apart; or plain client-go's while informers
// watch the objects and the ConfigMaps' metadata, as the Controller's do
// (viaWatched), which tells the cost of watching apart.
func measureLimit(t *testing.T, c *kubetest.Cluster, cfg config, n, w int, via string) limitResult {
	t.Helper()
	ctx := t.Context()
	cl := newClients(t, c.RESTConfig())
	ns := c.Namespace(t)
	creating := time.Now()
	owners, err := createObjects(ctx, cl, ns, n, cfg.loaders)
	require.NoError(t, err)
	res := limitResult{n: n, w: w, via: via, creating: time.Since(creating)}
	t.Cleanup(func() { require.NoError(t, deleteAll(context.WithoutCancel(ctx), cl, ns)) })
	watch := watchSettled(t, cl, ns, n)

	// Clients of the writers' own, on one connection, as a controller has.
	writer := newClients(t, ownConnection(c.RESTConfig()))
	switch via {
	case viaLoam:
		writer = loamClients(t, c.Connection())
	case viaWatched:
		watchLikeController(t, c, ns)
	}
	before, err := scrapeRequests(ctx, cl)
	require.NoError(t, err)
	stopProfile := profile(t, *flagProfile, fmt.Sprintf("limit-%d-%d-%s", n, w, via))
	cpu0, start := readCPU(), time.Now()
	err = parallel(ctx, n, w, func(ctx context.Context, i int) error { return applyBoth(ctx, writer, owners[i]) })
	applied := time.Since(start)
	require.NoError(t, err)
	waitCtx, cancel := context.WithTimeoutCause(ctx, time.Minute, fmt.Errorf("a minute after the last apply"))
	defer cancel()
	seenAt := watch.wait(waitCtx, t, "limit")
	cpu, others := cpu0.window()
	stopProfile()
	after, err := scrapeRequests(ctx, cl)
	require.NoError(t, err)
	res.applied, res.seen, res.cpu, res.others, res.requests = applied, seenAt.Sub(start), cpu, others, after.since(before)
	return res
}

// watchLikeController runs, until the test ends, the informers a
// Controller of the objects of ns that owns ConfigMaps runs: a dynamic
// informer of the objects and a metadata informer of the ConfigMaps, on a
// connection of their own, both dropping managedFields, and waits for
// their first lists. Their handlers do nothing: what they cost is the
// watch.
func watchLikeController(t *testing.T, c *kubetest.Cluster, ns string) {
	t.Helper()
	cfg := ownConnection(c.RESTConfig())
	d, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	m, err := metadata.NewForConfig(cfg)
	require.NoError(t, err)
	informers := []cache.SharedIndexInformer{
		dynamicinformer.NewFilteredDynamicInformer(d, resource.GVR(), ns, 0, cache.Indexers{}, nil).Informer(),
		metadatainformer.NewFilteredMetadataInformer(m, configMaps, ns, 0, cache.Indexers{}, nil).Informer(),
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	var wg sync.WaitGroup
	for _, inf := range informers {
		require.NoError(t, inf.SetTransform(func(obj any) (any, error) {
			if o, err := meta.Accessor(obj); err == nil {
				o.SetManagedFields(nil)
			}
			return obj, nil
		}))
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{})
		require.NoError(t, err)
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for _, inf := range informers {
		require.True(t, cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced))
	}
}
