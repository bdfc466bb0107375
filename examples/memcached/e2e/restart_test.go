package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	utilyaml "sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/examples/internal/freeaddr"
	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// webhookServicePath is the webhook Service the operator's deploy applies.
const webhookServicePath = "../deploy/webhooks-service.yaml"

// routed is an operator whose webhooks the API server calls as a cluster
// routes them: through kubetest's stand-in for deploy/webhooks-service.yaml,
// which forwards only to a pod that is one of the Service's endpoints.
type routed struct {
	*operator
	f     rbacObjects
	proxy *kubetest.ServiceProxy
	host  *apptest.Host
	vars  map[string]string
	betas dynamic.ResourceInterface
	dyn   *dynamic.DynamicClient
	// restConfig is the cluster's admin config, for clients of the test's own.
	restConfig *rest.Config
	created    int
	// listened, when not nil, is called each time the webhooks listen.
	listened func()
}

// newRouted starts a cluster of the test's own (the webhook
// configurations are cluster-wide), with the CRD storing v1beta1 and
// converting through the operator's webhooks, which the configurations
// and the CRD reach through the ServiceProxy; the operator isn't started.
func newRouted(t *testing.T) *routed {
	return newRoutedBehind(t, func(svc *corev1.Service, webhookAddress, probeAddress string) *kubetest.ServiceProxy {
		return kubetest.ServeService(t, svc, webhookAddress, kubetest.ReadyAt("http://"+probeAddress+"/readyz"))
	})
}

// newRoutedBehind is newRouted with the Service's stand-in that serve
// starts in front of deploy/webhooks-service.yaml.
func newRoutedBehind(t *testing.T, serve func(svc *corev1.Service, webhookAddress, probeAddress string) *kubetest.ServiceProxy) *routed {
	c := kubetest.Start(t)
	ca := apptest.NewCA(t)
	cert := ca.ServerCert("127.0.0.1")
	webhookAddress, probeAddress := freeaddr.Loopback(t), freeaddr.Loopback(t)
	b, err := os.ReadFile(webhookServicePath)
	require.NoError(t, err)
	var svc corev1.Service
	require.NoError(t, utilyaml.Unmarshal(b, &svc))
	proxy := serve(&svc, webhookAddress, probeAddress)
	client := kube.WebhookClient{URL: "https://" + proxy.Addr(), CABundle: ca.PEM()}
	hub := memcached.MemcachedV1beta1
	hub.Conversion = &client
	crd, err := hub.CRD()
	require.NoError(t, err)
	validating, mutating, err := kube.WebhookConfigurations("memcached-operator", client,
		memcached.Hooks(memcached.Images{Allowed: []string{"memcached:"}, DefaultImage: memcached.DefaultImage})...)
	require.NoError(t, err)
	f := readRBAC(t)
	o, kubeconfig := newOperatorOn(t, c, crd, f, f.clusterRole.Rules, f.role.Rules)
	_, err = o.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(t.Context(), mutating, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = o.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), validating, metav1.CreateOptions{})
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	h := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"kubeconfig": kubeconfig, "tls.crt": cert.CertPEM, "tls.key": cert.KeyPEM}))
	return &routed{operator: o, f: f, proxy: proxy, host: h, dyn: dyn, restConfig: c.RESTConfig(), betas: dyn.Resource(memcached.MemcachedV1beta1.GVR()).Namespace(o.ns),
		vars: map[string]string{
			"METRICS_ADDRESS": "127.0.0.1:0", "PROBE_ADDRESS": probeAddress,
			"WEBHOOKS": "on", "WEBHOOK_ADDRESS": webhookAddress,
			"WEBHOOK_CERT_FILE": h.Path("tls.crt"), "WEBHOOK_KEY_FILE": h.Path("tls.key"),
		}}
}

