package kube

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/adapters/apply"
	"github.com/loam-dev/loam/adapters/lease"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/ports"
)

// The tests in this file run a Controller as NewController assembles it,
// on client-go's fakes, in synctest bubbles: a fake elector grants and
// takes the Lease, and a writer applies statuses and finalizers to the
// fake's objects as the API server would. They test the assembly — the
// informers, the queue and the telemetry wired into the runtime — and
// kube's own errors; every path of the runtime itself is tested on mocks
// in domain/controller, and the whole App against a real API server in
// kubetest/e2e.

type cacheSpec struct {
	Size int32 `json:"size"`
}

type cacheStatus struct {
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
}

var (
	caches = Resource[cacheSpec, cacheStatus]{
		Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached", Plural: "memcacheds", Scope: Namespaced,
	}
	memcacheds  = caches.GVR()
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

type cacheObject = Object[cacheSpec, cacheStatus]

func memcached(name string, size int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1alpha1",
		"kind":       "Memcached",
		"metadata":   map[string]any{"namespace": "ns", "name": name, "uid": name + "-uid"},
		"spec":       map[string]any{"size": size},
	}}
}

func deploymentOf(owner string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: owner, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached", Name: owner, UID: types.UID(owner + "-uid"), Controller: ptr.To(true),
		}}},
	}
}

// reconciles counts a Reconciler's calls, by object name.
type reconciles struct {
	mu     sync.Mutex
	counts map[string]int
}

func (r *reconciles) start(name string) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	r.counts[name]++
	return func() {}
}

func (r *reconciles) of(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[name]
}

// fakeElector is a ports.Elector the test grants the Lease of, keeping
// the adapter's promise: it releases the Lease only after the leader's
// function returned.
type fakeElector struct {
	grant chan struct{}

	mu       sync.Mutex
	released bool
}

func newElector() *fakeElector {
	return &fakeElector{grant: make(chan struct{})}
}

func (e *fakeElector) Run(ctx context.Context, onStarted func(context.Context), onStopped func()) {
	defer onStopped()
	select {
	case <-e.grant:
	case <-ctx.Done():
		return
	}
	leading, cancel := context.WithCancel(ctx)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		onStarted(leading)
	}()
	<-ctx.Done()
	cancel()
	<-returned
	e.mu.Lock()
	defer e.mu.Unlock()
	e.released = true
}

func (e *fakeElector) wasReleased() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.released
}

// trackerWriter applies to the fake's objects as the API server applies:
// a status write, and the finalizer, change the object, which its
// informer sees.
type trackerWriter struct {
	tracker k8stesting.ObjectTracker

	mu         sync.Mutex
	statuses   map[string]int
	finalizers []string // "+name" for an add, "-name" for a removal
}

func (w *trackerWriter) object(key ports.Key, uid types.UID) (*unstructured.Unstructured, error) {
	o, err := w.tracker.Get(memcacheds, key.Namespace, key.Name)
	if err != nil {
		return nil, err
	}
	u := o.(*unstructured.Unstructured).DeepCopy()
	if u.GetUID() != uid {
		return nil, apierrors.NewConflict(memcacheds.GroupResource(), key.Name, errors.New("uid mismatch"))
	}
	return u, nil
}

func (w *trackerWriter) ApplyStatus(_ context.Context, key ports.Key, uid types.UID, status []byte) ([]byte, error) {
	u, err := w.object(key, uid)
	if err != nil {
		return nil, err
	}
	var s map[string]any
	if err := json.Unmarshal(status, &s); err != nil {
		return nil, err
	}
	u.Object["status"] = s
	w.mu.Lock()
	if w.statuses == nil {
		w.statuses = map[string]int{}
	}
	w.statuses[key.Name]++
	w.mu.Unlock()
	// The tracker stores the status as sent: the answer holds just that.
	return status, w.tracker.Update(memcacheds, u, key.Namespace)
}

