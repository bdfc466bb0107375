package kube_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/kube"
)

// The API server refuses a service path whose segments are not DNS
// subdomains (k8s.io/apiserver's ValidateWebhookService): such a prefix
// is refused at WebhookConfigurations, not when the configuration is
// applied.
func TestWebhookConfigurations_refuses_a_Service_Path_the_API_server_refuses(t *testing.T) {
	for _, path := range []string{"/Hooks", "/a//b", "/a/../b", "/a b", "/_x"} {
		wc := kube.WebhookClient{Service: &kube.WebhookService{Namespace: "ns", Name: "hooks", Path: path}}
		_, _, err := kube.WebhookConfigurations("memcached", wc, kube.Validate(Memcached, validateMemcached))
		require.ErrorContains(t, err, "WebhookClient.Service.Path", path)
	}
	for _, path := range []string{"", "/", "/hooks", "/hooks/", "/a.b/c-d"} {
		wc := kube.WebhookClient{Service: &kube.WebhookService{Namespace: "ns", Name: "hooks", Path: path}}
		_, _, err := kube.WebhookConfigurations("memcached", wc, kube.Validate(Memcached, validateMemcached))
		require.NoError(t, err, path)
	}
}

var nodeKind = kube.Kind[corev1.Node]{GVR: corev1.SchemeGroupVersion.WithResource("nodes"), Kind: "Node", Scope: kube.Cluster}

// A cluster-scoped Kind's objects are in no namespace: a NotIn on the
// App's namespace means nothing for Nodes, and for Namespaces it leaves
// the App's own Namespace object out of the review.
func TestWebhookConfigurations_a_cluster_scoped_Kind_leaves_no_namespace_out(t *testing.T) {
	wc := kube.WebhookClient{Service: &kube.WebhookService{Namespace: "memcached-system", Name: "hooks"}}
	v, _, err := kube.WebhookConfigurations("x", wc,
		kube.ValidateKind(nodeKind, func(context.Context, kube.Admission[corev1.Node]) ([]string, error) { return nil, nil }))
	require.NoError(t, err)
	require.Nil(t, v.Webhooks[0].NamespaceSelector)

	_, _, err = kube.WebhookConfigurations("x", wc,
		kube.ValidateKind(nodeKind, func(context.Context, kube.Admission[corev1.Node]) ([]string, error) { return nil, nil }, kube.IncludeOwnNamespace()))
	require.ErrorContains(t, err, "a cluster-scoped Kind's objects are in no namespace")
}

// A NamespaceSelector that selects the App's own namespace alone, which
// the Kind's webhook leaves out, makes a webhook that never fires.
func TestWebhookConfigurations_refuses_a_NamespaceSelector_of_the_App_s_namespace_alone(t *testing.T) {
	wc := kube.WebhookClient{Service: &kube.WebhookService{Namespace: "memcached-system", Name: "hooks"}}
	for _, sel := range []metav1.LabelSelector{
		{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "memcached-system"}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"memcached-system"}}}},
	} {
		_, _, err := kube.WebhookConfigurations("x", wc, kube.ValidateKind(podKind, validatePod, kube.NamespaceSelector(sel)))
		require.ErrorContains(t, err, "IncludeOwnNamespace", metav1.FormatLabelSelector(&sel))
	}
}
