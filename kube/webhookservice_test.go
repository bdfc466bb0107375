package kube_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/loam-dev/loam/kube"
)

func TestWebhookServiceOf_publishes_not_ready_addresses(t *testing.T) {
	client := kube.WebhookClient{Service: &kube.WebhookService{Namespace: "memcached-system", Name: "memcached-webhooks"}}
	svc, err := kube.WebhookServiceOf(client, map[string]string{"app.kubernetes.io/name": "memcached-controller"}, intstr.FromString("webhooks"))
	require.NoError(t, err)
	require.Equal(t, "v1", svc.APIVersion)
	require.Equal(t, "Service", svc.Kind)
	require.Equal(t, "memcached-system", svc.Namespace)
	require.Equal(t, "memcached-webhooks", svc.Name)
	require.True(t, svc.Spec.PublishNotReadyAddresses, "the API server reaches a pod's webhooks before the pod is ready")
	require.Equal(t, []corev1.ServicePort{{Name: "webhooks", Port: 443, TargetPort: intstr.FromString("webhooks")}}, svc.Spec.Ports)

	client.Service.Port = 8443
	svc, err = kube.WebhookServiceOf(client, map[string]string{"app": "x"}, intstr.FromInt32(9443))
	require.NoError(t, err)
	require.Equal(t, int32(8443), svc.Spec.Ports[0].Port)
	require.Equal(t, intstr.FromInt32(9443), svc.Spec.Ports[0].TargetPort)
}

func TestWebhookServiceOf_mistakes(t *testing.T) {
	_, err := kube.WebhookServiceOf(kube.WebhookClient{URL: "https://127.0.0.1:9443"}, nil, intstr.FromString("Not_A_Port"))
	require.ErrorContains(t, err, `kube: the WebhookClient names the URL "https://127.0.0.1:9443": a Service is made only for a client that names one`)
	require.ErrorContains(t, err, "kube: the webhook Service's selector is empty")
	require.ErrorContains(t, err, "kube: the webhook Service's targetPort Not_A_Port: ")

	_, err = kube.WebhookServiceOf(kube.WebhookClient{Service: &kube.WebhookService{Name: "Bad"}}, map[string]string{"bad key!": "v"}, intstr.FromInt32(0))
	require.ErrorContains(t, err, "kube: WebhookClient.Service.Namespace is missing")
	require.ErrorContains(t, err, `kube: WebhookClient.Service.Name "Bad"`)
	require.ErrorContains(t, err, "kube: the webhook Service's selector bad key!=v: ")
	require.ErrorContains(t, err, "kube: the webhook Service's targetPort 0: ")
}