// start starts the operator as its main runs it, on a network whose
// listens on the webhooks' address begin listenDelay late, as a pod's
// webhooks may.
func (r *routed) start(t *testing.T, listenDelay time.Duration) {
	t.Helper()
	env := operatorEnv(t, r.f, r.ns, podName)
	env["MEMCACHED_KUBECONFIG"] = r.host.Path("kubeconfig")
	op := memcached.NewOperator("memcached-operator")
	network := slowListen{Network: app.OSHost().Network, address: r.vars["WEBHOOK_ADDRESS"], delay: listenDelay, listened: r.listened}
	r.app = apptest.Start(t, op.Init,
		apptest.WithHost(r.host), apptest.WithEnv(env), apptest.WithEnv(r.vars),
		apptest.WithAppOptions(app.WithHost(app.Host{Network: network, FS: r.host.FS()}), app.WithHostTelemetry(op.HostTelemetry)),
	)
}

// synced waits for the operator's readiness, its controllers' Synced,
// failing the test if the operator exits first.
func (r *routed) synced(t *testing.T) {
	t.Helper()
	ready := kubetest.ReadyAt("http://" + r.vars["PROBE_ADDRESS"] + "/readyz")
	wait.For(t, patience, func() bool { return ready(t.Context()) }, "the operator never became ready", r,
		wait.LastSeen(func() string { return fmt.Sprintf("refused=%d forwarded=%d", r.proxy.Refused(), r.proxy.Forwarded()) }))
}

// createBeta creates a v1beta1 Memcached, retrying while the API server
// does not reach the webhooks, and returns how long that took.
func (r *routed) createBeta(t *testing.T) time.Duration {
	t.Helper()
	r.created++
	m := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": memcached.MemcachedV1beta1.Group + "/" + memcached.MemcachedV1beta1.Version,
		"kind":       memcached.MemcachedV1beta1.Kind,
		"metadata":   map[string]any{"name": fmt.Sprintf("beta-%d", r.created), "namespace": r.ns},
		"spec":       map[string]any{"replicas": int64(1)},
	}}
	start := time.Now()
	var lastErr error
	wait.For(t, patience, func() bool {
		_, lastErr = r.betas.Create(t.Context(), m, metav1.CreateOptions{})
		return lastErr == nil
	}, "a v1beta1 Memcached was never admitted", r, wait.LastSeen(func() string { return fmt.Sprint(lastErr) }))
	return time.Since(start)
}

// stop stops the operator, which must exit 0 having failed no Service.
func (r *routed) stop(t *testing.T) {
	t.Helper()
	require.Equal(t, 0, r.app.Stop(), "a clean exit; refused=%d forwarded=%d; %s", r.proxy.Refused(), r.proxy.Forwarded(), r.Report())
	require.NotContains(t, r.app.Stderr(), `"service failed"`, r.Report())
}

// waited reports whether the controller named controller logged that it
// waited for the webhooks. HostTelemetry's records go to stderr, as JSON.
func (r *routed) waited(controller string) bool {
	for line := range strings.SplitSeq(r.app.Stderr(), "\n") {
		if strings.Contains(line, `"body":"waiting for the webhooks to serve"`) &&
			strings.Contains(line, `"loam.kube.controller.name":"`+controller+`"`) {
			return true
		}
	}
	return false
}

// The operator restarted with Memcacheds of both versions stored reaches
// Synced without exiting, three times in a row, and admits creates
// within kube.AwaitWebhooksBound of its start: its webhook Service
// publishes not-ready addresses, so the API server reaches the
// conversion webhook the controllers' lists need before the pod is ready.
func TestWebhooks_the_operator_restarts_with_Memcacheds_of_both_versions_stored(t *testing.T) {
	r := newRouted(t)
	r.start(t, 0)
	r.synced(t)
	r.create(t, "alpha", 2)
	r.createBeta(t)
	wait.For(t, patience, func() bool {
		_, a := r.deployment(t, "alpha")
		_, b := r.deployment(t, "beta-1")
		return a && b
	}, "the Memcacheds of both versions were never reconciled", r)
	r.stop(t)

	for i := range 3 {
		// As after a full restart, the API server's own included: a warm
		// cache holds the Memcacheds converted when they were written, and
		// its lists would need no webhook.
		r.coldCache(t)
		started := time.Now()
		r.start(t, 0)
		r.synced(t)
		admitted := r.createBeta(t)
		t.Logf("restart %d: ready after %v, a create admitted after %v more; refused=%d forwarded=%d",
			i+1, time.Since(started)-admitted, admitted, r.proxy.Refused(), r.proxy.Forwarded())
		require.Less(t, time.Since(started), kube.AwaitWebhooksBound, "creates admitted within the bound")
		r.stop(t)
	}
}

