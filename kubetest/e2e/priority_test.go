package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/adapters/queue"
	loamtelemetry "github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// gatedLog is a Reconciler of ConfigMaps that notes the name of each
// ConfigMap it reconciles, in order, and holds its first reconcile until
// the gate opens.
type gatedLog struct {
	gate chan struct{}

	mu    sync.Mutex
	names []string
}

func (g *gatedLog) Reconcile(ctx context.Context, cm corev1.ConfigMap) (time.Duration, error) {
	g.mu.Lock()
	g.names = append(g.names, cm.Name)
	first := len(g.names) == 1
	g.mu.Unlock()
	if first {
		select {
		case <-g.gate:
		case <-ctx.Done():
		}
	}
	return 0, nil
}

func (g *gatedLog) reconciled() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.names)
}

// The priority queue: with one worker, held in the first reconcile of a
// new leader's initial list, the test changes some of the ConfigMaps
// still queued and creates others. Once the gate opens, the worker takes
// every change before the rest of the initial list, in the order they
// came, except for one initial key after every ChangesPerBackground
// changes in a row; then it drains the initial list, every key of it
// once. No reconcile writes anything, so nothing else is queued: the
// order is exact, with no timing in it.
func TestController_reconciles_changes_ahead_of_the_initial_list_which_still_drains(t *testing.T) {
	t.Parallel()
	const (
		initial = 300
		updated = 12 // initial ConfigMaps the test changes while they wait
		created = 13
	)
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	admin := adminClients(t, c).kube
	cms := admin.CoreV1().ConfigMaps(ns)
	for i := range initial {
		_, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("initial-%03d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	listed, err := cms.List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	n := len(listed.Items) // the test's, and any the cluster made

	rec := &gatedLog{gate: make(chan struct{})}
	t.Cleanup(func() { closeOnce(rec.gate) })
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("priority-controller", ns, "pod-0")
		settings.Namespace = ns
		settings.Workers = 1
		return kube.NewKindController(s, client, settings, configMaps, rec)
	})

	// The leader has queued the whole initial list, and its one worker is
	// held in the first reconcile.
	wait.For(t, time.Minute, func() bool { return queueAdds(t, a) == int64(n) && len(rec.reconciled()) == 1 },
		"the initial list isn't queued, or no reconcile began", a)
	held := rec.reconciled()[0]

	// Changes: updates of initial ConfigMaps still queued, which promote
	// them, then creates. The informer hands them over in that order, so
	// once the creates are queued — each a new key, counted — so are the
	// updates.
	var changes []string
	for i := 0; len(changes) < updated; i++ {
		name := fmt.Sprintf("initial-%03d", 100+i)
		if name == held {
			// The informer lists in no set order, so any key may be the
			// held one, which is not waiting to be promoted.
			continue
		}
		_, err := cms.Update(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"changed": "yes"},
		}, metav1.UpdateOptions{})
		require.NoError(t, err)
		changes = append(changes, name)
	}
	for i := range created {
		name := fmt.Sprintf("changed-%03d", i)
		_, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		changes = append(changes, name)
	}
	wait.For(t, time.Minute, func() bool { return queueAdds(t, a) == int64(n+created) }, "the created ConfigMaps aren't queued", a)

	close(rec.gate)
	wait.For(t, time.Minute, func() bool { return len(rec.reconciled()) == n+created }, "not every ConfigMap is reconciled", a)
	got := rec.reconciled()[1:]

	// c for a change, i for an initial key.
	isChange := map[string]bool{}
	for _, name := range changes {
		isChange[name] = true
	}
	var kinds strings.Builder
	var changedOrder []string
	for _, name := range got {
		if isChange[name] {
			kinds.WriteByte('c')
			changedOrder = append(changedOrder, name)
		} else {
			kinds.WriteByte('i')
		}
	}
	run := strings.Repeat("c", queue.ChangesPerBackground)
	want := run + "i" + run + "i" + strings.Repeat("c", len(changes)-2*queue.ChangesPerBackground) +
		strings.Repeat("i", n-1-updated-2)
	require.Equal(t, want, kinds.String(),
		"after the held key, every change goes first but for one initial key after every %d changes in a row", queue.ChangesPerBackground)
	require.Equal(t, changes, changedOrder, "changes go out in the order they came")

	// Every key once: the initial list drained, and a promoted key was
	// reconciled once, not once more from its old place.
	all := append([]string{held}, got...)
	slices.Sort(all)
	require.Len(t, slices.Compact(all), n+created)
	wait.For(t, time.Minute, func() bool { return queueDepth(t, a) == 0 }, "keys still wait", a)
	require.Len(t, rec.reconciled(), n+created, "nothing was reconciled twice")

	require.Equal(t, 0, a.Stop())
	require.Empty(t, a.failure())
}

// closeOnce closes ch unless it is closed already.
func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// queueAdds returns the App's queue.adds: the keys its queue took that
// weren't waiting already.
func queueAdds(t *testing.T, a *controllerApp) int64 {
	t.Helper()
	n, err := a.Telemetry().Total(t.Context(), loamtelemetry.QueueAddsName)
	if errors.Is(err, apptest.ErrNotRecorded) {
		return 0 // no key added yet
	}
	require.NoError(t, err)
	return n
}

// queueDepth returns the App's queue.depth: the keys waiting.
func queueDepth(t *testing.T, a *controllerApp) int64 {
	t.Helper()
	n, err := a.Telemetry().Total(t.Context(), loamtelemetry.QueueDepthName)
	require.NoError(t, err)
	return n
}
