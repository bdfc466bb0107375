package queue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/adapters/clock"
	"github.com/loam-dev/loam/adapters/queue"
	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
	"github.com/loam-dev/loam/ports/portsmock"
)

// afterHandler takes passTime over each pass, on the bubble's clock. Its
// first pass over the key after returns an After of wait; it notes when
// each later pass over that key began.
type afterHandler struct {
	after ports.Key
	wait  time.Duration

	mu     sync.Mutex
	passes map[ports.Key]int
	began  []time.Time
}

// passTime is how long each reconcile takes.
const passTime = 10 * time.Millisecond

func (h *afterHandler) Reconcile(ctx context.Context, obj ports.Object) (ports.Result, error) {
	key := ports.Key{Namespace: "default", Name: string(obj.UID)}
	h.mu.Lock()
	h.passes[key]++
	n := h.passes[key]
	if key == h.after && n > 1 {
		h.began = append(h.began, time.Now())
	}
	h.mu.Unlock()
	time.Sleep(passTime)
	if key == h.after && n == 1 {
		return ports.Result{After: h.wait}, nil
	}
	return ports.Result{}, nil
}

func (*afterHandler) Finalize(context.Context, ports.Object) error { return nil }

// TestQueue_an_After_runs_at_its_time_not_behind_the_initial_list runs a
// reconcile loop on the queue with one worker over 1,000 keys of an
// initial list, 10 ms a reconcile: the first key's After of 1 s is a
// requeue, handed out ahead of the 900-odd initial keys still waiting when
// it comes due, so it runs within one reconcile of its due time. Queued
// in the background, as it was before requeues had a class of their own,
// it ran some 9 s late, once the whole list had drained.
func TestQueue_an_After_runs_at_its_time_not_behind_the_initial_list(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			initial = 1000
			wait    = time.Second
		)
		ctrl := gomock.NewController(t)
		source := portsmock.NewMockObjectSource(ctrl)
		source.EXPECT().Get(gomock.Any()).DoAndReturn(func(key ports.Key) (ports.Object, bool, error) {
			return ports.Object{UID: types.UID(key.Name), JSON: []byte(`{}`)}, true, nil
		}).AnyTimes()
		rec := portsmock.NewMockRecorder(ctrl)
		rec.EXPECT().ReconcileStarted(gomock.Any(), gomock.Any()).DoAndReturn(
			func(ctx context.Context, _ ports.Key) context.Context { return ctx }).AnyTimes()
		rec.EXPECT().ReconcileEnded(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes()

		first := k("k0")
		h := &afterHandler{after: first, wait: wait, passes: map[ports.Key]int{}}
		q := queue.New(queue.Config{Name: "c"})
		l, err := reconcile.New(reconcile.Config{
			Source: source, Writer: portsmock.NewMockWriter(ctrl), Queue: q,
			Handler: h, Recorder: rec, Clock: clock.Real{},
		})
		require.NoError(t, err)
		start := time.Now()
		for i := range initial {
			l.Notify(ports.Event{Key: k(fmt.Sprintf("k%d", i)), Initial: true})
		}
		var worker sync.WaitGroup
		worker.Go(func() {
			for l.Next(context.Background()) {
			}
		})
		// Long enough for the whole list to drain, whatever the order.
		time.Sleep(initial*passTime + 2*wait)
		synctest.Wait()
		l.Stop()
		worker.Wait()

		h.mu.Lock()
		defer h.mu.Unlock()
		require.Len(t, h.began, 1, "the After ran once")
		// The After was set as the first pass ended.
		due := start.Add(passTime + wait)
		late := h.began[0].Sub(due)
		t.Logf("the After ran %v after its due time (%v after the start)", late, h.began[0].Sub(start))
		require.GreaterOrEqual(t, late, time.Duration(0))
		require.LessOrEqual(t, late, passTime, "the After waited for at most the reconcile under way at its due time")
		for i := range initial {
			require.Positive(t, h.passes[k(fmt.Sprintf("k%d", i))], "every initial key was reconciled")
		}
	})
}