func (w *trackerWriter) ApplyFinalizer(_ context.Context, key ports.Key, uid types.UID, finalizer string, present bool) error {
	u, err := w.object(key, uid)
	if err != nil {
		return err
	}
	w.mu.Lock()
	if present {
		u.SetFinalizers(append(u.GetFinalizers(), finalizer))
		w.finalizers = append(w.finalizers, "+"+key.Name)
	} else {
		u.SetFinalizers(slices.DeleteFunc(u.GetFinalizers(), func(f string) bool { return f == finalizer }))
		w.finalizers = append(w.finalizers, "-"+key.Name)
	}
	w.mu.Unlock()
	if present {
		return w.tracker.Update(memcacheds, u, key.Namespace)
	}
	if u.GetDeletionTimestamp() != nil && len(u.GetFinalizers()) == 0 {
		return w.tracker.Delete(memcacheds, key.Namespace, key.Name)
	}
	return w.tracker.Update(memcacheds, u, key.Namespace)
}

func (w *trackerWriter) statusesOf(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.statuses[name]
}

// harness is a Controller of caches on the fakes.
type harness struct {
	ctrl    *Controller
	dynamic *dynamicfake.FakeDynamicClient
	meta    *metadatafake.FakeMetadataClient
	elector *fakeElector
	writer  *trackerWriter
	// trust and faults are what the Controller reads scenarios with.
	trust  *scenarioTrust
	faults *fault.Injector

	served chan error
}

// harnessOptions wrap the ports a harness's Controller is built on, so a
// test can watch what passes through them.
type harnessOptions struct {
	dynamic  func(dynamic.Interface) dynamic.Interface
	writer   func(ports.Writer) ports.Writer
	recorder func(ports.Recorder) ports.Recorder
	// clients, when set, changes the clients the Controller is built on,
	// as a test gives it clients the harness has no fake of.
	clients func(*clients)
}

func newHarness(t *testing.T, settings Settings, rec Reconciler[cacheSpec, cacheStatus], parts []Part, objects ...runtime.Object) *harness {
	t.Helper()
	s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: apptest.NewTelemetry().Telemetry}
	return newHarnessWith(t, s, settings, rec, parts, harnessOptions{}, objects...)
}

