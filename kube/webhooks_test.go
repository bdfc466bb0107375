package kube_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	otellog "go.opentelemetry.io/otel/log"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/tlsfiles"
	"github.com/loam-dev/loam/domain/jsonpatch"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kube/webhookcel"
)

var podKind = kube.Kind[corev1.Pod]{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Scope: kube.Namespaced}

var (
	deploymentScale = kube.SubResource[autoscalingv1.Scale]{
		GVR: appsv1.SchemeGroupVersion.WithResource("deployments"), Name: "scale",
		Kind: autoscalingv1.SchemeGroupVersion.WithKind("Scale"), Scope: kube.Namespaced,
	}
	podExec = kube.SubResource[corev1.PodExecOptions]{
		GVR: corev1.SchemeGroupVersion.WithResource("pods"), Name: "exec",
		Kind: corev1.SchemeGroupVersion.WithKind("PodExecOptions"), Scope: kube.Namespaced,
	}
)

func validateMemcached(context.Context, kube.Admission[memcachedObject]) ([]string, error) {
	return nil, nil
}

func defaultMemcached(context.Context, kube.Admission[memcachedObject], *memcachedObject) ([]string, error) {
	return nil, nil
}

func validatePod(context.Context, kube.Admission[corev1.Pod]) ([]string, error) { return nil, nil }

func defaultPod(context.Context, kube.Admission[corev1.Pod], *corev1.Pod) ([]string, error) {
	return nil, nil
}

