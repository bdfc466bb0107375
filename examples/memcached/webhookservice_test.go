package memcached

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/loam-dev/loam/kube"
)

// webhookServicePath is the webhook Service's YAML, checked in where the
// kustomization applies it.
const webhookServicePath = "deploy/webhooks-service.yaml"

// webhookServiceHeader says what deploy/webhooks-service.yaml is for.
const webhookServiceHeader = `# The Service in front of the operator's webhooks: the API server calls
# the conversion webhook (crd.yaml) and the admission webhooks
# (webhooks.yaml) through it, on 443, which reaches the operator's
# webhooks port, 9443. Both replicas serve them, leader or not: a
# conversion or an admission needs no Lease. It publishes not-ready
# addresses: the operator is ready once its caches sync, and they sync
# only through the conversion webhook, since crd.yaml stores v1beta1 and
# the controller reads v1alpha1; a Service of ready pods alone would
# never reach a restarted operator's webhooks. The operator's webhooks
# listen before its controllers list.
# Written by TestWebhookService (go test -run TestWebhookService -update).
`

// TestWebhookService is the golden test of the webhook Service, as
// kube.WebhookServiceOf writes it for the Service MemcachedV1beta1's
// Conversion names, in front of deployment.yaml's pods and their port
// webhooks. With -update, it rewrites the file.
func TestWebhookService(t *testing.T) {
	svc, err := kube.WebhookServiceOf(webhookService, map[string]string{"app.kubernetes.io/name": "memcached-controller"}, intstr.FromString("webhooks"))
	require.NoError(t, err)
	svc.Labels = map[string]string{"app.kubernetes.io/name": "memcached-controller"}
	goldenHeaded(t, "TestWebhookService", webhookServicePath, webhookServiceHeader, svc)
}