// newHarnessWith builds the harness of newHarness in the App that s sets
// up, on the ports as opts wraps them. It checks what it is given as
// NewController does, then builds the Controller as NewController does,
// on client-go's fakes in place of a Client's clients.
func newHarnessWith(t *testing.T, s *app.Setup, settings Settings, rec Reconciler[cacheSpec, cacheStatus], parts []Part, opts harnessOptions, objects ...runtime.Object) *harness {
	t.Helper()
	parts = append([]Part{Owns(deployments)}, parts...)
	client, err := NewClient(s, Connection{Server: "api.test:443", TLS: &tls.Config{MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	_, err = NewController(s, client, settings, caches, rec, parts...)
	require.NoError(t, err)

	h := &harness{
		dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{memcacheds: "MemcachedList"}, objects...),
		elector: newElector(),
		served:  make(chan error, 1),
	}
	scheme := metadatafake.NewTestScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	scheme.AddKnownTypeWithName(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, &metav1.PartialObjectMetadata{})
	h.meta = metadatafake.NewSimpleMetadataClient(scheme)
	h.writer = &trackerWriter{tracker: h.dynamic.Tracker()}

	cl := clients{
		dynamic:  h.dynamic,
		metadata: h.meta,
		elector:  func(lease.Config) (ports.Elector, error) { return h.elector, nil },
		writer: func(apply.Config) (ports.Writer, error) {
			if opts.writer != nil {
				return opts.writer(h.writer), nil
			}
			return h.writer, nil
		},
	}
	if opts.dynamic != nil {
		cl.dynamic = opts.dynamic(h.dynamic)
	}
	if opts.clients != nil {
		opts.clients(&cl)
	}
	tel, err := telemetryOf(s, settings.Name, caches.Kind, settings.Workers)
	require.NoError(t, err)
	if opts.recorder != nil {
		tel.recorder = opts.recorder(tel.recorder)
	}
	p, err := partsOf[cacheObject](parts)
	require.NoError(t, err)
	h.trust, h.faults = p.trust, s.Faults
	t0 := target{gvr: memcacheds, kind: caches.Kind, scope: caches.Scope}
	h.ctrl, err = build(s, settings, t0, handler[cacheObject]{reconcile: resourceReconcile(rec), finalize: p.finalize}, p.commonParts, cl, tel)
	require.NoError(t, err)
	return h
}

func settingsForTest() Settings {
	s := DefaultSettings()
	s.Name = "memcached-controller"
	s.LeaderElection.Namespace = "memcached-system"
	s.LeaderElection.Identity = "pod-a"
	return s
}

// serve runs Serve in the background until ctx ends.
func (h *harness) serve(ctx context.Context) {
	go func() { h.served <- h.ctrl.Serve(ctx) }()
}

func (h *harness) synced(t *testing.T) bool {
	t.Helper()
	ok, err := h.ctrl.Synced().Healthy(t.Context())
	require.NoError(t, err)
	return ok
}

// statusReconciler reports each Memcached's size as its ready replicas.
type statusReconciler struct{ calls *reconciles }

func (r statusReconciler) Reconcile(_ context.Context, m cacheObject) (Result[cacheStatus], error) {
	defer r.calls.start(m.Name)()
	st := m.Status
	st.ReadyReplicas = m.Spec.Size
	return Result[cacheStatus]{Status: &st}, nil
}

func TestServe_reconciles_every_object_and_settles_after_applying_its_status(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := &reconciles{}
		h := newHarness(t, settingsForTest(), statusReconciler{calls}, nil, memcached("a", 1), memcached("b", 2))
		ctx, stop := context.WithCancel(t.Context())
		h.serve(ctx)
		synctest.Wait()
		require.True(t, h.synced(t), "synced on a standby")
		require.Zero(t, calls.of("a"), "a standby reconciles nothing")

		close(h.elector.grant)
		synctest.Wait()
		for _, name := range []string{"a", "b"} {
			// The status applied changes the object, which is reconciled
			// once more, returns the same status, and settles.
			require.Equal(t, 2, calls.of(name), name)
			require.Equal(t, 1, h.writer.statusesOf(name), name)
		}
		got, err := h.dynamic.Tracker().Get(memcacheds, "ns", "b")
		require.NoError(t, err)
		status, err := json.Marshal(got.(*unstructured.Unstructured).Object["status"])
		require.NoError(t, err)
		require.JSONEq(t, `{"readyReplicas":2}`, string(status))

		// A change is reconciled.
		changed := memcached("a", 3)
		require.NoError(t, h.dynamic.Tracker().Update(memcacheds, changed, "ns"))
		synctest.Wait()
		require.Equal(t, 4, calls.of("a"))

		stop()
		require.NoError(t, <-h.served)
		require.True(t, h.elector.wasReleased())
		require.False(t, h.synced(t), "unhealthy once Serve returned")
	})
}

// listLimits records the Limit of every list of the dynamic client.
type listLimits struct {
	dynamic.Interface
	mu     sync.Mutex
	limits []int64
}

func (l *listLimits) record(opts metav1.ListOptions) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limits = append(l.limits, opts.Limit)
}

func (l *listLimits) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return limitedResource{l.Interface.Resource(gvr), l}
}

type limitedResource struct {
	dynamic.NamespaceableResourceInterface
	l *listLimits
}

func (r limitedResource) Namespace(ns string) dynamic.ResourceInterface {
	return limitedNamespace{r.NamespaceableResourceInterface.Namespace(ns), r.l}
}

func (r limitedResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	r.l.record(opts)
	return r.NamespaceableResourceInterface.List(ctx, opts)
}

type limitedNamespace struct {
	dynamic.ResourceInterface
	l *listLimits
}

func (r limitedNamespace) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	r.l.record(opts)
	return r.ResourceInterface.List(ctx, opts)
}

