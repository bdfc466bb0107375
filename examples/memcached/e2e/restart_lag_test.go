package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

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
