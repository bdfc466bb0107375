package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, kubetest.GoleakOptions()...) }

// TestDemo runs the demo end to end, as make demo does, and checks that it
// showed each step and stopped cleanly.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	err := Run(ctx, &out, Options{})
	t.Log(out.String())
	require.NoError(t, err)

	for _, want := range []string{
		"API server ready after",
		"Installing the Memcached CRD, memcacheds.cache.example.com",
		"  sessions  1     1 replicas  yes  1      True       MinimumReplicasAvailable",
		"  pages*    3     2 replicas  yes  2      Unknown    ApplyFailed",
		`fault: injected abort at point "kube:deployments.apps:patch"`,
		"  pages     3     3 replicas  yes  3      True       MinimumReplicasAvailable",
		"  reconcile Memcached  ",
		"error.type=github.com/loam-dev/loam/app/fault.InjectedError",
		"event loam.fit.evaluation loam.fit.point=kube:deployments.apps:patch",
		"loam.fit.experiment=demo-pages-abort",
		`(experiment "demo-pages-abort")`,
		"Experiment demo-pages-abort: ",
		"Done in ",
	} {
		require.Contains(t, out.String(), want)
	}

	// The backoff: the waits between failed reconciles grow. The delay
	// doubles; each wait is measured between spans, so a busy machine
	// may add a few milliseconds to one, and each is checked against the
	// one two before it, which it is four times, with room for that.
	var counts []int
	var waits []time.Duration
	for line := range strings.Lines(out.String()) {
		if c, ok := strings.CutPrefix(line, "  reconciles of pages since the experiment began: "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(c))
			require.NoError(t, err)
			counts = append(counts, n)
		}
		if w, ok := strings.CutPrefix(line, "  waits between its failed reconciles: "); ok {
			for f := range strings.FieldsSeq(w) {
				d, err := time.ParseDuration(f)
				require.NoError(t, err)
				waits = append(waits, d)
			}
		}
	}
	require.Len(t, counts, 3)
	// A change that comes while a reconcile runs, such as the
	// experiment's own writes, starts the next reconcile at once, as the
	// work queue does for an object changed while it was processed: those
	// waits are not the backoff's, and come first, anywhere from 0 to
	// tens of milliseconds on a busy machine (CI saw 0s 0s 0s 41ms and
	// 27ms 5ms 20ms before the backoff's). The backoff's waits are the
	// longest run at the end that keeps the rule, and there must be at
	// least five of them.
	backoff := backoffRun(waits)
	require.GreaterOrEqual(t, len(backoff), 5, "waits %v: the backoff's, each over twice the one two before, are only %v", waits, backoff)
	require.Positive(t, counts[0], "the experiment's first reconcile failed and was retried")
}

// backoffRun returns the longest run at the end of waits in which each
// wait is over twice the one two before it: four times, as the delay
// doubles, with room for the milliseconds a busy machine adds to one.
func backoffRun(waits []time.Duration) []time.Duration {
	if len(waits) == 0 {
		return nil
	}
	start := len(waits) - 1
	for i := len(waits) - 1; i >= 2 && waits[i] > 2*waits[i-2]; i-- {
		start = i - 2
	}
	return waits[start:]
}

func TestBackoffRun(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		waits, want []time.Duration
	}{
		{ms(5, 10, 20, 40, 80), ms(5, 10, 20, 40, 80)},
		{ms(0, 0, 0, 41, 80, 160, 321), ms(0, 0, 41, 80, 160, 321)},
		{ms(27, 5, 20, 40, 81, 160), ms(5, 20, 40, 81, 160)},
		{ms(5, 10, 20, 40, 40), ms(40)},
		{ms(7), ms(7)},
		{nil, nil},
	} {
		require.Equal(t, tc.want, backoffRun(tc.waits), "%v", tc.waits)
	}
}