// webhookGolden compares got, as YAML, with testdata/name, or rewrites it with
// -update.
func webhookGolden(t *testing.T, name string, got any) {
	t.Helper()
	out, err := yaml.Marshal(got)
	require.NoError(t, err)
	path := "testdata/" + name
	if *update {
		require.NoError(t, os.WriteFile(path, out, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -run %s -update to write it", t.Name())
	require.Equal(t, string(want), string(out), "%s is out of date: run go test -run %s -update", path, t.Name())
}

func TestWebhookConfigurations_golden(t *testing.T) {
	hooks := []kube.Hook{
		kube.Mutate(Memcached, defaultMemcached),
		kube.Validate(Memcached, validateMemcached, kube.Operations(kube.Create, kube.Update, kube.Delete)),
		kube.MutateKind(podKind, defaultPod,
			kube.FailurePolicy(kube.Ignore), kube.TimeoutSeconds(5),
			kube.ObjectSelector(metav1.LabelSelector{MatchLabels: map[string]string{"app": "memcached"}})),
		kube.ValidateKind(podKind, validatePod,
			kube.NamespaceSelector(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system"}},
			}}),
			kube.SubResources("status"), kube.SideEffects(kube.SideEffectsNoneOnDryRun), kube.MatchPolicy(kube.Exact),
			webhookcel.MatchConditions(kube.MatchCondition{Name: "not-the-operator", Expression: "request.userInfo.username != 'system:serviceaccount:memcached-system:memcached-operator'"})),
		kube.MutateSubResource(deploymentScale, func(context.Context, kube.Admission[autoscalingv1.Scale], *autoscalingv1.Scale) ([]string, error) {
			return nil, nil
		},
			kube.Operations(kube.Update), kube.ReinvocationPolicy(kube.IfNeeded)),
		kube.ValidateSubResource(podExec, func(context.Context, kube.Admission[corev1.PodExecOptions]) ([]string, error) { return nil, nil },
			kube.Operations(kube.Connect), kube.IncludeOwnNamespace()),
	}
	t.Run("Service", func(t *testing.T) {
		client := kube.WebhookClient{Service: &kube.WebhookService{Namespace: "memcached-system", Name: "memcached-webhooks"}}
		v, m, err := kube.WebhookConfigurations("memcached-operator", client, hooks...)
		require.NoError(t, err)
		webhookGolden(t, "webhooks-validating.yaml", v)
		webhookGolden(t, "webhooks-mutating.yaml", m)
	})
	t.Run("URL", func(t *testing.T) {
		client := kube.WebhookClient{URL: "https://127.0.0.1:9443/hooks", CABundle: []byte("PEM")}
		v, m, err := kube.WebhookConfigurations("memcached-operator", client, hooks[1])
		require.NoError(t, err)
		require.Nil(t, m, "no mutating hook, no configuration")
		webhookGolden(t, "webhooks-url.yaml", v)
	})
}

func TestHook_Path(t *testing.T) {
	for _, c := range []struct {
		hook kube.Hook
		want string
	}{
		{kube.Validate(Memcached, validateMemcached), "/validate/cache.example.com/v1alpha1/memcacheds"},
		{kube.Mutate(Memcached, defaultMemcached), "/mutate/cache.example.com/v1alpha1/memcacheds"},
		{kube.ValidateKind(podKind, validatePod), "/validate/core/v1/pods"},
		{kube.MutateKind(podKind, defaultPod), "/mutate/core/v1/pods"},
		{kube.Hook{}, ""},
	} {
		require.Equal(t, c.want, c.hook.Path(), "%v", c.hook)
	}
}

func TestWebhookConfigurations_names_every_mistake_at_once(t *testing.T) {
	bad := Memcached
	bad.Plural = ""
	bad.Scope = "Everywhere"
	_, _, err := kube.WebhookConfigurations("Not A Name", kube.WebhookClient{},
		kube.Hook{},
		kube.Validate[MemcachedSpec, MemcachedStatus](Memcached, nil),
		kube.Validate(bad, validateMemcached),
		kube.Mutate(Memcached, defaultMemcached, kube.Operations(kube.Delete, "PATCH"), kube.Operations()),
		kube.Validate(Memcached, validateMemcached,
			kube.FailurePolicy("Sometimes"), kube.TimeoutSeconds(0), kube.TimeoutSeconds(31),
			kube.Operations(kube.Create, kube.Create), kube.HookOption{},
			kube.ObjectSelector(metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}}),
			kube.NamespaceSelector(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}})),
		kube.ValidateKind(kube.Kind[corev1.Pod]{}, validatePod),
		kube.MutateKind[corev1.Pod](podKind, nil),
	)
	require.Error(t, err)
	for _, want := range []string{
		`kube: the webhook configurations' name "Not A Name": `,
		"kube: WebhookClient names neither a Service nor a URL",
		"kube: Hook 0, Hook{}: the zero Hook",
		"kube: Hook 1, Validate(memcacheds.v1alpha1.cache.example.com): the function is nil",
		"kube: Hook 2, Validate(Memcached): Resource Memcached: the Plural is missing",
		`kube: Hook 2, Validate(Memcached): Resource Memcached: the Scope "Everywhere" is neither Namespaced nor Cluster`,
		`kube: Hook 3, Mutate(memcacheds.v1alpha1.cache.example.com): option 0, Operations(["DELETE" "PATCH"]): a Mutate may not take DELETE`,
		`option 0, Operations(["DELETE" "PATCH"]): "PATCH" is not an operation`,
		"option 1, Operations([]): a Hook takes one of each option, and this is a second",
		"option 1, Operations([]): no operation",
		"kube: Hook 4, Validate(memcacheds.v1alpha1.cache.example.com): Hook 1, Validate(memcacheds.v1alpha1.cache.example.com), is served at /validate/cache.example.com/v1alpha1/memcacheds too: one Hook a path",
		`option 0, FailurePolicy("Sometimes"): the policy is neither Fail nor Ignore`,
		"option 1, TimeoutSeconds(0): the timeout is not from 1 to 30 seconds",
		"option 2, TimeoutSeconds(31): a Hook takes one of each option, and this is a second",
		"option 2, TimeoutSeconds(31): the timeout is not from 1 to 30 seconds",
		`option 3, Operations(["CREATE" "CREATE"]): CREATE is named twice`,
		"option 4, HookOption{}: the zero HookOption",
		`option 5, ObjectSelector(<error>): key: Invalid value: "a b"`,
		`option 6, NamespaceSelector(<error>): "Near" is not a valid label selector operator`,
		"kube: Hook 5, ValidateKind(kube.Kind[k8s.io/api/core/v1.Pod]): Kind kube.Kind[k8s.io/api/core/v1.Pod]: the GVR has no Version", // named by its Go type
		"kube: Hook 6, MutateKind(pods.v1.core): the function is nil",
	} {
		require.Contains(t, err.Error(), want)
	}
	require.NotContains(t, err.Error(), "webhook's name", "a bad Resource's or Kind's webhook name is not named again")
}

