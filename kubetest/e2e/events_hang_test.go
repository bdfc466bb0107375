package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// An API server that accepts an Event's write and never answers holds it
// only until the write's deadline, 5 seconds: the write ends then, and is
// tried again; the reconciles, which record an Event each, never wait for
// it; and the occurrences never written are counted as dropped when the
// App stops. Without the deadline, the first write would hang until the
// App's stop, and no second would ever be sent.
func TestEvents_a_hanging_API_server_ends_each_write_at_its_deadline(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	newMemcached(t, admin.dynamic, r, ns, "m", 1)

	var (
		mu    sync.Mutex
		holds []time.Duration // how long each ended write was held
		sent  atomic.Int32    // the Event writes the proxy received
	)
	conn := startProxy(t, c, func(rw http.ResponseWriter, req *http.Request, next http.Handler) {
		if req.Method == http.MethodGet || !strings.HasPrefix(req.URL.Path, "/apis/events.k8s.io/") {
			next.ServeHTTP(rw, req)
			return
		}
		sent.Add(1)
		start := time.Now()
		<-req.Context().Done() // accepted, never answered
		mu.Lock()
		holds = append(holds, time.Since(start))
		mu.Unlock()
	})
	conn.Token = c.Connection().Token

	var calls atomic.Int32
	reconciler := kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(ctx context.Context, _ memcachedObject) (kube.Result[memcachedStatus], error) {
		calls.Add(1)
		// Requeued at once: a loop that waited for the write would stall.
		return kube.Result[memcachedStatus]{After: 10 * time.Millisecond}, kube.RecordEvent(ctx, kube.Normal, "Step", "a step")
	})
	a := startController(t, conn, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		return kube.NewController(s, client, eventsSettings(ns), r, reconciler)
	})
	// The second write can arrive before the proxy's handler of the
	// first has seen its request end (CI: holds empty, index out of
	// range): wait for both.
	wait.For(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return sent.Load() >= 2 && len(holds) > 0
	}, "the hung Event write never ended at its deadline to be tried again", a)
	mu.Lock()
	first := holds[0]
	mu.Unlock()
	require.GreaterOrEqual(t, first, 4*time.Second, "the write ended before its deadline: the proxy did not hold it")
	require.Less(t, first, 15*time.Second, "the write outlived its 5 s deadline")
	require.Greater(t, calls.Load(), int32(20), "the reconciles went on while the write hung: %d", calls.Load())

	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())
	by, err := a.Telemetry().TotalBy(context.Background(), "loam.kube.controller.events.dropped", "loam.kube.controller.events.drop_reason")
	require.NoError(t, err)
	require.Positive(t, by["write_failed"], "the occurrences never written are counted as dropped: %v", by)
}
