package reconcile_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/ports"
)

// Workers reconcile different objects at once: each learns its own stored
// status, and each one's settled pass sends nothing. Run under the race
// detector, it checks the memory is shared safely between workers.
func TestLoop_Reconcile_remembers_the_stored_statuses_of_objects_reconciled_at_once(t *testing.T) {
	const workers, rounds = 8, 20
	m := newMocks(t)
	l := m.loop(t, "", nil)
	keys := make([]ports.Key, workers)
	for i := range keys {
		keys[i] = ports.Key{Namespace: "ns", Name: fmt.Sprintf("m-%d", i)}
	}
	// Each key's object holds the defaulted status once its first pass
	// applied it; until then, none.
	var mu sync.Mutex
	applied := map[ports.Key]bool{}
	applies := map[ports.Key]int{}
	m.rec.EXPECT().ReconcileStarted(gomock.Any(), gomock.Any()).DoAndReturn(func(ctx context.Context, _ ports.Key) context.Context { return ctx }).AnyTimes()
	m.rec.EXPECT().ReconcileEnded(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes()
	m.source.EXPECT().Get(gomock.Any()).DoAndReturn(func(k ports.Key) (ports.Object, bool, error) {
		mu.Lock()
		defer mu.Unlock()
		obj := object()
		obj.UID, obj.Status = types.UID("uid-"+k.Name), nil
		if applied[k] {
			obj.Status = []byte(defaulted)
		}
		return obj, true, nil
	}).AnyTimes()
	m.handler.EXPECT().Reconcile(gomock.Any(), gomock.Any()).Return(ports.Result{Status: []byte(asked)}, nil).AnyTimes()
	m.writer.EXPECT().ApplyStatus(gomock.Any(), gomock.Any(), gomock.Any(), []byte(asked)).DoAndReturn(
		func(_ context.Context, k ports.Key, _ types.UID, _ []byte) ([]byte, error) {
			mu.Lock()
			defer mu.Unlock()
			applied[k] = true
			applies[k]++
			return []byte(defaulted), nil
		}).AnyTimes()

	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Go(func() {
			for range rounds {
				l.Reconcile(t.Context(), k)
			}
		})
	}
	wg.Wait()
	require.Equal(t, workers, l.Remembered())
	for _, k := range keys {
		require.Equal(t, 1, applies[k], "%s", k)
	}
}
