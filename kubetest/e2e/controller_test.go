package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
	"github.com/loam-dev/loam/kubetest/wait"
)

const finalizer = "cache.example.com/finalizer"

// newMemcached creates a Memcached of size in ns.
func newMemcached(t *testing.T, d dynamic.Interface, r kube.Resource[memcachedSpec, memcachedStatus], ns, name string, size int32) *unstructured.Unstructured {
	t.Helper()
	created, err := d.Resource(r.GVR()).Namespace(ns).Create(t.Context(), memcached.New(r, ns, name, size), metav1.CreateOptions{})
	require.NoError(t, err)
	return created
}

// createWith creates the Memcached ns/name of size 1 with labels and
// annotations.
func createWith(t *testing.T, ri dynamic.ResourceInterface, r kube.Resource[memcachedSpec, memcachedStatus], ns, name string, labels, annotations map[string]string) *unstructured.Unstructured {
	t.Helper()
	u := memcached.New(r, ns, name, 1)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	created, err := ri.Create(t.Context(), u, metav1.CreateOptions{})
	require.NoError(t, err)
	return created
}

// getMemcached returns the Memcached ns/name decoded, and false when it is
// gone.
func getMemcached(t *testing.T, d dynamic.Interface, r kube.Resource[memcachedSpec, memcachedStatus], ns, name string) (memcachedObject, bool) {
	t.Helper()
	u, err := d.Resource(r.GVR()).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return memcachedObject{}, false
	}
	require.NoError(t, err)
	var m memcachedObject
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &m))
	return m, true
}

func getDeployment(t *testing.T, k kubernetes.Interface, ns, name string) (*appsv1.Deployment, bool) {
	t.Helper()
	d, err := k.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	return d, true
}

