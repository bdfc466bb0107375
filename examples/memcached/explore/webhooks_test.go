package explore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/examples/internal/freeaddr"
	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/explore"
	"github.com/loam-dev/loam/kubetest/wait"
)

// webhookImages is the image policy the explored operator's webhooks
// enforce: Init's defaults, memcached's own images, and v1alpha1's
// schema default, so both versions default alike.
var webhookImages = memcached.Images{Allowed: []string{"memcached:"}, DefaultImage: memcached.DefaultImage}

// TestExploreWebhooks explores the operator as Init runs it with
// WEBHOOKS=on (issue #47): each replica serves the conversion between
// v1alpha1 and v1beta1, the stored version, and the defaulting and
// validating webhooks, on one address that the CRD's conversion and the
// webhook configurations call, as deploy/ has the Service call them. A
// crash takes them down with the replica, as in a real cluster, and a
// fresh replica serves them again. The steps are written in v1alpha1 or
// v1beta1 (the explorer converts the spec as a user would, size to
// replicas), some while the operator is down, when the API server
// refuses them, failurePolicy Fail, until a fresh replica is back; every
// check reads v1alpha1, the version the Reconciler reconciles.
//
// The cluster is the test's own: the CRD's conversion and the webhook
// configurations are cluster-wide, and TestExplore's CRD serves
// v1alpha1 alone. It runs beside the package's other tests.
func TestExploreWebhooks(t *testing.T) {
	t.Parallel()
	ca := apptest.NewCA(t)
	cert := ca.ServerCert("127.0.0.1")
	address := freeaddr.Loopback(t)
	hooks := kube.WebhookClient{URL: "https://" + address, CABundle: ca.PEM()}
	// deploy/crd.yaml, as its golden test writes it, but for the
	// conversion's clientConfig: this URL and this CA.
	hub := memcached.MemcachedV1beta1
	hub.Conversion = &hooks
	crd, err := hub.CRD()
	require.NoError(t, err)
	c := kubetest.Start(t, kubetest.WithControllerManager(), kubetest.WithCRDs(crd))
	configureWebhooks(t, c, hooks)
	explore.Run(t, c, explore.Config[memcached.MemcachedSpec, memcached.MemcachedStatus]{
		Resource: memcached.Memcached,
		Versions: []explore.Version[memcached.MemcachedSpec]{explore.VersionOf(memcached.MemcachedV1beta1, toV1beta1)},
		Build:    webhooksBuild(address),
		Files:    map[string][]byte{"tls.crt": cert.CertPEM, "tls.key": cert.KeyPEM},
		// Every replica serves its webhooks at address, which the
		// CRD and the webhook configurations call: two kept sequences
		// replaying side by side would both listen there.
		OneReplicaAtATime: true,
		// The same checks as TestExplore's, reading v1alpha1.
		Invariants: []explore.Invariant{followsSpec, budgeted},
		Seed:       1, Steps: 6, Duration: *exploreDuration, KeptOnly: *exploreDuration == 0,
		// make test replays the one kept sequence, as TestExplore's
		// (issue #41).
		NoUnfaultedReplays: *exploreDuration == 0,
		NoFreshCreates:     *exploreDuration == 0,
		Quiet:              300 * time.Millisecond, Settle: 20 * time.Second,
		// Every fault but the kubelet's: this cluster makes no Pod.
		Faults:     explore.Faults{ScenarioAnnotation: memcached.ScenarioAnnotation, Down: true, Restarts: true, LostEvents: true},
		ConfigMaps: []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "flags"}, Data: map[string]string{"m": "64", "c": "512"}}},
		References: map[string]string{"configMap": "ConfigMap"},
		Volatile:   []string{"Deployment", "PodDisruptionBudget"},
	})
}

// toV1beta1 is a v1alpha1 spec as a user writes it in v1beta1: size is
// replicas. It is the test's own idea of the conversion, not the
// example's, which the versions' oracle checks against it.
func toV1beta1(s memcached.MemcachedSpec) (memcached.ReplicasSpec, error) {
	return memcached.ReplicasSpec{Replicas: s.Size, Image: s.Image, ConfigMap: s.ConfigMap}, nil
}

// webhooksBuild makes what Init makes with WEBHOOKS=on, in namespace ns
// alone: the Webhooks of memcached.Hooks on address, with the serving
// certificate of the replica's files, and the two controllers, which
// wait for them to listen, and for the API server to reach their
// conversion, before they list (kube.NewWebhooks).
func webhooksBuild(address string) explore.Build {
	return func(s *app.Setup, client *kube.Client, ns string) ([]app.Service, error) {
		settings := kube.DefaultWebhookSettings()
		settings.Address = address
		settings.TLS.CertFile, settings.TLS.KeyFile = "tls.crt", "tls.key"
		webhooks, err := kube.NewWebhooks(s, settings, memcached.Hooks(webhookImages)...)
		if err != nil {
			return nil, err
		}
		services, err := exploreBuild(s, client, ns)
		if err != nil {
			return nil, err
		}
		return append([]app.Service{webhooks}, services...), nil
	}
}

// configureWebhooks creates deploy/webhooks.yaml's configurations, as
// their golden test writes them, calling hooks, and waits until the API
// server calls the defaulting webhook: a second or so after its
// configuration is created, every write of a Memcached must meet it, or
// a v1beta1 one that names no image is stored without one. No replica
// serves it yet, so the API server, failurePolicy Fail, refuses a dry
// run once it calls it.
func configureWebhooks(t *testing.T, c *kubetest.Cluster, hooks kube.WebhookClient) {
	t.Helper()
	ctx := t.Context()
	validating, mutating, err := kube.WebhookConfigurations("memcached-operator", hooks, memcached.Hooks(webhookImages)...)
	require.NoError(t, err)
	kc, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	_, err = kc.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{})
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": memcached.MemcachedV1beta1.GVR().GroupVersion().String(), "kind": memcached.MemcachedV1beta1.Kind,
		"metadata": map[string]any{"name": "probe", "namespace": "default"},
		"spec":     map[string]any{"replicas": int64(1)},
	}}
	var lastErr error
	wait.For(t, 30*time.Second, func() bool {
		_, lastErr = dyn.Resource(memcached.MemcachedV1beta1.GVR()).Namespace("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return lastErr != nil && strings.Contains(lastErr.Error(), "failed calling webhook")
	}, "the API server never called the defaulting webhook", wait.LastSeen(func() string { return fmt.Sprint(lastErr) }))
}
