package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/adapters/apply"
	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
)

// The benchmarks in this file measure the framework's own cost of one
// reconcile: reading the object from the cache, deciding, decoding it
// into the end user's type, encoding the status they return and comparing
// it with the cached one. The end user's Reconcile does nothing, and the
// ports around the Loop do as little as a port can.

type benchSpec struct {
	Size  int32  `json:"size"`
	Image string `json:"image"`
}

type benchStatus struct {
	ReadyReplicas int32              `json:"readyReplicas,omitempty"`
	Conditions    []metav1.Condition `json:"conditions,omitempty"`
}

type benchObject = Object[benchSpec, benchStatus]

// benchContent is a Memcached as the API server sends it, managedFields
// aside: its metadata as the API server fills it, and a status with a
// condition.
func benchContent() map[string]any {
	return map[string]any{
		"apiVersion": "cache.example.com/v1alpha1",
		"kind":       "Memcached",
		"metadata": map[string]any{
			"name": "memcached-sample", "namespace": "default", "uid": "5f1c9a3e-8a52-4a1e-9a4c-0b7f7a1f3c21",
			"resourceVersion": "123456", "generation": int64(3), "creationTimestamp": "2026-01-02T03:04:05Z",
			"finalizers":  []any{"cache.example.com/finalizer"},
			"labels":      map[string]any{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "sample"},
			"annotations": map[string]any{"note": "a Memcached of the benchmarks"},
		},
		"spec": map[string]any{"size": int64(3), "image": "memcached:1.6.26-alpine3.19"},
		"status": map[string]any{
			"readyReplicas": int64(3),
			"conditions": []any{map[string]any{
				"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
				"message": "Deployment has minimum availability.", "observedGeneration": int64(3),
				"lastTransitionTime": "2026-01-02T03:04:05Z",
			}},
		},
	}
}

// BenchmarkDecode measures decoding a cached object, its JSON, into a new
// value of the end user's type.
func BenchmarkDecode(b *testing.B) {
	doc, err := json.Marshal(benchContent())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode[benchObject](doc); err != nil {
			b.Fatal(err)
		}
	}
}

// benchWriter counts the status applies, and answers each with the status
// the API server stored: answer, or the status sent when answer is nil.
type benchWriter struct {
	applies int
	answer  []byte
}

func (w *benchWriter) ApplyStatus(_ context.Context, _ ports.Key, _ types.UID, status []byte) ([]byte, error) {
	w.applies++
	if w.answer != nil {
		return w.answer, nil
	}
	return status, nil
}

func (w *benchWriter) ApplyFinalizer(context.Context, ports.Key, types.UID, string, bool) error {
	return nil
}

type benchQueue struct{}

func (benchQueue) Add(ports.Key)                       {}
func (benchQueue) AddRequeue(ports.Key)                {}
func (benchQueue) AddBackground(ports.Key)             {}
func (benchQueue) Get() (key ports.Key, shutdown bool) { return key, false }
func (benchQueue) Done(ports.Key)                      {}
func (benchQueue) ShutDown()                           {}

type noRecorder struct{}

func (noRecorder) ReconcileStarted(ctx context.Context, _ ports.Key) context.Context { return ctx }
func (noRecorder) ScenarioStripped(context.Context, error)                           {}
func (noRecorder) ReconcileEnded(context.Context, ports.Key, ports.Report)           {}
func (noRecorder) ReconcileCaused(context.Context, []ports.Cause, int)               {}
func (noRecorder) LeaderElectionUnfenced(context.Context, time.Duration, time.Duration, time.Duration) {
}
func (noRecorder) MappingPanicked(context.Context, string, ports.Cause, *ports.Panic) {}
func (noRecorder) ShardChanged(context.Context, ports.ShardChange, int, int)          {}
func (noRecorder) HandOffStuck(context.Context, ports.Key, int, int, time.Duration)   {}

// fixedClock never moves, and counts the timers set on it, which never
// fire.
type fixedClock struct{ timers int }

func (*fixedClock) Now() time.Time { return time.Time{} }

func (c *fixedClock) AfterFunc(time.Duration, func()) func() bool {
	c.timers++
	return func() bool { return true }
}