func TestWebhookConfigurations_names_every_mistake_in_subresources_and_the_new_options(t *testing.T) {
	_, _, err := kube.WebhookConfigurations("x", kube.WebhookClient{URL: "https://example.com", OwnNamespace: "Not_A_Namespace"},
		kube.ValidateKind(podKind, validatePod, kube.Operations(kube.Connect), kube.SubResources("exec"),
			webhookcel.MatchConditions(kube.MatchCondition{Name: "n", Expression: "object.metadata.name"})),
		kube.Validate(Memcached, validateMemcached, kube.ReinvocationPolicy(kube.IfNeeded), kube.IncludeOwnNamespace()),
		kube.ValidateSubResource(kube.SubResource[corev1.PodExecOptions]{}, func(context.Context, kube.Admission[corev1.PodExecOptions]) ([]string, error) { return nil, nil }),
		kube.MutateSubResource(podExec, func(context.Context, kube.Admission[corev1.PodExecOptions], *corev1.PodExecOptions) ([]string, error) {
			return nil, nil
		}, kube.Operations(kube.Connect)),
	)
	require.Error(t, err)
	for _, want := range []string{
		`kube: WebhookClient.OwnNamespace "Not_A_Namespace": `,
		`kube: Hook 0, ValidateKind(pods.v1.core): option 0, Operations(["CONNECT"]): CONNECT is made to a subresource alone, such as pods/exec: admit it with ValidateSubResource, or it never fires`,
		`option 1, SubResources(["exec"]): the requests to pods/exec carry no Pod, which this Hook decodes: admit them with kube.ValidateSubResource or MutateSubResource`,
		`option 2, MatchConditions(["n"]): condition 0 (n): must evaluate to bool but got dyn`,
		`kube: Hook 1, Validate(memcacheds.v1alpha1.cache.example.com): option 0, ReinvocationPolicy("IfNeeded"): only a Mutate is reinvoked`,
		`option 1, IncludeOwnNamespace(): only a Kind's webhook leaves the App's own namespace out`,
		"kube: Hook 2, ValidateSubResource(/..core): SubResource /..core: the GVR has no Version",
		"the Name is missing",
		"has no Version or no Kind",
		`the Scope "" is neither Namespaced nor Cluster`,
		`kube: Hook 3, MutateSubResource(pods/exec.v1.core): option 0, Operations(["CONNECT"]): a Mutate may not take CONNECT`,
	} {
		require.Contains(t, err.Error(), want)
	}
}