func TestController_reconciles_at_start_on_a_change_and_on_a_change_or_deletion_of_what_it_owns(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	first := newMemcached(t, admin.dynamic, r, ns, "first", 1)

	// The Controller runs as a ServiceAccount with the spec's RBAC.
	conn := grant(t, c, ns, "memcached-controller", memcachedRules(r.Group), ns, r.GVR(), deploymentsGVR)
	var calls seen
	a := startController(t, conn, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		kc, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		settings := settingsFor("memcached-controller", ns, "pod-a")
		settings.Namespace = ns
		return kube.NewController(s, client, settings, r, memcachedReconciler{kube: kc, identity: "pod-a", seen: &calls},
			kube.Owns(deploymentsGVR))
	})

	// At start: the Deployment is applied, controlled by the Memcached, and
	// the status says it is pending.
	wait.For(t, time.Minute, func() bool { _, ok := getDeployment(t, admin.kube, ns, "first"); return ok }, "no Deployment", a)
	d, _ := getDeployment(t, admin.kube, ns, "first")
	require.Equal(t, int32(1), *d.Spec.Replicas)
	ref := metav1.GetControllerOf(d)
	require.NotNil(t, ref)
	require.Equal(t, r.Group+"/v1alpha1", ref.APIVersion)
	require.Equal(t, "Memcached", ref.Kind)
	require.Equal(t, first.GetUID(), ref.UID)
	wait.For(t, time.Minute, func() bool {
		m, _ := getMemcached(t, admin.dynamic, r, ns, "first")
		c := meta.FindStatusCondition(m.Status.Conditions, "Available")
		return c != nil && c.Reason == "DeploymentPending" && c.ObservedGeneration == 1
	}, "no Available condition", a)
	require.True(t, a.synced(t))
	m, _ := getMemcached(t, admin.dynamic, r, ns, "first")
	managers := map[string]string{}
	for _, e := range m.ManagedFields {
		managers[e.Manager+"/"+e.Subresource] = string(e.Operation)
	}
	require.Equal(t, "Apply", managers["memcached-controller/status"], "the status is applied under Settings.Name")

	// A change of the spec.
	_, err := admin.dynamic.Resource(r.GVR()).Namespace(ns).Patch(t.Context(), "first", types.MergePatchType, []byte(`{"spec":{"size":2}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	wait.For(t, time.Minute, func() bool { d, _ := getDeployment(t, admin.kube, ns, "first"); return *d.Spec.Replicas == 2 }, "the Deployment doesn't follow the spec", a)
	wait.For(t, time.Minute, func() bool {
		m, _ := getMemcached(t, admin.dynamic, r, ns, "first")
		c := meta.FindStatusCondition(m.Status.Conditions, "Available")
		return c != nil && c.ObservedGeneration == 2
	}, "the condition doesn't observe the new generation", a)

	// A kubectl scale of the Deployment is undone.
	_, err = admin.kube.AppsV1().Deployments(ns).UpdateScale(t.Context(), "first",
		&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}},
		metav1.UpdateOptions{FieldManager: "kubectl"})
	require.NoError(t, err)
	wait.For(t, time.Minute, func() bool { d, _ := getDeployment(t, admin.kube, ns, "first"); return *d.Spec.Replicas == 2 }, "the scale isn't undone", a)

	// A deleted Deployment is applied again.
	before := calls.count("", "first")
	require.NoError(t, admin.kube.AppsV1().Deployments(ns).Delete(t.Context(), "first", metav1.DeleteOptions{}))
	wait.For(t, time.Minute, func() bool {
		d, ok := getDeployment(t, admin.kube, ns, "first")
		return ok && d.UID != "" && calls.count("", "first") > before
	}, "the Deployment isn't applied again", a)

	// An object added while it runs.
	newMemcached(t, admin.dynamic, r, ns, "second", 3)
	wait.For(t, time.Minute, func() bool { _, ok := getDeployment(t, admin.kube, ns, "second"); return ok }, "the new Memcached isn't reconciled", a)

	require.Equal(t, 0, a.Stop(), "SIGTERM: a clean exit")
	require.False(t, a.synced(t))
	require.Empty(t, a.failure())
	require.Empty(t, a.Telemetry().ExceptionMessages("reconcile failed"))
	// client-go's own records, here its leader election's, reach the
	// App's LoggerProvider, not the process's stderr.
	require.NotEmpty(t, a.Telemetry().ExceptionMessages("Successfully acquired lease"))
}

func TestController_applies_status_conditions_with_no_conflict_under_5_workers_and_500_objects(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	const objects = 500

	var (
		failures atomic.Int32
		mu       sync.Mutex
		firstErr error
		running  atomic.Int32
		most     atomic.Int32
	)
	reconciler := kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(_ context.Context, m memcachedObject) (kube.Result[memcachedStatus], error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			old := most.Load()
			if n <= old || most.CompareAndSwap(old, n) {
				break
			}
		}
		time.Sleep(time.Millisecond) // long enough for the workers to overlap
		st := m.Status
		st.ReadyReplicas = m.Spec.Size
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reconciled", ObservedGeneration: m.Generation,
		})
		return kube.Result[memcachedStatus]{Status: &st}, nil
	})
	failing := &recordingFailures{record: func(err error) {
		failures.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}}
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("memcached-controller", ns, "pod-a")
		settings.Namespace = ns
		settings.Workers = 5
		return kube.NewController(s, client, settings, r, failing.wrap(reconciler))
	})

	// The objects are created while the Controller runs, and each is
	// changed by another writer as it is reconciled.
	var wg sync.WaitGroup
	for i := range objects {
		wg.Go(func() {
			name := fmt.Sprintf("m%03d", i)
			newMemcached(t, admin.dynamic, r, ns, name, 1)
			_, err := admin.dynamic.Resource(r.GVR()).Namespace(ns).Patch(t.Context(), name, types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"touched":"by-another-writer"}}}`), metav1.PatchOptions{FieldManager: "another-writer"})
			if err != nil {
				t.Errorf("labelling %s: %v", name, err)
			}
		})
	}
	wg.Wait()

	wait.For(t, time.Minute, func() bool {
		list, err := admin.dynamic.Resource(r.GVR()).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		ready := 0
		for _, u := range list.Items {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			if len(conds) == 1 && conds[0].(map[string]any)["status"] == "True" {
				ready++
			}
		}
		return ready == objects
	}, "not every object has its condition", a)
	require.Zero(t, failures.Load(), "a reconcile failed: %v", firstErr)
	require.LessOrEqual(t, most.Load(), int32(5))
	require.Greater(t, most.Load(), int32(1), "the workers never overlapped")
	require.Equal(t, 0, a.Stop())
}

// recordingFailures wraps a Reconciler to record every error it returns.
type recordingFailures struct{ record func(error) }

func (f *recordingFailures) wrap(r kube.Reconciler[memcachedSpec, memcachedStatus]) kube.Reconciler[memcachedSpec, memcachedStatus] {
	return kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(ctx context.Context, m memcachedObject) (kube.Result[memcachedStatus], error) {
		res, err := r.Reconcile(ctx, m)
		if err != nil {
			f.record(err)
		}
		return res, err
	})
}