// TestDeployFiles applies every file the kustomization lists, for real, to
// a cluster, as kubectl apply -k would, and checks the admission policy
// keeps the scenario annotation to the chaos harness. The cluster has no
// Service network: the webhooks the files name, the conversion of the
// CRD, which stores v1beta1, and the admission of webhooks.yaml, are the
// operator's Hooks served by the test at a URL instead, so a Memcached
// of v1alpha1, as the demo and the e2e tests create, goes through them as
// it would in a cluster.
func TestDeployFiles(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	applyDeploy(t, c, "../../databases/deploy", nil)
	applyDeploy(t, c, "../../memcached/deploy", serveWebhooks(t).redirect)
	checkOverlay(t, "../../memcached/deploy-cert-manager", "../deploy")
	checkCertificate(t, "../../memcached/deploy", "../../memcached/deploy-cert-manager/certificate.yaml")

	// The cluster's admin isn't the chaos harness: the policy denies it the
	// annotation on a Memcached in staging, and allows it elsewhere.
	staging := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "staging"}}}
	_, err = dyn.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Apply(ctx, "staging", staging, metav1.ApplyOptions{FieldManager: "deploy-test"})
	require.NoError(t, err)
	memcacheds := dyn.Resource(memcached.Memcached.GVR())
	annotated := func(ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": memcached.Memcached.Group + "/" + memcached.Memcached.Version,
			"kind":       memcached.Memcached.Kind,
			"metadata":   map[string]any{"name": name, "namespace": ns, "annotations": map[string]any{scenarioAnnotation: "acme.fault={}"}},
			"spec":       map[string]any{"size": int64(1)},
		}}
		return u
	}
	wait.For(t, time.Minute, func() bool {
		_, err := memcacheds.Namespace("staging").Create(ctx, annotated("staging", "cache"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "only the chaos harness sets acme.example.com/failure-scenario")
	}, "the admission policy never denies the annotation in staging")
	_, err = memcacheds.Namespace("default").Create(ctx, annotated("default", "cache"), metav1.CreateOptions{})
	require.NoError(t, err, "outside staging the policy doesn't apply")

	// Nor is it the operator: the second policy denies it the annotation
	// on a Deployment, in any namespace, and lets it write one without.
	deployment := func(annotations map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "default", "annotations": annotations},
			"spec": map[string]any{
				"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
					"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": "web:1"}}},
				},
			},
		}}
	}
	deployments := dyn.Resource(appsv1.SchemeGroupVersion.WithResource("deployments")).Namespace("default")
	wait.For(t, time.Minute, func() bool {
		_, err := deployments.Create(ctx, deployment(map[string]any{scenarioAnnotation: "acme.fault={}"}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "only the memcached operator sets acme.example.com/failure-scenario on a Deployment")
	}, "the admission policy never denies the annotation on a Deployment")
	_, err = deployments.Create(ctx, deployment(map[string]any{"team": "a"}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err, "a Deployment without the annotation is anyone's to write")

	// The v1alpha1 object is stored as v1beta1, through the conversion
	// webhook, and reads back in either version.
	beta, err := dyn.Resource(memcached.MemcachedV1beta1.GVR()).Namespace("default").Get(ctx, "cache", metav1.GetOptions{})
	require.NoError(t, err)
	replicas, _, err := unstructured.NestedInt64(beta.Object, "spec", "replicas")
	require.NoError(t, err)
	require.Equal(t, int64(1), replicas, "v1alpha1's spec.size is v1beta1's spec.replicas")
	alpha, err := memcacheds.Namespace("default").Get(ctx, "cache", metav1.GetOptions{})
	require.NoError(t, err)
	size, _, err := unstructured.NestedInt64(alpha.Object, "spec", "size")
	require.NoError(t, err)
	require.Equal(t, int64(1), size)
}

// webhooks are the memcached operator's Hooks, served by the test on
// loopback with a certificate of a CA of the test's own.
type webhooks struct {
	url      string
	caBundle string // the CA's PEM, base64-encoded as the YAML holds it
}

// serveWebhooks serves memcached.Hooks, with the operator's default image
// policy, as an App on the OS's network, until the test ends.
func serveWebhooks(t *testing.T) webhooks {
	t.Helper()
	ca := apptest.NewCA(t)
	cert := ca.ServerCert("127.0.0.1")
	h := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"tls.crt": cert.CertPEM, "tls.key": cert.KeyPEM}))
	var w *kube.Webhooks
	a := apptest.Start(t, func(_ context.Context, s *app.Setup) ([]app.Service, error) {
		settings := kube.DefaultWebhookSettings()
		settings.Address = "127.0.0.1:0"
		settings.TLS.CertFile, settings.TLS.KeyFile = h.Path("tls.crt"), h.Path("tls.key")
		var err error
		w, err = kube.NewWebhooks(s, settings, memcached.Hooks(memcached.Images{Allowed: []string{"memcached:"}, DefaultImage: memcached.DefaultImage})...)
		if err != nil {
			return nil, err
		}
		return []app.Service{w}, nil
	}, apptest.WithHost(h), apptest.WithAppOptions(app.WithHost(app.Host{Network: app.OSHost().Network, FS: h.FS()})))
	a.Setup() // Init has returned, and set w
	require.NotNil(t, w, "the webhooks' Init failed: %s", a.Stderr())
	select {
	case <-w.Ready():
	case <-a.Done():
		t.Fatalf("the webhooks exited %d: %s", a.Wait(), a.Stderr())
	case <-time.After(time.Minute):
		t.Fatal("the webhooks never listened")
	}
	return webhooks{url: "https://" + w.Addr().String(), caBundle: base64.StdEncoding.EncodeToString(ca.PEM())}
}

