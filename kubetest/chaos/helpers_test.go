package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/internal/controllerapp"
	"github.com/loam-dev/loam/kubetest/wait"
)

// sized picks a test's size: short under -short, full under -chaos.full,
// bounded otherwise, which is what `make test` runs.
func sized(short, bounded, fullSize int) int {
	switch {
	case *full:
		return fullSize
	case testing.Short():
		return short
	default:
		return bounded
	}
}

// figure logs one measurement as a row of a Markdown table — the fault,
// what was measured, its value — on a line starting with "figure:", for
// docs/reliability.md.
func figure(t *testing.T, what string, format string, args ...any) {
	t.Helper()
	size := "bounded"
	switch {
	case *full:
		size = "full"
	case testing.Short():
		size = "short"
	}
	t.Logf("figure: | %s | %s | %s | %s |", t.Name(), size, what, fmt.Sprintf(format, args...))
}

// Every test reconciles Widgets: a spec holding a number, and a status
// saying which generation, and which number, the controller last acted
// on. A reconcile applies a ConfigMap holding the number, controlled by
// the Widget.
type widgetSpec struct {
	Value int64 `json:"value"`
}

type widgetStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	Value              int64 `json:"value,omitempty"`
}

type widget = kube.Object[widgetSpec, widgetStatus]

// widgets is the Widget resource. Each test has a cluster of its own, so
// one group serves them all.
var widgets = kube.Resource[widgetSpec, widgetStatus]{
	Group:   "chaos.loam.dev",
	Version: "v1",
	Kind:    "Widget",
	Plural:  "widgets",
	Scope:   kube.Namespaced,
}

// controllerName is the controller's Settings.Name: its Lease's name and
// the field manager of its status applies. childManager is the field
// manager of the ConfigMaps its Reconciler applies.
const (
	controllerName = "widget-controller"
	childManager   = "widget-reconciler"
)

// reconcileSpan is the name of the span of each reconcile.
const reconcileSpan = "reconcile Widget"

// configMapsGVR is what the Widget controller owns.
var configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")

// startCluster starts the test's own cluster, with the Widget CRD.
func startCluster(t *testing.T) *kubetest.Cluster {
	t.Helper()
	crd, err := widgets.CRD()
	require.NoError(t, err)
	return kubetest.Start(t, kubetest.WithCRDs(crd))
}

// clients are the test's own clients, as the cluster's admin.
type clients struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
}

func adminClients(t *testing.T, c *kubetest.Cluster) clients {
	t.Helper()
	k, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	d, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	return clients{kube: k, dynamic: d}
}

// createWidget creates the Widget ns/name holding value, and returns it.
func createWidget(ctx context.Context, d dynamic.Interface, ns, name string, value int64) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgets.Group + "/" + widgets.Version,
		"kind":       widgets.Kind,
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec":       map[string]any{"value": value},
	}}
	return d.Resource(widgets.GVR()).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
}

// setValue changes the value in the spec of the Widget ns/name, and
// returns the Widget as changed.
func setValue(ctx context.Context, d dynamic.Interface, ns, name string, value int64) (*unstructured.Unstructured, error) {
	patch := fmt.Appendf(nil, `{"spec":{"value":%d}}`, value)
	return d.Resource(widgets.GVR()).Namespace(ns).Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{FieldManager: "chaos-loader"})
}

// listWidgets returns every Widget of ns, decoded, and the ConfigMaps of
// ns by name.
func listWidgets(t *testing.T, cl clients, ns string) ([]widget, map[string]corev1.ConfigMap) {
	t.Helper()
	list, err := cl.dynamic.Resource(widgets.GVR()).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	ws := make([]widget, len(list.Items))
	for i, u := range list.Items {
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ws[i]))
	}
	cms, err := cl.kube.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	children := map[string]corev1.ConfigMap{}
	for _, cm := range cms.Items {
		children[cm.Name] = cm
	}
	return ws, children
}

// converged returns how many of ws have a status and a ConfigMap that
// reflect their latest spec: the status observed the Widget's generation
// and holds its value, and the ConfigMap holds the value too.
func converged(ws []widget, children map[string]corev1.ConfigMap) int {
	n := 0
	for _, w := range ws {
		cm, ok := children[w.Name]
		if ok && w.Status.ObservedGeneration == w.Generation && w.Status.Value == w.Spec.Value &&
			cm.Data["value"] == strconv.FormatInt(w.Spec.Value, 10) {
			n++
		}
	}
	return n
}

// applyChild applies the ConfigMap of w, holding its value, controlled by
// w, in ctx.
func applyChild(ctx context.Context, k kubernetes.Interface, w widget) error {
	_, err := k.CoreV1().ConfigMaps(w.Namespace).Apply(ctx,
		corev1ac.ConfigMap(w.Name, w.Namespace).
			WithOwnerReferences(metav1ac.OwnerReference().
				WithAPIVersion(w.APIVersion).WithKind(w.Kind).WithName(w.Name).WithUID(w.UID).
				WithController(true).WithBlockOwnerDeletion(true)).
			WithData(map[string]string{"value": strconv.FormatInt(w.Spec.Value, 10)}),
		metav1.ApplyOptions{FieldManager: childManager, Force: true})
	return err
}

// reconcileWidget is the plain Reconciler: it applies w's ConfigMap and
// returns the status that observed w.
func reconcileWidget(ctx context.Context, k kubernetes.Interface, w widget) (kube.Result[widgetStatus], error) {
	if err := applyChild(ctx, k, w); err != nil {
		return kube.Result[widgetStatus]{}, err
	}
	return kube.Result[widgetStatus]{Status: &widgetStatus{ObservedGeneration: w.Generation, Value: w.Spec.Value}}, nil
}