func TestServe_lists_once_with_a_limit_of_1_before_watching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &listLimits{}
		s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: apptest.NewTelemetry().Telemetry}
		h := newHarnessWith(t, s, settingsForTest(), statusReconciler{&reconciles{}}, nil, harnessOptions{
			dynamic: func(d dynamic.Interface) dynamic.Interface { l.Interface = d; return l },
		})
		ctx, stop := context.WithCancel(t.Context())
		h.serve(ctx)
		synctest.Wait()
		stop()
		require.NoError(t, <-h.served)
		require.NotEmpty(t, l.limits)
		require.Equal(t, int64(1), l.limits[0], "the first list, before the informer's")
	})
}

func TestServe_fails_naming_a_resource_the_API_server_doesn_t_serve(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resource string
		want     string
	}{
		{"the resource", "memcacheds", "kube: listing cache.example.com/v1alpha1, Resource=memcacheds: the server could not find the requested resource"},
		{"an owned resource", "deployments", "kube: listing apps/v1, Resource=deployments: the server could not find the requested resource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, settingsForTest(), statusReconciler{&reconciles{}}, nil)
				notFound := func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewGenericServerResponse(404, "list", schema.GroupResource{}, "", "", 0, false)
				}
				h.dynamic.PrependReactor("list", tc.resource, notFound)
				h.meta.PrependReactor("list", tc.resource, notFound)
				err := h.ctrl.Serve(t.Context())
				require.EqualError(t, err, tc.want)
				require.False(t, h.synced(t))
			})
		})
	}
}

// blockingReconciler blocks each reconcile until release is closed or its
// context ends, and reports each context's end.
type blockingReconciler struct {
	started chan string
	release chan struct{}
	// ended receives the cause of each reconcile's context ending, or nil
	// when it returned with its context alive.
	ended chan error
}

func newBlocking() *blockingReconciler {
	return &blockingReconciler{started: make(chan string, 100), release: make(chan struct{}), ended: make(chan error, 100)}
}

func (r *blockingReconciler) Reconcile(ctx context.Context, m cacheObject) (Result[cacheStatus], error) {
	r.started <- m.Name
	select {
	case <-r.release:
		r.ended <- nil
	case <-ctx.Done():
		r.ended <- context.Cause(ctx)
	}
	return Result[cacheStatus]{}, nil
}

func TestShutdown_cancels_the_reconciles_in_flight_when_its_context_ends_first(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newBlocking()
		s := settingsForTest()
		// Longer than the grace period, which ends first.
		s.LeaderElection.DrainTimeout = time.Minute
		h := newHarness(t, s, rec, nil, memcached("a", 1))
		ctx, stop := context.WithCancel(t.Context())
		h.serve(ctx)
		close(h.elector.grant)
		<-rec.started

		// As the App does: Serve's context ends, then Shutdown has the
		// grace period.
		stop()
		grace, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		start := time.Now()
		err := h.ctrl.Shutdown(grace)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "kube: controller memcached-controller: shutdown: ")
		require.Equal(t, 20*time.Second, time.Since(start))
		cause := <-rec.ended
		require.ErrorIs(t, cause, context.DeadlineExceeded, "cancelled, with Shutdown's error as the cause")
		require.NoError(t, <-h.served)
		require.True(t, h.elector.wasReleased())
	})
}

// At SIGTERM, a reconcile still running DrainTimeout (15s by default)
// after the hand-off began is cancelled with ErrDrainTimeout, within the
// App's 20-second grace period, and the Lease is released once it
// returned.
func TestShutdown_cancels_a_reconcile_still_running_DrainTimeout_after_SIGTERM(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newBlocking()
		h := newHarness(t, settingsForTest(), rec, nil, memcached("a", 1))
		ctx, stop := context.WithCancel(t.Context())
		h.serve(ctx)
		close(h.elector.grant)
		<-rec.started

		stop()
		grace, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		start := time.Now()
		require.NoError(t, h.ctrl.Shutdown(grace))
		require.Equal(t, DefaultSettings().LeaderElection.DrainTimeout, time.Since(start))
		require.ErrorIs(t, <-rec.ended, ErrDrainTimeout)
		require.NoError(t, <-h.served)
		require.True(t, h.elector.wasReleased())
	})
}