// The operator's webhooks listen 2 s late, behind the Service: both
// controllers, the Memcached controller and Budget with its cache of
// Memcacheds' metadata, wait for them before they list, without the
// operator saying so, and the operator reaches Synced without exiting.
func TestWebhooks_the_operator_waits_for_webhooks_that_listen_late(t *testing.T) {
	r := newRouted(t)
	r.start(t, 0)
	r.synced(t)
	r.create(t, "alpha", 1)
	r.createBeta(t)
	r.stop(t)

	r.start(t, 2*time.Second)
	r.synced(t)
	require.True(t, r.waited("memcached-controller"), "the Memcached controller waited: %s", r.Report())
	require.True(t, r.waited("memcached-controller-budget"), "Budget waited: %s", r.Report())
	r.createBeta(t)
	r.stop(t)
}

// slowListen is a Network whose listens on address begin delay late.
type slowListen struct {
	app.Network
	address  string
	delay    time.Duration
	listened func()
}

func (n slowListen) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	if address == n.address && n.delay > 0 {
		select {
		case <-time.After(n.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	l, err := n.Network.Listen(ctx, network, address)
	if err == nil && address == n.address && n.listened != nil {
		n.listened()
	}
	return l, err
}

// coldCache has the API server drop its caches of Memcacheds, as an API
// server that restarts does: it rebuilds a CRD's storage when the CRD's
// spec changes, here v1alpha1's deprecation. Its next lists of v1alpha1
// read etcd and convert through the webhook, where a warm cache holds
// objects converted when they were written and lists need no webhook.
func (r *routed) coldCache(t *testing.T) {
	t.Helper()
	crds := r.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd, err := crds.Get(t.Context(), memcached.Memcached.Plural+"."+memcached.Memcached.Group, metav1.GetOptions{})
	require.NoError(t, err)
	versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	require.NoError(t, err)
	wantDeprecated := false
	for _, v := range versions {
		if v := v.(map[string]any); v["name"] == memcached.Memcached.Version {
			deprecated, _ := v["deprecated"].(bool)
			wantDeprecated = !deprecated
			v["deprecated"] = wantDeprecated
		}
	}
	require.NoError(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
	_, err = crds.Update(t.Context(), crd, metav1.UpdateOptions{})
	require.NoError(t, err)
	// The API server rebuilds the storage when its informer of CRDs sees
	// the update, a moment later; until then the old storage, its cache
	// warm, serves, and an operator started now may list without the
	// webhook. Only the rebuilt storage words v1alpha1's deprecation as
	// the update set it, even on a Get of no object, which converts
	// nothing.
	// The operator, stopped, is no Watched here: it has exited.
	wait.For(t, patience, func() bool { return r.alphaDeprecated(t) == wantDeprecated },
		"the API server never rebuilt the Memcacheds' storage after the CRD's update")
}

// alphaDeprecated reports whether the API server's storage of Memcacheds
// now serving calls v1alpha1 deprecated: a Get of a Memcached that isn't
// there carries the deprecation's Warning header or doesn't.
func (r *routed) alphaDeprecated(t *testing.T) bool {
	t.Helper()
	var w warnings
	cfg := rest.CopyConfig(r.restConfig)
	cfg.WarningHandler = &w
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = dyn.Resource(memcached.Memcached.GVR()).Namespace(r.ns).Get(t.Context(), "no-such-memcached", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "a Get of no Memcached: %v", err)
	return w.deprecated()
}

// warnings is a rest.WarningHandler that keeps the Warning headers a
// client was answered with.
type warnings struct {
	mu   sync.Mutex
	text []string
}

// HandleWarningHeader keeps the warning's text.
func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

// deprecated reports whether a kept warning says a version is deprecated.
func (w *warnings) deprecated() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.text {
		if strings.Contains(t, "deprecated") {
			return true
		}
	}
	return false
}