func TestController_Finalize_holds_a_deleted_object_until_it_returns_nil(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)

	var (
		reconcilesSeeingFinalizer, reconcilesWithout atomic.Int32
		finalizes                                    atomic.Int32
		blocked                                      atomic.Bool
	)
	blocked.Store(true)
	reconciler := kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(_ context.Context, m memcachedObject) (kube.Result[memcachedStatus], error) {
		if slices.Contains(m.Finalizers, finalizer) {
			reconcilesSeeingFinalizer.Add(1)
		} else {
			reconcilesWithout.Add(1)
		}
		return kube.Result[memcachedStatus]{}, nil
	})
	conn := grant(t, c, ns, "memcached-controller", memcachedRules(r.Group), ns, r.GVR())
	a := startController(t, conn, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("memcached-controller", ns, "pod-a")
		settings.Namespace = ns
		return kube.NewController(s, client, settings, r, reconciler,
			kube.Finalize(finalizer, func(_ context.Context, m memcachedObject) error {
				finalizes.Add(1)
				if m.DeletionTimestamp == nil {
					return errors.New("called for an object that isn't being deleted")
				}
				if blocked.Load() {
					return errors.New("the backups can't be deleted yet")
				}
				return nil
			}))
	})

	newMemcached(t, admin.dynamic, r, ns, "held", 1)
	wait.For(t, time.Minute, func() bool { return reconcilesSeeingFinalizer.Load() > 0 }, "never reconciled", a)
	require.Zero(t, reconcilesWithout.Load(), "the finalizer is added before the first reconcile")
	m, _ := getMemcached(t, admin.dynamic, r, ns, "held")
	require.Equal(t, []string{finalizer}, m.Finalizers)
	var applied bool
	for _, e := range m.ManagedFields {
		applied = applied || (e.Manager == "memcached-controller" && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "")
	}
	require.True(t, applied, "the finalizer is applied under Settings.Name")

	reconciles := reconcilesSeeingFinalizer.Load()
	require.NoError(t, admin.dynamic.Resource(r.GVR()).Namespace(ns).Delete(t.Context(), "held", metav1.DeleteOptions{}))
	// Finalize fails, and is retried with backoff: the object stays.
	wait.For(t, time.Minute, func() bool { return finalizes.Load() >= 3 }, "Finalize isn't retried", a)
	m, ok := getMemcached(t, admin.dynamic, r, ns, "held")
	require.True(t, ok, "held by the finalizer")
	require.NotNil(t, m.DeletionTimestamp)
	require.Equal(t, reconciles, reconcilesSeeingFinalizer.Load(), "never the Reconciler once it is being deleted")

	blocked.Store(false)
	wait.For(t, time.Minute, func() bool { _, ok := getMemcached(t, admin.dynamic, r, ns, "held"); return !ok }, "the finalizer isn't removed", a)
	require.Equal(t, 0, a.Stop())
}

func TestController_Finalize_fails_while_another_field_manager_holds_the_finalizer(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)

	var finalizes atomic.Int32
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("memcached-controller", ns, "pod-a")
		settings.Namespace = ns
		return kube.NewController(s, client, settings, r,
			kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(context.Context, memcachedObject) (kube.Result[memcachedStatus], error) {
				return kube.Result[memcachedStatus]{}, nil
			}),
			kube.Finalize(finalizer, func(context.Context, memcachedObject) error {
				finalizes.Add(1)
				return nil
			}))
	})

	u := newMemcached(t, admin.dynamic, r, ns, "shared", 1)
	wait.For(t, time.Minute, func() bool { m, _ := getMemcached(t, admin.dynamic, r, ns, "shared"); return len(m.Finalizers) == 1 }, "no finalizer", a)
	// Someone else applies the same finalizer, as a hand-made edit might.
	other := applyFinalizer(t, admin.dynamic, r, u, "someone-else", finalizer)
	require.NoError(t, other)

	require.NoError(t, admin.dynamic.Resource(r.GVR()).Namespace(ns).Delete(t.Context(), "shared", metav1.DeleteOptions{}))
	// The controller lets go of it, but it stays, so Finalize is called
	// again and again.
	wait.For(t, time.Minute, func() bool { return finalizes.Load() >= 3 }, "the held finalizer isn't retried", a)
	m, ok := getMemcached(t, admin.dynamic, r, ns, "shared")
	require.True(t, ok)
	require.Equal(t, []string{finalizer}, m.Finalizers)
	var holders []string
	for _, e := range m.ManagedFields {
		if e.FieldsV1 != nil && bytes.Contains(e.FieldsV1.GetRawBytes(), []byte(finalizer)) {
			holders = append(holders, e.Manager)
		}
	}
	require.Equal(t, []string{"someone-else"}, holders, "the controller gave its share up")
	require.Contains(t, a.Telemetry().ExceptionMessages("reconcile failed"),
		`removing finalizer "cache.example.com/finalizer": finalizer "cache.example.com/finalizer" is also set by field manager "someone-else", and stays until it is removed there`)

	// Once the other manager lets go too, the object is gone.
	require.NoError(t, applyFinalizer(t, admin.dynamic, r, u, "someone-else"))
	wait.For(t, time.Minute, func() bool { _, ok := getMemcached(t, admin.dynamic, r, ns, "shared"); return !ok }, "still held", a)
	require.Equal(t, 0, a.Stop())
}