func TestServe_retries_errors_with_backoff_and_After_after_that_long(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			times = map[string][]time.Duration{}
		)
		start := time.Now()
		fails := 2
		h := newHarness(t, settingsForTest(), ReconcilerFunc[cacheSpec, cacheStatus](func(_ context.Context, m cacheObject) (Result[cacheStatus], error) {
			mu.Lock()
			defer mu.Unlock()
			times[m.Name] = append(times[m.Name], time.Since(start))
			switch m.Name {
			case "failing":
				if fails > 0 {
					fails--
					return Result[cacheStatus]{After: time.Hour}, errors.New("the Deployment can't be applied")
				}
			case "polling":
				return Result[cacheStatus]{After: time.Minute}, nil
			}
			return Result[cacheStatus]{}, nil
		}), nil, memcached("failing", 1), memcached("polling", 1))
		ctx, stop := context.WithCancel(t.Context())
		close(h.elector.grant)
		h.serve(ctx)
		time.Sleep(2*time.Minute + time.Second)
		stop()
		require.NoError(t, <-h.served)

		mu.Lock()
		defer mu.Unlock()
		f := times["failing"]
		require.Len(t, f, 3, "two failures, then a success that settles; an error's After is ignored")
		require.Equal(t, 5*time.Millisecond, f[1]-f[0])
		require.Equal(t, 10*time.Millisecond, f[2]-f[1])
		p := times["polling"]
		require.Len(t, p, 3)
		require.Equal(t, time.Minute, p[1]-p[0])
		require.Equal(t, time.Minute, p[2]-p[1])
	})
}

func TestServe_reconciles_the_owner_of_an_owned_resource_that_changes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := &reconciles{}
		h := newHarness(t, settingsForTest(), ReconcilerFunc[cacheSpec, cacheStatus](func(_ context.Context, m cacheObject) (Result[cacheStatus], error) {
			defer calls.start(m.Name)()
			return Result[cacheStatus]{}, nil
		}), nil, memcached("a", 1))
		ctx, stop := context.WithCancel(t.Context())
		close(h.elector.grant)
		h.serve(ctx)
		synctest.Wait()
		require.Equal(t, 1, calls.of("a"))

		d := deploymentOf("a")
		require.NoError(t, h.meta.Tracker().Create(deployments, d, "ns"))
		synctest.Wait()
		require.Equal(t, 2, calls.of("a"), "added")
		d.Labels = map[string]string{"scaled": "by hand"}
		require.NoError(t, h.meta.Tracker().Update(deployments, d, "ns"))
		synctest.Wait()
		require.Equal(t, 3, calls.of("a"), "changed")
		require.NoError(t, h.meta.Tracker().Delete(deployments, "ns", "a"))
		synctest.Wait()
		require.Equal(t, 4, calls.of("a"), "deleted")
		stop()
		require.NoError(t, <-h.served)
	})
}

func TestServe_holds_objects_with_a_Finalize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := &reconciles{}
		var (
			mu        sync.Mutex
			finalized []string
			failNext  = true
		)
		finalize := Finalize("cache.example.com/finalizer", func(_ context.Context, m cacheObject) error {
			mu.Lock()
			defer mu.Unlock()
			finalized = append(finalized, m.Name)
			if failNext {
				failNext = false
				return errors.New("the backups can't be deleted yet")
			}
			return nil
		})
		h := newHarness(t, settingsForTest(), ReconcilerFunc[cacheSpec, cacheStatus](func(_ context.Context, m cacheObject) (Result[cacheStatus], error) {
			defer calls.start(m.Name)()
			require.Contains(t, m.Finalizers, "cache.example.com/finalizer", "added before the first reconcile")
			return Result[cacheStatus]{}, nil
		}), []Part{finalize}, memcached("a", 1))
		ctx, stop := context.WithCancel(t.Context())
		close(h.elector.grant)
		h.serve(ctx)
		synctest.Wait()
		require.Equal(t, 1, calls.of("a"))
		require.Equal(t, []string{"+a"}, h.writer.finalizers)

		// Deleting: the API server sets the timestamp, and the finalizer
		// holds the object.
		o, err := h.dynamic.Tracker().Get(memcacheds, "ns", "a")
		require.NoError(t, err)
		deleting := o.(*unstructured.Unstructured).DeepCopy()
		deleting.SetDeletionTimestamp(ptr.To(metav1.Now()))
		require.NoError(t, h.dynamic.Tracker().Update(memcacheds, deleting, "ns"))
		time.Sleep(time.Second)
		synctest.Wait()

		mu.Lock()
		require.Equal(t, []string{"a", "a"}, finalized, "an error retries Finalize")
		mu.Unlock()
		require.Equal(t, []string{"+a", "-a"}, h.writer.finalizers)
		require.Equal(t, 1, calls.of("a"), "never the Reconciler once deleting")
		_, err = h.dynamic.Tracker().Get(memcacheds, "ns", "a")
		require.True(t, apierrors.IsNotFound(err), "gone once the finalizer is removed")
		stop()
		require.NoError(t, <-h.served)
	})
}