func TestValidateSubResource_decodes_the_subresource_s_own_object(t *testing.T) {
	seen := make(chan kube.Admission[corev1.PodExecOptions], 1)
	exec := kube.ValidateSubResource(podExec, func(_ context.Context, a kube.Admission[corev1.PodExecOptions]) ([]string, error) {
		seen <- a
		return nil, fmt.Errorf("no exec into %s/%s", a.Namespace, a.Name)
	}, kube.Operations(kube.Connect))
	require.Equal(t, "/validate/core/v1/pods/exec", exec.Path())
	w, client, _ := servedWebhooks(t, exec)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, SubResource: "exec",
			Namespace: "ns", Name: "web", Operation: admissionv1.Connect,
			Object: runtime.RawExtension{Raw: []byte(`{"kind":"PodExecOptions","apiVersion":"v1","stdout":true,"command":["ls"]}`)},
		},
	})
	require.NoError(t, err)
	res, err := client.Post("https://"+w.Addr().String()+exec.Path(), "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	var got admissionv1.AdmissionReview
	require.NoError(t, json.NewDecoder(res.Body).Decode(&got))
	require.False(t, got.Response.Allowed)
	require.Equal(t, "no exec into ns/web", got.Response.Result.Message)
	a := <-seen
	require.Equal(t, kube.Connect, a.Operation)
	require.Equal(t, "exec", a.SubResource)
	require.Equal(t, []string{"ls"}, a.Object.Command)
	require.True(t, a.Object.Stdout)
}

func TestWebhookConfigurations_takes_a_valid_Hook_list_only(t *testing.T) {
	client := kube.WebhookClient{URL: "https://example.com"}
	v, m, err := kube.WebhookConfigurations("x", client)
	require.NoError(t, err)
	require.Nil(t, v)
	require.Nil(t, m)
	_, _, err = kube.WebhookConfigurations("x", client, kube.Validate(Memcached, validateMemcached), kube.Validate(Memcached, validateMemcached))
	require.ErrorContains(t, err, "one Hook a path")
	require.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "the second Hook alone is named: %v", err)
}

// servedWebhooks serves hooks with NewWebhooks on a test Host, with a
// certificate from a test CA, until the test ends, and returns the Host
// and the client that trusts the CA.
func servedWebhooks(t *testing.T, hooks ...kube.Hook) (*kube.Webhooks, *http.Client, *apptest.Telemetry) {
	t.Helper()
	w, host, ca, tel := newWebhooks(t, hooks...)

	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- w.Serve(ctx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-served)
		healthy, err := w.Healthy(context.Background())
		require.NoError(t, err)
		require.False(t, healthy, "unhealthy once Serve returned")
	})
	select {
	case <-w.Ready():
	case err := <-served:
		t.Fatalf("Serve returned before it listened: %v", err)
	}
	healthy, err := w.Healthy(t.Context())
	require.NoError(t, err)
	require.True(t, healthy)

	client := &http.Client{Transport: &http.Transport{
		DialContext:     host.Dial,
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
	}}
	t.Cleanup(client.CloseIdleConnections)
	return w, client, tel
}

// newWebhooks returns Webhooks of hooks on a test Host, not serving yet,
// with a certificate from a test CA, and the Host, the CA and the
// Telemetry they report through.
func newWebhooks(t *testing.T, hooks ...kube.Hook) (*kube.Webhooks, *apptest.Host, *apptest.CA, *apptest.Telemetry) {
	t.Helper()
	ca := apptest.NewCA(t)
	cert := ca.ServerCert("127.0.0.1")
	host := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"tls/tls.crt": cert.CertPEM, "tls/tls.key": cert.KeyPEM}))
	tel := apptest.NewTelemetry()
	settings := kube.DefaultWebhookSettings()
	settings.Address = "127.0.0.1:0"
	settings.TLS.CertFile, settings.TLS.KeyFile = host.Path("tls/tls.crt"), host.Path("tls/tls.key")
	w, err := kube.NewWebhooks(&app.Setup{Host: host.Host(), Telemetry: tel.Telemetry}, settings, hooks...)
	require.NoError(t, err)
	var _ app.Service = w
	return w, host, ca, tel
}

// review POSTs an AdmissionReview of obj to path and returns the response.
func review(t *testing.T, w *kube.Webhooks, client *http.Client, path string, op admissionv1.Operation, obj string) *admissionv1.AdmissionResponse {
	t.Helper()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "7d3c2f1e",
			Kind:      metav1.GroupVersionKind{Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached"},
			Resource:  metav1.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"},
			Namespace: "ns", Name: "mc", Operation: op,
			Object: runtime.RawExtension{Raw: []byte(obj)},
		},
	})
	require.NoError(t, err)
	res, err := client.Post("https://"+w.Addr().String()+path+"?timeout=10s", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", out)
	var got admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(out, &got))
	require.NotNil(t, got.Response, "%s", out)
	require.Equal(t, types.UID("7d3c2f1e"), got.Response.UID)
	return got.Response
}