// applyFinalizer applies u's metadata with finalizers under manager.
func applyFinalizer(t *testing.T, d dynamic.Interface, r kube.Resource[memcachedSpec, memcachedStatus], u *unstructured.Unstructured, manager string, finalizers ...string) error {
	t.Helper()
	body := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
		"metadata": map[string]any{"name": u.GetName(), "namespace": u.GetNamespace()},
	}}
	if len(finalizers) > 0 {
		body.SetFinalizers(finalizers)
	}
	_, err := d.Resource(r.GVR()).Namespace(u.GetNamespace()).Apply(t.Context(), u.GetName(), body, metav1.ApplyOptions{FieldManager: manager})
	return err
}

func TestController_exits_1_when_its_resource_isn_t_installed(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := memcachedResource(controllerGroup(ns)) // no CRD
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		return kube.NewController(s, client, settingsFor("memcached-controller", ns, "pod-a"), r,
			kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(context.Context, memcachedObject) (kube.Result[memcachedStatus], error) {
				return kube.Result[memcachedStatus]{}, nil
			}))
	})
	require.Equal(t, 1, a.Wait())
	require.Equal(t, fmt.Sprintf("kube: listing %s/v1alpha1, Resource=memcacheds: the server could not find the requested resource", r.Group), a.failure())
	require.False(t, a.synced(t))
}

// replicas starts n replicas of the Memcached controller, pod-0 to
// pod-<n-1>, one after the other, so pod-0 leads.
func replicas(t *testing.T, conn kube.Connection, r kube.Resource[memcachedSpec, memcachedStatus], ns string, calls *seen, n int, adjust func(*kube.Settings)) []*controllerApp {
	t.Helper()
	var apps []*controllerApp
	for i := range n {
		identity := fmt.Sprintf("pod-%d", i)
		apps = append(apps, startController(t, conn, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
			kc, err := kubernetes.NewForConfig(client.Config())
			if err != nil {
				return nil, err
			}
			settings := settingsFor("memcached-controller", ns, identity)
			settings.Namespace = ns
			if adjust != nil {
				adjust(&settings)
			}
			return kube.NewController(s, client, settings, r, memcachedReconciler{kube: kc, identity: identity, seen: calls},
				kube.Owns(deploymentsGVR))
		}))
		if i == 0 {
			wait.For(t, time.Minute, func() bool { return calls.count("pod-0", "") > 0 }, "pod-0 never leads", wait.All(apps)...)
		}
	}
	for _, a := range apps {
		wait.For(t, time.Minute, func() bool { return a.synced(t) }, "a replica never synced", wait.All(apps)...)
	}
	return apps
}

