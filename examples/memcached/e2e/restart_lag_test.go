package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
)

// endpointLag is how long the Service's endpoints follow the pod late in
// TestWebhooks_the_first_check_retries_while_the_endpoints_lag.
const endpointLag = 3 * time.Second

// The Service's endpoints follow the pod endpointLag late, as a
// cluster's do, and the API server's cache of Memcacheds is cold, as
// after its own restart: the restarted operator's first checks fail on
// the conversion, each try is a WARN record on its stderr naming the
// controller and the try, and the operator reaches Synced without
// exiting. Without the retry it exits 1 on the first check's
// "corrupt object ... conversion webhook for ... failed".
func TestWebhooks_the_first_check_retries_while_the_endpoints_lag(t *testing.T) {
	var mu sync.Mutex
	var listenedAt time.Time
	r := newRoutedBehind(t, func(svc *corev1.Service, webhookAddress, _ string) *kubetest.ServiceProxy {
		lagging := svc.DeepCopy()
		lagging.Spec.PublishNotReadyAddresses = false
		return kubetest.ServeService(t, lagging, webhookAddress, func(context.Context) bool {
			mu.Lock()
			defer mu.Unlock()
			return !listenedAt.IsZero() && time.Since(listenedAt) > endpointLag
		})
	})
	r.listened = func() {
		mu.Lock()
		defer mu.Unlock()
		listenedAt = time.Now()
	}
	r.start(t, 0)
	r.synced(t)
	r.createBeta(t)
	r.create(t, "alpha", 1)
	r.stop(t)
	r.coldCache(t)

	refused := r.proxy.Refused()
	started := time.Now()
	r.start(t, 0)
	r.synced(t)
	t.Logf("ready after %v; refused=%d since the restart, forwarded=%d", time.Since(started), r.proxy.Refused()-refused, r.proxy.Forwarded())
	tries := 0
	for line := range strings.SplitSeq(r.app.Stderr(), "\n") {
		if strings.Contains(line, `"body":"the API server did not reach the webhooks' conversion: checking again"`) &&
			strings.Contains(line, `"loam.kube.controller.name":"memcached-controller"`) &&
			strings.Contains(line, `"loam.kube.webhooks.try":`) && strings.Contains(line, `conversion webhook for`) {
			tries++
		}
	}
	require.Positive(t, tries, "a WARN record per try: %s", r.Report())
	t.Logf("%d tries recorded; refused=%d forwarded=%d", tries, r.proxy.Refused(), r.proxy.Forwarded())
	r.createBeta(t)
	r.stop(t)
}

// The Service's one endpoint takes connections and never answers, as a
// black-holed pod does, and the API server's cache is cold: each first
// check hangs until the API server gives up on the webhook, is retried
// with a WARN record, and the operator exits 1 once
// kube.AwaitWebhooksBound has passed from its first check, give or take
// the first check's own hang.
func TestWebhooks_the_first_check_gives_up_on_a_hanging_webhook_within_the_bound(t *testing.T) {
	hang := make(chan struct{})
	var mu sync.Mutex
	holding := false
	r := newRoutedBehind(t, func(svc *corev1.Service, webhookAddress, _ string) *kubetest.ServiceProxy {
		held := svc.DeepCopy() // the proxy asks ready for every connection
		held.Spec.PublishNotReadyAddresses = false
		p := kubetest.ServeService(t, held, webhookAddress, func(context.Context) bool {
			mu.Lock()
			h := holding
			mu.Unlock()
			if h {
				<-hang // the connection is held, never answered
			}
			return true
		})
		t.Cleanup(func() { close(hang) }) // before the proxy's own cleanup
		return p
	})
	r.start(t, 0)
	r.synced(t)
	r.createBeta(t)
	r.stop(t)
	r.coldCache(t)
	mu.Lock()
	holding = true
	mu.Unlock()

	started := time.Now()
	r.start(t, 0)
	require.Equal(t, 1, r.wait(t, 3*kube.AwaitWebhooksBound), r.Report())
	elapsed := time.Since(started)
	tries := strings.Count(r.app.Stderr(), `"body":"the API server did not reach the webhooks' conversion: checking again"`)
	t.Logf("exit 1 after %v, %d tries recorded", elapsed, tries)
	require.Positive(t, tries, r.Report())
	for line := range strings.SplitSeq(r.app.Stderr(), "\n") {
		if strings.Contains(line, "still failing after retrying for") {
			t.Logf("%.600s", line)
		}
	}
	require.Contains(t, r.app.Stderr(), "still failing after retrying for", r.Report())
	// The bound, and the start's own seconds; a try still running at the
	// bound was let run on before, to about 43 s.
	require.Less(t, elapsed, kube.AwaitWebhooksBound+5*time.Second, "exit 1 within the bound")
}