func TestNewWebhooks_serves_typed_hooks_over_HTTPS(t *testing.T) {
	validate := kube.Validate(Memcached, func(_ context.Context, a kube.Admission[memcachedObject]) ([]string, error) {
		if a.Object.Spec.Size > 3 {
			return []string{"big"}, fmt.Errorf("%s/%s: spec.size %d is above 3", a.Namespace, a.Name, a.Object.Spec.Size)
		}
		return nil, nil
	})
	mutate := kube.Mutate(Memcached, func(_ context.Context, _ kube.Admission[memcachedObject], m *memcachedObject) ([]string, error) {
		if m.Spec.Image == "" {
			m.Spec.Image = "memcached:1.6"
		}
		return nil, nil
	})
	w, client, tel := servedWebhooks(t, validate, mutate)

	t.Run("denied", func(t *testing.T) {
		res := review(t, w, client, validate.Path(), admissionv1.Create, `{"metadata":{"name":"mc","namespace":"ns"},"spec":{"size":5,"image":"x"}}`)
		require.False(t, res.Allowed)
		require.NotNil(t, res.Result)
		require.Equal(t, "ns/mc: spec.size 5 is above 3", res.Result.Message)
		require.Equal(t, []string{"big"}, res.Warnings)
	})
	t.Run("allowed", func(t *testing.T) {
		res := review(t, w, client, validate.Path(), admissionv1.Create, `{"metadata":{"name":"mc","namespace":"ns"},"spec":{"size":1,"image":"x"}}`)
		require.True(t, res.Allowed)
		require.Nil(t, res.Patch)
	})
	t.Run("mutated", func(t *testing.T) {
		sent := `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"mc","namespace":"ns"},"spec":{"size":1}}`
		res := review(t, w, client, mutate.Path(), admissionv1.Create, sent)
		require.True(t, res.Allowed)
		require.NotNil(t, res.PatchType)
		require.Equal(t, admissionv1.PatchTypeJSONPatch, *res.PatchType)
		patched, err := jsonpatch.Apply([]byte(sent), res.Patch)
		require.NoError(t, err)
		require.JSONEq(t, `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"mc","namespace":"ns"},"spec":{"size":1,"image":"memcached:1.6"}}`, string(patched))
	})
	require.NotEmpty(t, tel.SpansNamed("validate Memcached"), "each review is a span")
}

// The path in the configurations is the Service's Path and the Hook's
// own: the Webhooks answer reviews there, with no setting of their own
// that could say another.
func TestNewWebhooks_answer_at_the_path_the_configurations_name_with_a_prefix(t *testing.T) {
	deny := kube.Validate(Memcached, func(context.Context, kube.Admission[memcachedObject]) ([]string, error) {
		return nil, errors.New("denied by the handler")
	})
	w, client, _ := servedWebhooks(t, deny)
	for _, prefix := range []string{"/hooks", "/hooks/", "/a/b"} {
		wc := kube.WebhookClient{Service: &kube.WebhookService{Namespace: "ns", Name: "hooks", Path: prefix}}
		v, _, err := kube.WebhookConfigurations("memcached", wc, deny)
		require.NoError(t, err)
		path := *v.Webhooks[0].ClientConfig.Service.Path
		require.True(t, strings.HasPrefix(path, strings.TrimSuffix(prefix, "/")+"/validate/"), path)
		res := review(t, w, client, path, admissionv1.Create, `{"metadata":{"name":"mc","namespace":"ns"},"spec":{"size":1}}`)
		require.False(t, res.Allowed)
		require.Equal(t, "denied by the handler", res.Result.Message)
	}
}

