package e2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	lognoop "go.opentelemetry.io/otel/log/noop"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/examples/internal/freeaddr"
	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// migrationObjects is how many Memcacheds the migration test stores, in
// two namespaces: with pages of 2, four pages.
const migrationObjects = 7

// The procedure of docs/kubernetes.md, "Moving storage to another
// version", against the API server: Memcacheds stored in v1alpha1 under
// the CRD before v1beta1 existed, then deploy/crd.yaml applied (storage
// v1beta1, converted by the operator's webhook), then a StorageMigration.
// A first run is interrupted after its first page and leaves its
// checkpoint; the second resumes from it (7 objects rewritten in all, not
// 9), retries the object the test changed after the run's list (a real
// 409 Conflict), and trims storedVersions to [v1beta1]. Every object's
// spec and status read the same before and after.
func TestStorageMigration_moves_Memcacheds_from_v1alpha1_to_v1beta1(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	old, current := migrationCRDs(t)
	require.NoError(t, c.InstallCRDs(ctx, old))
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	alphas := dyn.Resource(memcached.Memcached.GVR())
	before := storeAlphas(t, c, alphas)

	// The new CRD, its conversion served by the operator's webhooks at a
	// loopback URL with a CA of the test's in place of cert-manager's.
	ca := apptest.NewCA(t)
	cert := ca.ServerCert("127.0.0.1")
	address := freeaddr.Loopback(t)
	current.Spec.Conversion.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{
		URL: new("https://" + address + "/convert/cache.example.com/memcacheds"), CABundle: ca.PEM(),
	}
	h := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"tls.crt": cert.CertPEM, "tls.key": cert.KeyPEM}))
	hook := &recordHook{}
	var migrate func(kube.StorageMigrationSettings) *kube.StorageMigration
	a := apptest.Start(t, func(_ context.Context, s *app.Setup) ([]app.Service, error) {
		settings := kube.DefaultWebhookSettings()
		settings.Address = address
		settings.TLS.CertFile, settings.TLS.KeyFile = h.Path("tls.crt"), h.Path("tls.key")
		w, err := kube.NewWebhooks(s, settings, memcached.Hooks(memcached.Images{Allowed: []string{"memcached:"}})...)
		if err != nil {
			return nil, err
		}
		client, err := kube.NewClient(s, c.Connection())
		if err != nil {
			return nil, err
		}
		hooked := *s
		hooked.Telemetry.LoggerProvider = hook.provider(s.Telemetry.LoggerProvider)
		migrate = func(ms kube.StorageMigrationSettings) *kube.StorageMigration {
			m, err := kube.NewStorageMigration(&hooked, client, memcached.MemcachedV1beta1, ms)
			require.NoError(t, err)
			return m
		}
		return []app.Service{w}, nil
	}, apptest.WithHost(h), apptest.WithAppOptions(app.WithHost(app.Host{Network: app.OSHost().Network, FS: h.FS()})))
	a.Setup() // Init has returned: migrate is set
	require.NoError(t, c.InstallCRDs(ctx, current))
	require.Equal(t, []string{"v1alpha1", "v1beta1"}, storedVersions(t, c))
	betas := dyn.Resource(memcached.MemcachedV1beta1.GVR())
	var lastErr error
	wait.For(t, patience, func() bool {
		_, lastErr = betas.List(ctx, metav1.ListOptions{})
		return lastErr == nil
	}, "the conversion webhook never answered a list in v1beta1", wait.App(a), wait.LastSeen(func() string { return fmt.Sprint(lastErr) }))

	// The first run: its first page done, the process "stops".
	first, stop := context.WithCancel(ctx)
	hook.set(func(_ context.Context, body string, _ map[attribute.Key]attribute.Value) {
		if body == "storage migration rewrote a page" {
			stop()
		}
	})
	res, err := migrate(kube.StorageMigrationSettings{PageSize: 2}).Run(first)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, res.Pages)
	require.Equal(t, 2, res.Rewritten)
	require.Equal(t, []string{"v1alpha1", "v1beta1"}, storedVersions(t, c), "an interrupted run trims nothing")
	require.NotEmpty(t, checkpointOf(t, c), "the first page's checkpoint")

	// The second run: the last object changes once the run has listed
	// its first page, so the page that holds it, listed with the token
	// of the first page's snapshot, carries its old resourceVersion.
	var started map[attribute.Key]attribute.Value
	changed := false
	hook.set(func(_ context.Context, body string, attrs map[attribute.Key]attribute.Value) {
		switch {
		case body == "storage migration started":
			started = attrs
		case body == "storage migration rewrote a page" && !changed:
			changed = true
			last := lastMemcached(t, betas)
			last.SetLabels(map[string]string{"changed": "during-the-migration"})
			_, err := betas.Namespace(last.GetNamespace()).Update(ctx, last, metav1.UpdateOptions{})
			require.NoError(t, err)
		}
	})
	res, err = migrate(kube.StorageMigrationSettings{PageSize: 2}).Run(ctx)
	require.NoError(t, err)
	require.True(t, started["loam.kube.migration.resumed"].AsBool(), "the second run resumed")
	require.Equal(t, int64(2), started["loam.kube.migration.rewritten"].AsInt64(), "from the first run's count")
	require.Equal(t, migrationObjects, res.Rewritten, "every object once: resumed, not started over")
	require.Equal(t, 1, res.Conflicts, "the changed object, retried")
	require.Equal(t, []string{"v1beta1"}, res.StoredVersions)
	require.Equal(t, []string{"v1beta1"}, storedVersions(t, c))
	require.Empty(t, checkpointOf(t, c), "a finished run leaves no checkpoint")
	require.Equal(t, before, specsAndStatuses(t, alphas), "every Memcached's spec and status, as v1alpha1")

	// kubetest's API server serves the in-tree API too, which the docs
	// weigh; its controller, in kube-controller-manager, isn't started.
	dc, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig())
	require.NoError(t, err)
	_, err = dc.ServerResourcesForGroupVersion("storagemigration.k8s.io/v1")
	require.NoError(t, err, "storagemigration.k8s.io/v1 served")

	// Run again: nothing to do.
	res, err = migrate(kube.StorageMigrationSettings{}).Run(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Pages)
}

