package reconcile_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
)

// The fakes below do as little as a port can, so the benchmarks measure
// the Loop's own cost: deciding, calling, comparing statuses and settling.

type fakeSource struct{ obj ports.Object }

func (s fakeSource) Get(ports.Key) (ports.Object, bool, error) { return s.obj, true, nil }

type fakeWriter struct{ applies int }

func (w *fakeWriter) ApplyStatus(_ context.Context, _ ports.Key, _ types.UID, status []byte) ([]byte, error) {
	w.applies++
	return status, nil
}

func (w *fakeWriter) ApplyFinalizer(context.Context, ports.Key, types.UID, string, bool) error {
	return nil
}

type fakeQueue struct{}

func (fakeQueue) Add(ports.Key)                       {}
func (fakeQueue) AddRequeue(ports.Key)                {}
func (fakeQueue) AddBackground(ports.Key)             {}
func (fakeQueue) Get() (key ports.Key, shutdown bool) { return key, false }
func (fakeQueue) Done(ports.Key)                      {}
func (fakeQueue) ShutDown()                           {}

type fakeHandler struct{ result ports.Result }

func (h fakeHandler) Reconcile(context.Context, ports.Object) (ports.Result, error) {
	return h.result, nil
}

func (h fakeHandler) Finalize(context.Context, ports.Object) error { return nil }

type fakeRecorder struct{}

func (fakeRecorder) ReconcileStarted(ctx context.Context, _ ports.Key) context.Context { return ctx }
func (fakeRecorder) ScenarioStripped(context.Context, error)                           {}
func (fakeRecorder) ReconcileEnded(context.Context, ports.Key, ports.Report)           {}
func (fakeRecorder) ReconcileCaused(context.Context, []ports.Cause, int)               {}
func (fakeRecorder) LeaderElectionUnfenced(context.Context, time.Duration, time.Duration, time.Duration) {
}
func (fakeRecorder) MappingPanicked(context.Context, string, ports.Cause, *ports.Panic) {}
func (fakeRecorder) ShardChanged(context.Context, ports.ShardChange, int, int)          {}
func (fakeRecorder) HandOffStuck(context.Context, ports.Key, int, int, time.Duration)   {}

// fixedClock never moves, and counts the timers set on it, which never
// fire.
type fixedClock struct{ timers int }

func (*fixedClock) Now() time.Time { return time.Time{} }

func (c *fixedClock) AfterFunc(time.Duration, func()) func() bool {
	c.timers++
	return func() bool { return true }
}

// cachedStatus is a Memcached's status as the cache encodes it, with its
// keys sorted; endUserStatus is the same status as the end user's type
// encodes it, in its fields' order.
const (
	cachedStatus  = `{"conditions":[{"lastTransitionTime":"2026-01-02T03:04:05Z","message":"Deployment has minimum availability.","observedGeneration":3,"reason":"MinimumReplicasAvailable","status":"True","type":"Available"}],"readyReplicas":3}`
	endUserStatus = `{"readyReplicas":3,"conditions":[{"type":"Available","status":"True","observedGeneration":3,"lastTransitionTime":"2026-01-02T03:04:05Z","reason":"MinimumReplicasAvailable","message":"Deployment has minimum availability."}]}`
	// A status whose nil slice the API server keeps as a null.
	nullCachedStatus  = `{"conditions":[{"lastTransitionTime":"2026-01-02T03:04:05Z","message":"Deployment has minimum availability.","observedGeneration":3,"reason":"MinimumReplicasAvailable","status":"True","type":"Available"}],"nodes":null,"readyReplicas":3}`
	nullEndUserStatus = `{"readyReplicas":3,"nodes":null,"conditions":[{"type":"Available","status":"True","observedGeneration":3,"lastTransitionTime":"2026-01-02T03:04:05Z","reason":"MinimumReplicasAvailable","message":"Deployment has minimum availability."}]}`
	// A status the API server stores with a phase its schema defaults,
	// which the end user's status doesn't hold.
	defaultedCachedStatus = `{"conditions":[{"lastTransitionTime":"2026-01-02T03:04:05Z","message":"Deployment has minimum availability.","observedGeneration":3,"reason":"MinimumReplicasAvailable","status":"True","type":"Available"}],"phase":"Pending","readyReplicas":3}`
	changedStatus         = `{"readyReplicas":2,"conditions":[{"type":"Available","status":"True","observedGeneration":3,"lastTransitionTime":"2026-01-02T03:04:05Z","reason":"MinimumReplicasAvailable","message":"Deployment has minimum availability."}]}`
)

func BenchmarkLoop_Reconcile(b *testing.B) {
	for _, bc := range []struct {
		name   string
		status string // "" for a Result with no status
		// cached is the cached object's status, cachedStatus when "".
		cached string
		apply  bool
		// timeout bounds the Handler's call, as kube's Controller always
		// does: what the deadline's context and timer cost a pass.
		timeout time.Duration
	}{
		{name: "no status"},
		{name: "no status, with a deadline", timeout: 5 * time.Minute},
		{name: "status unchanged", status: endUserStatus},
		{name: "status changed", status: changedStatus, apply: true},
		{name: "status defaulted, settled", status: endUserStatus, cached: defaultedCachedStatus},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var res ports.Result
			if bc.status != "" {
				res.Status = []byte(bc.status)
			}
			cached := bc.cached
			if cached == "" {
				cached = cachedStatus
			}
			w, clk := &answering{fakeWriter: &fakeWriter{}}, &fixedClock{}
			if bc.cached != "" {
				// The API server answers a status apply with the status
				// it stores, which the cache holds.
				w.answer = []byte(cached)
			}
			l, err := reconcile.New(reconcile.Config{
				Source:    fakeSource{obj: ports.Object{UID: "uid-1", Finalizers: []string{fin}, Status: []byte(cached)}},
				Writer:    w,
				Queue:     fakeQueue{},
				Handler:   fakeHandler{result: res},
				Recorder:  fakeRecorder{},
				Clock:     clk,
				Finalizer: fin,
				Timeout:   bc.timeout,
			})
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			if bc.cached != "" {
				// The pass that applies the status, and learns how the
				// API server stores it.
				l.Reconcile(ctx, key)
				w.applies = 0
			}
			b.ReportAllocs()
			for b.Loop() {
				l.Reconcile(ctx, key)
			}
			if clk.timers != 0 || (w.applies > 0) != bc.apply {
				b.Fatalf("timers %d, applies %d: the benchmark didn't take the path it names", clk.timers, w.applies)
			}
		})
	}
}

// BenchmarkStatusChanged compares the end user's status, in its fields'
// order, with the cached one, keys sorted: the comparison every pass that
// returns a status makes.
func BenchmarkStatusChanged(b *testing.B) {
	for _, bc := range []struct {
		name, cached, next string
		changed            bool
	}{
		{name: "unchanged", cached: cachedStatus, next: endUserStatus},
		{name: "changed", cached: cachedStatus, next: changedStatus, changed: true},
		{name: "unchanged, a null kept", cached: nullCachedStatus, next: nullEndUserStatus},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cached, next := []byte(bc.cached), []byte(bc.next)
			b.ReportAllocs()
			for b.Loop() {
				if reconcile.StatusChanged(cached, next) != bc.changed {
					b.Fatal("wrong answer")
				}
			}
		})
	}
}