// redirect points the client configurations of u, a CRD's conversion or
// a webhook configuration's webhooks, which name the Service
// memcached-webhooks, at w's URL with the same path, and has them trust
// w's CA.
func (w webhooks) redirect(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	point := func(cfg map[string]any) {
		path, _, err := unstructured.NestedString(cfg, "service", "path")
		require.NoError(t, err)
		require.NotEmpty(t, path, "%s %s: a clientConfig names its Service's path", u.GetKind(), u.GetName())
		delete(cfg, "service")
		cfg["url"] = w.url + path
		cfg["caBundle"] = w.caBundle
	}
	switch u.GetKind() {
	case "CustomResourceDefinition":
		cfg, ok, err := unstructured.NestedMap(u.Object, "spec", "conversion", "webhook", "clientConfig")
		require.NoError(t, err)
		if !ok {
			return
		}
		point(cfg)
		require.NoError(t, unstructured.SetNestedMap(u.Object, cfg, "spec", "conversion", "webhook", "clientConfig"))
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		hooks, _, err := unstructured.NestedSlice(u.Object, "webhooks")
		require.NoError(t, err)
		for _, h := range hooks {
			point(h.(map[string]any)["clientConfig"].(map[string]any))
		}
		require.NoError(t, unstructured.SetNestedSlice(u.Object, hooks, "webhooks"))
	}
}

// checkOverlay checks the kustomization of the overlay dir, which applies
// base, a directory beside it, with what this cluster lacks, such as
// cert-manager: it includes base, and lists every YAML file of its own,
// each of objects with an apiVersion, a kind and a name.
func checkOverlay(t *testing.T, dir, base string) {
	t.Helper()
	k := readKustomization(t, dir)
	require.Contains(t, k.Resources, base, "the overlay %s applies its base", dir)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	for _, f := range files {
		name := filepath.Base(f)
		if name == "kustomization.yaml" {
			continue
		}
		require.Contains(t, k.Resources, name, "the kustomization of %s lists every file", dir)
		for _, u := range readObjects(t, f) {
			require.NotEmpty(t, u.GetAPIVersion(), "%s", f)
			require.NotEmpty(t, u.GetKind(), "%s", f)
			require.NotEmpty(t, u.GetName(), "%s: a %s", f, u.GetKind())
		}
	}
}