func TestNewWebhooks_names_every_mistake_at_once(t *testing.T) {
	host := apptest.NewHost(t)
	settings := kube.WebhookSettings{Address: "nine", MaxRequestBytes: 0}
	settings.TLS = tlsfilesSettings(host.Path("missing.crt"), host.Path("missing.key"))
	_, err := kube.NewWebhooks(&app.Setup{Host: host.Host()}, settings)
	require.Error(t, err)
	for _, want := range []string{
		`kube: WebhookSettings.Address "nine" is not host:port`,
		"kube: WebhookSettings.MaxRequestBytes is 0",
		"kube: no Hook",
		"kube: WebhookSettings.TLS: tlsfiles: ",
		"missing.crt",
	} {
		require.Contains(t, err.Error(), want)
	}

	_, err = kube.NewWebhooks(&app.Setup{Host: host.Host()}, kube.DefaultWebhookSettings(),
		kube.Validate[MemcachedSpec, MemcachedStatus](Memcached, nil), kube.Hook{})
	require.ErrorContains(t, err, "kube: Hook 0, Validate(memcacheds.v1alpha1.cache.example.com): the function is nil")
	require.ErrorContains(t, err, "kube: Hook 1, Hook{}: the zero Hook")
	require.ErrorContains(t, err, "Settings.CertFile is empty")
}

func tlsfilesSettings(cert, key string) tlsfiles.Settings {
	s := tlsfiles.DefaultSettings()
	s.CertFile, s.KeyFile = cert, key
	return s
}