func holderOf(t *testing.T, k kubernetes.Interface, ns string) string {
	t.Helper()
	l := lease(t, k, ns, "memcached-controller")
	if l == nil {
		return ""
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

func TestController_replicas_SIGTERM_releases_the_Lease_to_the_standby(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	newMemcached(t, admin.dynamic, r, ns, "a", 1)

	var calls seen
	// A Lease long enough that a standby waiting it out would fail the
	// test: only a released Lease is taken over in time.
	apps := replicas(t, c.Connection(), r, ns, &calls, 2, func(s *kube.Settings) {
		s.LeaderElection.LeaseDuration = time.Minute
	})
	require.Equal(t, "pod-0", holderOf(t, admin.kube, ns))

	// Only the leader reconciles, whatever changes.
	newMemcached(t, admin.dynamic, r, ns, "b", 1)
	wait.For(t, time.Minute, func() bool { return calls.count("pod-0", "b") > 0 }, "the leader doesn't reconcile", wait.All(apps)...)
	require.Zero(t, calls.count("pod-1", ""), "the standby reconciled")

	require.Equal(t, 0, apps[0].Stop())
	l := lease(t, admin.kube, ns, "memcached-controller")
	require.NotNil(t, l)
	require.NotEqual(t, "pod-0", ptr.Deref(l.Spec.HolderIdentity, ""), "released on SIGTERM")

	// The standby takes over well within LeaseDuration, and, its caches
	// warm, reconciles every object at once.
	wait.For(t, 30*time.Second, func() bool { return holderOf(t, admin.kube, ns) == "pod-1" }, "the standby doesn't take the Lease", apps[1])
	wait.For(t, time.Minute, func() bool { return calls.count("pod-1", "a") > 0 && calls.count("pod-1", "b") > 0 }, "the new leader doesn't reconcile every object", apps[1])
	newMemcached(t, admin.dynamic, r, ns, "c", 1)
	wait.For(t, time.Minute, func() bool { return calls.count("pod-1", "c") > 0 }, "the new leader doesn't reconcile a new object", apps[1])
	require.Equal(t, 0, apps[1].Stop())
}

func TestController_replicas_a_cut_off_leader_loses_its_Lease_and_the_standby_takes_over(t *testing.T) {
	// Serial: its short Lease must not lapse but by the cut.
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	newMemcached(t, admin.dynamic, r, ns, "a", 1)

	var calls seen
	apps := replicas(t, c.Connection(), r, ns, &calls, 2, shortLease)
	require.Zero(t, calls.count("pod-1", ""))

	// The leader is cut off from the API server, as by a crash: it can't
	// renew the Lease, or release it.
	apps[0].network.Cut()
	// An object created meanwhile reaches the standby's warm cache, and
	// waits in its queue.
	newMemcached(t, admin.dynamic, r, ns, "b", 1)
	require.Equal(t, 1, apps[0].Wait(), "a lost Lease exits 1")
	require.Equal(t, kube.ErrLostLeadership.Error(), apps[0].failure())
	require.Zero(t, calls.count("pod-0", "b"))

	// The standby takes the Lease once LeaseDuration has passed, and
	// reconciles every object.
	wait.For(t, time.Minute, func() bool { return holderOf(t, admin.kube, ns) == "pod-1" }, "the standby doesn't take the Lease", apps[1])
	wait.For(t, time.Minute, func() bool { return calls.count("pod-1", "a") > 0 && calls.count("pod-1", "b") > 0 }, "the new leader doesn't reconcile", apps[1])
	require.Equal(t, 0, apps[1].Stop())
}

func TestController_a_Lease_taken_by_another_ends_Serve_with_ErrLostLeadership(t *testing.T) {
	// Serial: its short Lease must not lapse but by the intruder.
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	newMemcached(t, admin.dynamic, r, ns, "slow", 1)

	started := make(chan struct{})
	var cause atomic.Value
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("memcached-controller", ns, "pod-0")
		settings.Namespace = ns
		shortLease(&settings)
		return kube.NewController(s, client, settings, r,
			kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(ctx context.Context, _ memcachedObject) (kube.Result[memcachedStatus], error) {
				close(started)
				<-ctx.Done()
				cause.Store(context.Cause(ctx))
				return kube.Result[memcachedStatus]{}, ctx.Err()
			}))
	})
	<-started

	// Another replica takes the Lease, between two of the leader's
	// renewals.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l := lease(t, admin.kube, ns, "memcached-controller")
		require.NotNil(t, l)
		l.Spec.HolderIdentity = ptr.To("intruder")
		l.Spec.LeaseDurationSeconds = ptr.To(int32(3600))
		l.Spec.RenewTime = ptr.To(metav1.NowMicro())
		_, err := admin.kube.CoordinationV1().Leases(ns).Update(t.Context(), l, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err)

	require.Equal(t, 1, a.Wait())
	require.Equal(t, kube.ErrLostLeadership.Error(), a.failure())
	got, _ := cause.Load().(error)
	require.ErrorIs(t, got, kube.ErrLostLeadership, "the reconcile in flight is cancelled")
	require.Equal(t, "intruder", holderOf(t, admin.kube, ns), "a Lease it lost isn't released")
}

