package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
)

// objects is a cache of objects, every one found.
type objects struct{}

func (objects) Get(key ports.Key) (ports.Object, bool, error) {
	return ports.Object{UID: types.UID("uid-" + key.Name), JSON: fmt.Appendf(nil, `{"metadata":{"name":%q}}`, key.Name)}, true, nil
}

// noWrites is a Writer that applies nothing.
type noWrites struct{}

func (noWrites) ApplyStatus(context.Context, ports.Key, types.UID, []byte) ([]byte, error) {
	return nil, nil
}

func (noWrites) ApplyFinalizer(context.Context, ports.Key, types.UID, string, bool) error {
	return nil
}

// handClock is a Clock that moves only when a reconcile moves it.
type handClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *handClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc runs the Loop's timers on package time, which the test's
// synctest bubble fakes.
func (c *handClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

func (c *handClock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// scripted is a Handler whose reconciles each object as its name says,
// taking as long as the script gives it, and making one API request, a
// span, as it starts.
type scripted struct {
	clock  *handClock
	tracer trace.Tracer
}

func (h scripted) Reconcile(ctx context.Context, obj ports.Object) (ports.Result, error) {
	_, request := h.tracer.Start(ctx, "PATCH", trace.WithSpanKind(trace.SpanKindClient))
	request.End()
	var o metav1.PartialObjectMetadata
	if err := json.Unmarshal(obj.JSON, &o); err != nil {
		return ports.Result{}, err
	}
	switch o.Name {
	case "ok":
		h.clock.step(10 * time.Millisecond)
		return ports.Result{}, nil
	case "fails":
		h.clock.step(20 * time.Millisecond)
		return ports.Result{}, errors.New("the server is on fire")
	case "panics":
		h.clock.step(30 * time.Millisecond)
		var replicas []int
		return ports.Result{}, errors.New(string(rune(replicas[3]))) // index out of range
	case "after":
		h.clock.step(40 * time.Millisecond)
		return ports.Result{After: time.Minute}, nil
	}
	return ports.Result{}, errors.New("no script for " + o.Name)
}

func (scripted) Finalize(context.Context, ports.Object) error { return nil }

// TestALoopsReconcilesThroughTheRecorderAndAQueue drives the domain's Loop
// with the Recorder and a real client-go work queue measured by it, as the
// controller does, through a known sequence: a success, an error, a panic
// and a success with a Result.After.
func TestALoopsReconcilesThroughTheRecorderAndAQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec, tel := newRecorder(t)
		q := newQueue(t, rec)
		clock := &handClock{now: time.Now()}
		loop, err := reconcile.New(reconcile.Config{
			Source:   objects{},
			Writer:   noWrites{},
			Queue:    q,
			Handler:  scripted{clock: clock, tracer: tel.TracerProvider.Tracer("otelhttp")},
			Recorder: rec,
			Clock:    clock,
		})
		require.NoError(t, err)

		keys := []ports.Key{{Namespace: "cache", Name: "ok"}, {Namespace: "cache", Name: "fails"}, {Namespace: "cache", Name: "panics"}, {Namespace: "cache", Name: "after"}}
		for _, k := range keys {
			q.Add(k)
		}
		time.Sleep(2 * time.Second) // every key waits 2s
		for range keys {
			require.True(t, loop.Next(t.Context()))
		}

		// The reconciles.
		require.ElementsMatch(t, []histogramPoint{
			{Attributes: outcome("success"), Count: 2, Sum: 0.05},
			{Attributes: outcome("error"), Count: 1, Sum: 0.02},
			{Attributes: outcome("panic"), Count: 1, Sum: 0.03},
		}, histogram(t, tel, telemetry.ReconcileDurationName))

		spans := tel.SpansNamed("reconcile Memcached")
		require.Len(t, spans, 4)
		requests := tel.SpansNamed("PATCH")
		require.Len(t, requests, 4)
		for i, s := range spans {
			require.False(t, s.Parent.IsValid(), "every reconcile is a root span")
			require.Equal(t, s.SpanContext.SpanID(), requests[i].Parent.SpanID(), "its request is its child")
			require.Equal(t, "cache", attrs(s.Attributes)["k8s.namespace.name"])
			name := attrs(s.Attributes)["loam.kube.object.name"]
			wantStatus := codes.Unset
			if name == "fails" || name == "panics" {
				wantStatus = codes.Error
			}
			require.Equal(t, wantStatus, s.Status.Code, name)
		}

		failed := recordsWithBody(tel, "reconcile failed")
		require.Len(t, failed, 1, "the error alone is a failure")
		require.Equal(t, "fails", recordAttrs(failed[0])["loam.kube.object.name"])
		panicked := recordsWithBody(tel, "reconcile panicked")
		require.Len(t, panicked, 1)
		p := recordAttrs(panicked[0])
		require.Equal(t, "panics", p["loam.kube.object.name"])
		require.Equal(t, "runtime.boundsError", p["exception.type"])
		require.Equal(t, "runtime error: index out of range [3] with length 0", p["exception.message"])
		require.True(t, strings.Contains(p["exception.stacktrace"], "telemetry_test.scripted.Reconcile"),
			"the stack the panic was raised on:\n%s", p["exception.stacktrace"])
		require.Len(t, tel.Records(), 2)

		// The queue: four keys that each waited 2s, and the error's key
		// back after its 5ms backoff; the After's key comes back after a
		// minute.
		require.Equal(t, []histogramPoint{
			{Attributes: map[string]string{"loam.kube.controller.name": controllerName}, Count: 4, Sum: 8},
		}, histogram(t, tel, telemetry.QueueDurationName))
		time.Sleep(time.Second + halfTick)
		require.Equal(t, int64(5), counterValue(t, tel, telemetry.QueueAddsName))
		require.Equal(t, int64(1), gaugeValue[int64](t, tel, telemetry.QueueDepthName))
		time.Sleep(time.Minute)
		require.Equal(t, int64(6), counterValue(t, tel, telemetry.QueueAddsName))
		require.Equal(t, int64(2), gaugeValue[int64](t, tel, telemetry.QueueDepthName))
		require.Zero(t, gaugeValue[float64](t, tel, telemetry.UnfinishedDurationName))
		require.Zero(t, gaugeValue[float64](t, tel, telemetry.LongestUnfinishedDurationName))
	})
}