// BenchmarkReconcile is the framework's cost per reconcile of a Memcached,
// from the cache to the settled key, on the paths a reconcile takes most:
// the status unchanged, changed, and not returned; and a settled object
// whose status the API server stores with a field its schema defaults,
// which the end user's status never holds.
func BenchmarkReconcile(b *testing.B) {
	for _, bc := range []struct {
		name   string
		status func(benchStatus) *benchStatus
		// apply says every pass applies the status.
		apply bool
		// defaulted adds a field to the cached status, as a schema's
		// default does.
		defaulted bool
		// api applies the status with the adapter that sends it, to an
		// API server that answers without a network.
		api bool
	}{
		{name: "status unchanged", status: func(s benchStatus) *benchStatus { return &s }},
		{name: "status changed", status: func(s benchStatus) *benchStatus { s.ReadyReplicas = 2; return &s }, apply: true},
		{name: "no status", status: func(benchStatus) *benchStatus { return nil }},
		{name: "status defaulted, settled", status: func(s benchStatus) *benchStatus { return &s }, defaulted: true},
		{name: "status changed, applied", status: func(s benchStatus) *benchStatus { s.ReadyReplicas = 2; return &s }, apply: true, api: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			gvr := schema.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"}
			content := benchContent()
			if bc.defaulted {
				content["status"].(map[string]any)["phase"] = "Pending"
			}
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{gvr: "MemcachedList"}, &unstructured.Unstructured{Object: content})
			source, err := informer.NewPrimary(client, gvr, informer.Config{
				Notify: func(ports.Event) {}, Logger: logr.Discard(),
			})
			if err != nil {
				b.Fatal(err)
			}
			// The cache as the running informer fills it.
			running := informer.Start(b.Context(), source.Informer())
			b.Cleanup(running.Stop)
			if !running.WaitForSync(b.Context()) {
				b.Fatal("the cache never synced")
			}
			w, clk := &benchWriter{}, &fixedClock{}
			key := ports.Key{Namespace: "default", Name: "memcached-sample"}
			if bc.defaulted {
				cached, _, err := source.Get(key)
				if err != nil {
					b.Fatal(err)
				}
				w.answer = cached.Status
			}
			var writer ports.Writer = w
			applies := func() int { return w.applies }
			if bc.api {
				writer, applies = benchAPIWriter(b, gvr)
			}
			h := handler[benchObject]{reconcile: resourceReconcile(ReconcilerFunc[benchSpec, benchStatus](
				func(_ context.Context, m benchObject) (Result[benchStatus], error) {
					return Result[benchStatus]{Status: bc.status(m.Status)}, nil
				}))}
			l, err := reconcile.New(reconcile.Config{
				Source: source, Writer: writer, Queue: benchQueue{}, Handler: h, Recorder: noRecorder{}, Clock: clk,
				Finalizer: "cache.example.com/finalizer",
				// A Controller always bounds the call, and the bound is a
				// context and a timer of every pass.
				Timeout: DefaultSettings().ReconcileTimeout,
			})
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			if bc.defaulted {
				// The pass that applies the status, and learns how the
				// API server stores it.
				l.Reconcile(ctx, key)
				w.applies = 0
			}
			b.ReportAllocs()
			for b.Loop() {
				l.Reconcile(ctx, key)
			}
			if clk.timers != 0 || (applies() > 0) != bc.apply {
				b.Fatalf("timers %d, applies %d: the benchmark didn't take the path it names", clk.timers, applies())
			}
		})
	}
}

// benchAPIWriter returns the adapter that applies statuses, sending them
// to an API server that answers every apply, without a network, with
// benchContent as it stores the status the benchmarks ask for, and a
// count of the applies it answered.
func benchAPIWriter(b *testing.B, gvr schema.GroupVersionResource) (ports.Writer, func() int) {
	b.Helper()
	content := benchContent()
	content["status"].(map[string]any)["readyReplicas"] = int64(2)
	answer, err := json.Marshal(content)
	if err != nil {
		b.Fatal(err)
	}
	api := &cannedAPI{answer: answer}
	client, err := apply.NewClient(&rest.Config{Host: "https://api.example.com", Transport: api, QPS: -1})
	if err != nil {
		b.Fatal(err)
	}
	w, err := apply.New(apply.Config{Client: client, GVR: gvr, Kind: "Memcached", FieldManager: "memcached-controller"})
	if err != nil {
		b.Fatal(err)
	}
	return w, func() int { return int(api.requests.Load()) }
}

// cannedAPI answers every request with answer, without a network, and
// counts them.
type cannedAPI struct {
	answer   []byte
	requests atomic.Int64
}

func (c *cannedAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/2.0", ProtoMajor: 2,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(bytes.NewReader(c.answer)), ContentLength: int64(len(c.answer)), Request: r,
	}, nil
}