// lastMemcached returns the Memcached a list returns last, read now.
func lastMemcached(t *testing.T, betas dynamic.NamespaceableResourceInterface) *unstructured.Unstructured {
	t.Helper()
	l, err := betas.List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, l.Items)
	return &l.Items[len(l.Items)-1]
}

// migrationCRDs returns deploy/crd.yaml, and the CRD it replaced: its
// v1alpha1 alone, stored, and converted by nothing.
func migrationCRDs(t *testing.T) (old, current *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	b, err := os.ReadFile("../deploy/crd.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(b, &current))
	old = current.DeepCopy()
	old.Annotations = nil
	old.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	old.Spec.Versions = nil
	for _, v := range current.Spec.Versions {
		if v.Name == "v1alpha1" {
			v.Storage = true
			old.Spec.Versions = append(old.Spec.Versions, v)
		}
	}
	require.Len(t, old.Spec.Versions, 1, "deploy/crd.yaml's v1alpha1")
	return old, current
}

// storeAlphas creates the Memcacheds in v1alpha1, each with a status, and
// returns their spec and status by namespace/name.
func storeAlphas(t *testing.T, c *kubetest.Cluster, alphas dynamic.NamespaceableResourceInterface) map[string]map[string]any {
	t.Helper()
	ctx := t.Context()
	nss := []string{c.Namespace(t), c.Namespace(t)}
	for i := range migrationObjects {
		ns := nss[i%2]
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
			"metadata": map[string]any{"name": fmt.Sprintf("m%d", i), "namespace": ns},
			"spec":     map[string]any{"size": int64(i%3 + 1), "image": "memcached:1.6." + fmt.Sprint(i)},
		}}
		created, err := alphas.Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		require.NoError(t, err)
		// Not 0: the conversion's Go types drop an explicit 0 (omitempty),
		// which the v1beta1 copy then stores without.
		created.Object["status"] = map[string]any{"readyReplicas": int64(i + 1)}
		_, err = alphas.Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	return specsAndStatuses(t, alphas)
}

// specsAndStatuses reads every Memcached in v1alpha1 and returns its spec
// and status by namespace/name.
func specsAndStatuses(t *testing.T, alphas dynamic.NamespaceableResourceInterface) map[string]map[string]any {
	t.Helper()
	l, err := alphas.List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	got := map[string]map[string]any{}
	for _, u := range l.Items {
		got[u.GetNamespace()+"/"+u.GetName()] = map[string]any{"spec": u.Object["spec"], "status": u.Object["status"]}
	}
	return got
}

// storedVersions returns the Memcached CRD's status.storedVersions.
func storedVersions(t *testing.T, c *kubetest.Cluster) []string {
	t.Helper()
	return memcachedCRD(t, c).Status.StoredVersions
}

// checkpointOf returns the checkpoint a StorageMigration keeps on the
// Memcached CRD.
func checkpointOf(t *testing.T, c *kubetest.Cluster) string {
	t.Helper()
	return memcachedCRD(t, c).Annotations[kube.StorageMigrationCheckpoint]
}

// memcachedCRD reads the Memcached CRD.
func memcachedCRD(t *testing.T, c *kubetest.Cluster) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	cs, err := apiextensionsclient.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	crd, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "memcacheds.cache.example.com", metav1.GetOptions{})
	require.NoError(t, err)
	return crd
}

// recordHook calls on with each log record of the migration, in the
// goroutine that emits it, before the App's Telemetry keeps it.
type recordHook struct {
	mu sync.Mutex
	on func(ctx context.Context, body string, attrs map[attribute.Key]attribute.Value)
}

// set makes on the hook's function.
func (h *recordHook) set(on func(ctx context.Context, body string, attrs map[attribute.Key]attribute.Value)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.on = on
}

// provider returns a LoggerProvider whose Loggers call the hook, then
// next's.
func (h *recordHook) provider(next log.LoggerProvider) log.LoggerProvider {
	return hookProvider{hook: h, next: next}
}

type hookProvider struct {
	lognoop.LoggerProvider
	hook *recordHook
	next log.LoggerProvider
}

func (p hookProvider) Logger(name string, opts ...log.LoggerOption) log.Logger {
	return hookLogger{hook: p.hook, next: p.next.Logger(name, opts...)}
}

type hookLogger struct {
	lognoop.Logger
	hook *recordHook
	next log.Logger
}

func (l hookLogger) Emit(ctx context.Context, r log.Record) {
	l.hook.mu.Lock()
	on := l.hook.on
	l.hook.mu.Unlock()
	if on != nil {
		attrs := map[attribute.Key]attribute.Value{}
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			attrs[kv.Key] = kv.Value
			return true
		})
		on(ctx, r.Body().AsString(), attrs)
	}
	l.next.Emit(ctx, r)
}