// settingsFor returns the Settings of replica identity of the Widget
// controller, limited to ns, where its Lease is too: Kubernetes' defaults,
// with a backoff capped at a second, so an object that failed while the
// API server was away is retried soon after it is back.
func settingsFor(ns, identity string) kube.Settings {
	s := kube.DefaultSettings()
	s.Name = controllerName
	s.Namespace = ns
	s.RetryMaxDelay = time.Second
	s.LeaderElection.Namespace = ns
	s.LeaderElection.Identity = identity
	return s
}

// replica is one replica of the Widget controller: an App that serves
// one Controller, on a network the test can cut.
type replica struct {
	*apptest.App
	identity string
	network  *network
	ctrl     *kube.Controller
}

// startReplica runs a replica with settings, whose Reconciler newReconciler
// makes from a clientset of the replica's own Client. The Controller owns
// ConfigMaps.
func startReplica(t *testing.T, conn kube.Connection, settings kube.Settings, newReconciler func(k kubernetes.Interface) kube.Reconciler[widgetSpec, widgetStatus]) *replica {
	t.Helper()
	n := &network{}
	a, ctrl := controllerapp.Start(t, conn, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		k, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		return kube.NewController(s, client, settings, widgets, newReconciler(k), kube.Owns(configMapsGVR))
	}, app.WithHost(app.Host{Network: n}))
	return &replica{App: a, identity: settings.LeaderElection.Identity, network: n, ctrl: ctrl}
}

// synced reports whether the replica's Controller says its caches synced.
func (r *replica) synced(t *testing.T) bool {
	t.Helper()
	ok, err := r.ctrl.Synced().Healthy(t.Context())
	require.NoError(t, err)
	return ok
}

// exited reports whether the replica's App has exited.
func (r *replica) exited() bool {
	select {
	case <-r.Done():
		return true
	default:
		return false
	}
}

// Report describes the replica for a failed wait.
func (r *replica) Report() string {
	return wait.Report("replica "+r.identity, r.App, r.Telemetry())
}

// failure returns the message of the App's record that its Controller's
// Serve failed, or "" when there is none.
func (r *replica) failure() string {
	if msgs := r.Telemetry().ExceptionMessages("service failed"); len(msgs) > 0 {
		return msgs[0]
	}
	return ""
}

// interval is one reconcile of one object by one replica: its span, from
// the moment the pass began to the moment it settled, status applied.
type interval struct {
	replica    string
	object     string
	start, end time.Time
	failed     bool
}

// reconciles returns every reconcile the replica has finished, in the
// order they ended, from its reconcile spans.
func (r *replica) reconciles() []interval {
	var out []interval
	for _, s := range r.Telemetry().SpansNamed(reconcileSpan) {
		iv := interval{replica: r.identity, start: s.StartTime, end: s.EndTime, failed: s.Status.Code == codes.Error}
		for _, kv := range s.Attributes {
			if kv.Key == "loam.kube.object.name" {
				iv.object = kv.Value.AsString()
			}
		}
		out = append(out, iv)
	}
	return out
}

// outcomes returns how many reconciles the replica finished, by outcome
// (success, error, panic), from its reconcile.duration histogram.
func (r *replica) outcomes(t *testing.T) map[string]uint64 {
	t.Helper()
	counts := map[string]uint64{}
	m, err := r.Telemetry().Metric(t.Context(), "loam.kube.controller.reconcile.duration")
	if errors.Is(err, apptest.ErrNotRecorded) {
		return counts
	}
	require.NoError(t, err)
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "reconcile.duration is a %T", m.Data)
	for _, dp := range h.DataPoints {
		outcome, _ := dp.Attributes.Value("loam.kube.controller.reconcile.outcome")
		counts[outcome.AsString()] += dp.Count
	}
	return counts
}

// overlaps returns every pair of reconciles, each by a different replica,
// whose intervals overlap.
func overlaps(all []interval) [][2]interval {
	sorted := slices.Clone(all)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].start.Before(sorted[j].start) })
	var found [][2]interval
	// latest holds, for each replica, its reconcile that ends last among
	// those started so far.
	latest := map[string]interval{}
	for _, iv := range sorted {
		for other, prev := range latest {
			if other != iv.replica && prev.end.After(iv.start) {
				found = append(found, [2]interval{prev, iv})
			}
		}
		if prev, ok := latest[iv.replica]; !ok || iv.end.After(prev.end) {
			latest[iv.replica] = iv
		}
	}
	return found
}

// lease returns the controller's Lease in ns, or nil when there is none.
func lease(t *testing.T, k kubernetes.Interface, ns string) *coordinationv1.Lease {
	t.Helper()
	l, err := k.CoordinationV1().Leases(ns).Get(t.Context(), controllerName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return l
}

// holder returns the identity holding the controller's Lease in ns, ""
// when nobody does.
func holder(t *testing.T, k kubernetes.Interface, ns string) string {
	t.Helper()
	l := lease(t, k, ns)
	if l == nil {
		return ""
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// revision reads a resourceVersion as the etcd revision it is. The API
// says resourceVersions are opaque; kubetest's API server stores in etcd,
// where every write, of any object, takes the next revision, so ordering
// them orders the writes.
func revision(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	require.NoError(t, err, "resourceVersion %q", rv)
	return n
}

// percentiles returns the minimum, median and maximum of ds.
func percentiles(ds []time.Duration) (lowest, median, highest time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[0], s[len(s)/2], s[len(s)-1]
}

// network is an App's network: the real one, until the test cuts it,
// which closes every connection and refuses every dial, as a replica cut
// off from the API server sees it.
type network = apptest.Switch