// defaultDeny is the spec's DefaultDeny KindReconciler: it applies a
// NetworkPolicy that denies every pod of a Namespace any ingress. It
// leaves alone the Namespaces of other tests, which share the cluster.
type defaultDeny struct {
	kube  kubernetes.Interface
	label string
	seen  *seen
}

func (r defaultDeny) Reconcile(ctx context.Context, ns corev1.Namespace) (time.Duration, error) {
	r.seen.add("", ns.Name)
	if ns.Labels["default-deny.e2e.loam.dev/test"] != r.label {
		return 0, nil
	}
	_, err := r.kube.NetworkingV1().NetworkPolicies(ns.Name).Apply(ctx, defaultDenyPolicy(ns), metav1.ApplyOptions{FieldManager: "default-deny", Force: true})
	return 0, err
}

func TestKindController_DefaultDeny_gives_each_Namespace_its_policy_under_the_spec_s_RBAC(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	admin := adminClients(t, c)
	policies := schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}
	namespaces := corev1.SchemeGroupVersion.WithResource("namespaces")

	// A Namespace of the test's own for the controller to find.
	team := ns + "-team"
	_, err := admin.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: team, Labels: map[string]string{"default-deny.e2e.loam.dev/test": ns},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.kube.CoreV1().Namespaces().Delete(context.Background(), team, metav1.DeleteOptions{})
	})

	// The spec's RBAC for DefaultDeny: get, list and watch on namespaces;
	// list, watch, patch and create on networkpolicies; the Lease's Role.
	conn := grant(t, c, ns, "default-deny", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"list", "watch", "patch", "create"}},
	}, ns, namespaces, policies)

	var calls seen
	namespacesKind := kube.Kind[corev1.Namespace]{GVR: namespaces, Kind: "Namespace", Scope: kube.Cluster}
	a := startController(t, conn, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		kc, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		return kube.NewKindController(s, client, settingsFor("default-deny", ns, "pod-0"), namespacesKind,
			defaultDeny{kube: kc, label: ns, seen: &calls},
			kube.Owns(policies))
	})

	wait.For(t, time.Minute, func() bool {
		_, err := admin.kube.NetworkingV1().NetworkPolicies(team).Get(t.Context(), "default-deny", metav1.GetOptions{})
		return err == nil
	}, "no policy", a)
	wait.For(t, time.Minute, func() bool { return calls.count("", "default") > 0 }, "not every Namespace is reconciled", a)
	p, err := admin.kube.NetworkingV1().NetworkPolicies(team).Get(t.Context(), "default-deny", metav1.GetOptions{})
	require.NoError(t, err)
	ref := metav1.GetControllerOf(p)
	require.NotNil(t, ref)
	require.Equal(t, "Namespace", ref.Kind)
	require.Equal(t, team, ref.Name)

	// A hand-made change to the policy is undone: the namespaced policy
	// reconciles its cluster-scoped owner.
	p.Spec.PolicyTypes = append(p.Spec.PolicyTypes, "Egress")
	_, err = admin.kube.NetworkingV1().NetworkPolicies(team).Update(t.Context(), p, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
	require.NoError(t, err)
	wait.For(t, time.Minute, func() bool {
		p, err := admin.kube.NetworkingV1().NetworkPolicies(team).Get(t.Context(), "default-deny", metav1.GetOptions{})
		require.NoError(t, err)
		return len(p.Spec.PolicyTypes) == 1
	}, "the edit isn't undone", a)

	// A deleted policy is applied again.
	require.NoError(t, admin.kube.NetworkingV1().NetworkPolicies(team).Delete(t.Context(), "default-deny", metav1.DeleteOptions{}))
	wait.For(t, time.Minute, func() bool {
		_, err := admin.kube.NetworkingV1().NetworkPolicies(team).Get(t.Context(), "default-deny", metav1.GetOptions{})
		return err == nil
	}, "the policy isn't applied again", a)
	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())
}

// defaultDenyPolicy is the spec's policy: it selects every pod of ns and
// allows them no ingress, and ns controls it.
func defaultDenyPolicy(ns corev1.Namespace) *networkingv1ac.NetworkPolicyApplyConfiguration {
	return networkingv1ac.NetworkPolicy("default-deny", ns.Name).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion("v1").WithKind("Namespace").WithName(ns.Name).WithUID(ns.UID).
			WithController(true)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector()).
			WithPolicyTypes(networkingv1.PolicyTypeIngress))
}