func TestAwaitWebhooks_holds_the_Controller_until_the_Webhooks_serve(t *testing.T) {
	w, _, _, _ := newWebhooks(t, kube.Validate(Memcached, validateMemcached))
	tel := apptest.NewTelemetry()
	s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: tel.Telemetry}
	c, err := kube.NewClient(s, kube.Connection{Server: "api.test:443", TLS: &tls.Config{MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	ctrl, err := kube.NewController(s, c, validSettings(), Memcached, memcachedReconciler{}, kube.AwaitWebhooks(w))
	require.NoError(t, err)

	requireWaitsForWebhooks(t, ctrl, tel)
}

// requireWaitsForWebhooks serves ctrl until an INFO record says it waits
// for the webhooks to serve, then stops it, and requires that Serve then
// returned nil.
func requireWaitsForWebhooks(t *testing.T, ctrl *kube.Controller, tel *apptest.Telemetry) {
	t.Helper()
	ctx, stop := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- ctrl.Serve(ctx) }()
	require.Eventually(t, func() bool {
		for _, r := range tel.Records() {
			if r.Body().AsString() == "waiting for the webhooks to serve" {
				return r.Severity() == otellog.SeverityInfo
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "an INFO record says the Controller waits for the Webhooks")
	stop()
	require.NoError(t, <-served, "stopped while it waits, it returns nil")
}

func TestAwaitWebhooks_mistakes(t *testing.T) {
	w, _, _, _ := newWebhooks(t, kube.Validate(Memcached, validateMemcached))
	s, c := unservedClient(t)
	_, err := kube.NewController(s, c, validSettings(), Memcached, memcachedReconciler{},
		kube.AwaitWebhooks(nil), kube.AwaitWebhooks(w), kube.AwaitWebhooks(w))
	require.ErrorContains(t, err, "kube: Part 0, AwaitWebhooks(nil): the Webhooks are nil")
	require.ErrorContains(t, err, "kube: Part 2, AwaitWebhooks(kube webhooks (127.0.0.1:0)): the Webhooks are awaited twice")
	require.NotContains(t, err.Error(), "Part 1")
}

func TestNewWebhooks_with_a_nil_Setup_fails(t *testing.T) {
	_, err := kube.NewWebhooks(nil, kube.DefaultWebhookSettings(), kube.Validate(Memcached, validateMemcached))
	require.EqualError(t, err, "kube: the Setup is nil: pass the one Init is given")
}

type memcachedV1beta1Spec struct {
	Replicas int32  `json:"replicas"`
	Image    string `json:"image"`
}

// versioned returns Memcached as the hub of a v1beta1 spoke, converted
// through the webhook, with up as the spoke's conversion to the hub.
func versioned(up func(kube.Object[memcachedV1beta1Spec, MemcachedStatus], *memcachedObject) error) kube.Resource[MemcachedSpec, MemcachedStatus] {
	spoke := kube.Resource[memcachedV1beta1Spec, MemcachedStatus]{
		Group: "cache.example.com", Version: "v1beta1", Kind: "Memcached", Plural: "memcacheds", Scope: kube.Namespaced,
	}
	down := func(from memcachedObject, to *kube.Object[memcachedV1beta1Spec, MemcachedStatus]) error {
		to.Spec = memcachedV1beta1Spec{Replicas: from.Spec.Size, Image: from.Spec.Image}
		to.Status = from.Status
		return nil
	}
	hub := Memcached
	hub.Versions = []kube.Version{kube.Spoke(spoke, up, down)}
	hub.Conversion = &kube.WebhookClient{Service: &kube.WebhookService{Namespace: "memcached-system", Name: "memcached-webhooks"}}
	return hub
}

func TestNewWebhooks_serves_a_Conversion_through_the_hub(t *testing.T) {
	hub := versioned(func(from kube.Object[memcachedV1beta1Spec, MemcachedStatus], to *memcachedObject) error {
		to.Spec = MemcachedSpec{Size: from.Spec.Replicas, Image: from.Spec.Image}
		to.Status = from.Status
		return nil
	})
	conversion := kube.Conversion(hub)
	require.Equal(t, "/convert/cache.example.com/memcacheds", conversion.Path())
	w, client, _ := servedWebhooks(t, conversion)

	body := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c1","desiredAPIVersion":"cache.example.com/v1beta1","objects":[` +
		`{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"mc","namespace":"ns"},"spec":{"size":2,"image":"memcached:1.6"}}]}}`
	res, err := client.Post("https://"+w.Addr().String()+conversion.Path(), "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", out)
	var got struct {
		Response struct {
			UID              string            `json:"uid"`
			ConvertedObjects []json.RawMessage `json:"convertedObjects"`
			Result           metav1.Status     `json:"result"`
		} `json:"response"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Equal(t, "c1", got.Response.UID)
	require.Equal(t, metav1.StatusSuccess, got.Response.Result.Status, "%s", out)
	require.Len(t, got.Response.ConvertedObjects, 1)
	var converted kube.Object[memcachedV1beta1Spec, MemcachedStatus]
	require.NoError(t, json.Unmarshal(got.Response.ConvertedObjects[0], &converted))
	require.Equal(t, "cache.example.com/v1beta1", converted.APIVersion)
	require.Equal(t, memcachedV1beta1Spec{Replicas: 2, Image: "memcached:1.6"}, converted.Spec)
	require.Equal(t, "mc", converted.Name)

	_, _, err = kube.WebhookConfigurations("memcached-operator", kube.WebhookClient{URL: "https://example.com"}, conversion)
	require.NoError(t, err, "a Conversion is the CRD's to configure, and no mistake here")
}

func TestNewWebhooks_reports_a_Conversion_hub_s_mistakes(t *testing.T) {
	hub := versioned(nil)
	hub.Conversion = nil
	_, err := kube.NewWebhooks(&app.Setup{Host: apptest.NewHost(t).Host()}, kube.DefaultWebhookSettings(), kube.Conversion(hub))
	require.ErrorContains(t, err, "kube: Hook 0, Conversion(Memcached): ")
	require.ErrorContains(t, err, "missing conversion")
	require.ErrorContains(t, err, "v1beta1")
}
