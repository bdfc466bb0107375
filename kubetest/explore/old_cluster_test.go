package explore_test

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/explore"
)

// oldLabel marks the ConfigMaps of the old lists' cluster test: the
// namespace has others, its CA's.
const oldLabel = "explore.loam.dev/old-lists"

// oldListsCatchUp checks old lists (old.go) against the API server, with
// a real client-go informer started, as a fresh replica's is, after the
// write its lists are served old from: its first list is the state
// right before that write, and its watch, once let go, brings it every
// change since. With the step over, a fresh informer's first list is the newest
// state: the old one came from the fault.
func oldListsCatchUp(t *testing.T, c *kubetest.Cluster) {
	ctx := t.Context()
	ns := c.Namespace(t)
	admin, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	p := explore.NewOldListsProxy(1)
	conn := c.Proxy(t, p.Serve).Connection()
	transport := &http.Transport{TLSClientConfig: conn.TLS, ForceAttemptHTTP2: true}
	t.Cleanup(transport.CloseIdleConnections)
	through, err := kubernetes.NewForConfig(&rest.Config{Host: "https://" + conn.Server, BearerToken: c.RESTConfig().BearerToken, Transport: transport, QPS: -1})
	require.NoError(t, err)
	create := func(cs kubernetes.Interface, name string) {
		t.Helper()
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{oldLabel: "true"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	create(admin, "before")
	create(through, "written") // the write the lists are served old from
	create(admin, "after")
	all := []string{"after", "before", "written"}

	initial, names := informed(t, through, ns)
	require.Equal(t, []string{"before"}, initial, "the first list is the state right before the write")
	// The watch after it is held back, as a lagging cache's, until the
	// operator is quiet: the explorer then lets it go.
	require.Eventually(t, p.Release, 30*time.Second, 20*time.Millisecond, "the watch after the old list is held back")
	require.Eventually(t, func() bool { return slices.Equal(names(), all) }, 30*time.Second, 20*time.Millisecond,
		"the informer catches up by its watch")
	require.GreaterOrEqual(t, p.Old(), 1, "a list served old")

	p.Over()
	initial, _ = informed(t, through, ns)
	require.Equal(t, all, initial, "with the step over, the first list is the newest state")
	require.Zero(t, p.Old())
}

// informed starts an informer of the labelled ConfigMaps of ns with cs,
// waits for its first list, and returns the names that list held, and
// what returns the names its store holds.
func informed(t *testing.T, cs kubernetes.Interface, ns string) (initial []string, names func() []string) {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = oldLabel + "=true" }))
	informer := factory.Core().V1().ConfigMaps().Informer()
	var mu sync.Mutex
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{AddFunc: func(obj any, isInInitialList bool) {
		if isInInitialList {
			mu.Lock()
			defer mu.Unlock()
			initial = append(initial, obj.(*corev1.ConfigMap).Name)
		}
	}})
	require.NoError(t, err)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	factory.Start(stop)
	require.True(t, cache.WaitForCacheSync(stop, reg.HasSynced))
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(initial)
	return slices.Clone(initial), func() []string {
		var out []string
		for _, key := range informer.GetStore().ListKeys() {
			out = append(out, strings.TrimPrefix(key, ns+"/"))
		}
		slices.Sort(out)
		return out
	}
}