func TestServe_warns_when_the_Lease_timings_don_t_fence_leadership(t *testing.T) {
	tests := []struct {
		name                string
		lease, renew, retry time.Duration
		wantWarning         string
	}{
		{"Kubernetes' defaults", 15 * time.Second, 10 * time.Second, 2 * time.Second, ""},
		{"a margin of a second", 13 * time.Second, 10 * time.Second, 2 * time.Second, ""},
		{"a millisecond longer, which the Lease's whole seconds drop", 12*time.Second + time.Millisecond, 10 * time.Second, 2 * time.Second,
			"LeaderElection.LeaseDuration 12.001s, which the Lease counts as 12s from up to 0s before the last renewal, is not longer than RenewDeadline 10s + RetryPeriod 2s"},
		{"exactly RenewDeadline + RetryPeriod", 12 * time.Second, 10 * time.Second, 2 * time.Second,
			"LeaderElection.LeaseDuration 12s, which the Lease counts as 12s from up to 0s before the last renewal, is not longer than RenewDeadline 10s + RetryPeriod 2s"},
		{"renewals 0.5s apart share a second", 3 * time.Second, 2 * time.Second, 500 * time.Millisecond,
			"LeaderElection.LeaseDuration 3s, which the Lease counts as 3s from up to 500ms before the last renewal, is not longer than RenewDeadline 2s + RetryPeriod 500ms"},
		{"within the spec's bounds, but unfenced", 11 * time.Second, 10 * time.Second, 2 * time.Second,
			"LeaderElection.LeaseDuration 11s, which the Lease counts as 11s from up to 0s before the last renewal, is not longer than RenewDeadline 10s + RetryPeriod 2s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tel := apptest.NewTelemetry()
				s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: tel.Telemetry}
				settings := settingsForTest()
				settings.LeaderElection.LeaseDuration = tt.lease
				settings.LeaderElection.RenewDeadline = tt.renew
				settings.LeaderElection.RetryPeriod = tt.retry
				h := newHarnessWith(t, s, settings, statusReconciler{&reconciles{}}, nil, harnessOptions{})
				ctx, stop := context.WithCancel(t.Context())
				h.serve(ctx)
				synctest.Wait()
				stop()
				require.NoError(t, <-h.served)

				got := tel.ExceptionMessages("leadership is not fenced")
				if tt.wantWarning == "" {
					require.Empty(t, got)
					return
				}
				require.Len(t, got, 1)
				require.Contains(t, got[0], tt.wantWarning)
				for _, r := range tel.Records() {
					if r.Body().AsString() != "leadership is not fenced" {
						continue
					}
					require.Equal(t, "WARN", r.SeverityText())
					attrs := map[string]string{}
					r.WalkAttributes(func(kv attribute.KeyValue) bool {
						attrs[string(kv.Key)] = kv.Value.AsString()
						return true
					})
					require.Equal(t, "memcached-controller", attrs["loam.kube.controller.name"])
					require.Equal(t, tt.lease.String(), attrs["loam.kube.leader_election.lease_duration"])
					require.Equal(t, tt.renew.String(), attrs["loam.kube.leader_election.renew_deadline"])
					require.Equal(t, tt.retry.String(), attrs["loam.kube.leader_election.retry_period"])
				}
			})
		})
	}
}