// checkCertificate checks that the cert-manager Certificate of file is
// the one deploy/ expects: named by the annotation
// cert-manager.io/inject-ca-from of every object with a webhook
// clientConfig, writing the Secret deployment.yaml mounts, and for the DNS
// name of the Service the clientConfigs name, as the API server calls it.
func checkCertificate(t *testing.T, deploy, file string) {
	t.Helper()
	var cert *unstructured.Unstructured
	for _, u := range readObjects(t, file) {
		if u.GetKind() == "Certificate" {
			cert = &u
		}
	}
	require.NotNil(t, cert, "%s has a Certificate", file)
	secret, _, err := unstructured.NestedString(cert.Object, "spec", "secretName")
	require.NoError(t, err)
	dnsNames, _, err := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	require.NoError(t, err)

	var mounted []string
	for _, u := range readObjects(t, filepath.Join(deploy, "deployment.yaml")) {
		volumes, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "volumes")
		require.NoError(t, err)
		for _, v := range volumes {
			if name, ok, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName"); ok {
				mounted = append(mounted, name)
			}
		}
	}
	require.Contains(t, mounted, secret, "deployment.yaml mounts the Certificate's Secret")

	clients := 0
	for _, name := range []string{"crd.yaml", "webhooks.yaml"} {
		for _, u := range readObjects(t, filepath.Join(deploy, name)) {
			var services []map[string]any
			if svc, ok, _ := unstructured.NestedMap(u.Object, "spec", "conversion", "webhook", "clientConfig", "service"); ok {
				services = append(services, svc)
			}
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for _, h := range hooks {
				if svc, ok, _ := unstructured.NestedMap(h.(map[string]any), "clientConfig", "service"); ok {
					services = append(services, svc)
				}
			}
			if len(services) == 0 {
				continue
			}
			require.Equal(t, cert.GetNamespace()+"/"+cert.GetName(), u.GetAnnotations()["cert-manager.io/inject-ca-from"],
				"%s: %s %s has cert-manager inject the Certificate's CA", name, u.GetKind(), u.GetName())
			for _, svc := range services {
				clients++
				require.Contains(t, dnsNames, fmt.Sprintf("%s.%s.svc", svc["name"], svc["namespace"]), "%s: the Certificate is for the Service %s %s calls", name, u.GetKind(), u.GetName())
			}
		}
	}
	require.Equal(t, 3, clients, "the CRD's conversion, the mutating webhook and the validating one")
}

// kustomization is what the tests read of a kustomization.yaml.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	// The image deployment.yaml names, as make image tags it;
	// examples/image's tests check the entries.
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// readKustomization reads dir's kustomization.yaml, which has no field
// kustomization doesn't know.
func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	var k kustomization
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, sigsyaml.UnmarshalStrict(b, &k))
	return k
}

// readObjects returns the objects of the YAML file path, one a document,
// skipping empty ones.
func readObjects(t *testing.T, path string) []unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	docs := yaml.NewYAMLOrJSONDecoder(f, 4096)
	var objs []unstructured.Unstructured
	for {
		var u unstructured.Unstructured
		if err := docs.Decode(&u.Object); err != nil {
			require.ErrorIs(t, err, io.EOF, path)
			return objs
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// applyDeploy applies every file that dir's kustomization lists, in its
// order, to c, as kubectl apply -k would, each object changed by edit
// first unless it is nil, and checks that the kustomization lists every
// YAML file of dir: each object must be one the API server accepts, and a
// CRD must come to be served.
func applyDeploy(t *testing.T, c *kubetest.Cluster, dir string, edit func(*testing.T, *unstructured.Unstructured)) {
	t.Helper()
	k := readKustomization(t, dir)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	for _, f := range files {
		if name := filepath.Base(f); name != "kustomization.yaml" {
			require.Contains(t, k.Resources, name, "the kustomization of %s lists every file", dir)
		}
	}

	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig())
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))

	for _, name := range k.Resources {
		for _, u := range readObjects(t, filepath.Join(dir, name)) {
			if edit != nil {
				edit(t, &u)
			}
			gvk := u.GroupVersionKind()
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			require.NoError(t, err, "%s: %s", name, gvk)
			var r dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
			if ns := u.GetNamespace(); ns != "" {
				r = dyn.Resource(mapping.Resource).Namespace(ns)
			}
			_, err = r.Apply(ctx, u.GetName(), &u, metav1.ApplyOptions{FieldManager: "deploy-test", Force: true})
			require.NoError(t, err, "%s: %s %s", name, gvk.Kind, u.GetName())
			if gvk.Kind == "CustomResourceDefinition" {
				group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
				kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
				wait.For(t, time.Minute, func() bool {
					mapper.Reset()
					_, err := mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind})
					return err == nil
				}, fmt.Sprintf("the CRD %s is never served", u.GetName()))
			}
		}
	}
}
