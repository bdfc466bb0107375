package kube

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSkipStatusOnly_keeps_what_the_status_alone_can_t_change(t *testing.T) {
	base := metav1.ObjectMeta{
		Name: "a", ResourceVersion: "1", Generation: 3,
		Labels: map[string]string{"app": "memcached"}, Annotations: map[string]string{"note": "x"},
		Finalizers: []string{"cache.example.com/finalizer"},
	}
	now := metav1.Now()
	for _, c := range []struct {
		name   string
		change func(m *metav1.ObjectMeta)
		keep   bool
	}{
		{"the status alone, with a new resourceVersion", func(*metav1.ObjectMeta) {}, false},
		{"managedFields", func(m *metav1.ObjectMeta) { m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "loam"}} }, false},
		{"the owner references", func(m *metav1.ObjectMeta) { m.OwnerReferences = []metav1.OwnerReference{{Name: "x"}} }, false},
		{"the generation", func(m *metav1.ObjectMeta) { m.Generation++ }, true},
		{"a label", func(m *metav1.ObjectMeta) { m.Labels = map[string]string{"app": "other"} }, true},
		{"no labels", func(m *metav1.ObjectMeta) { m.Labels = nil }, true},
		{"an annotation", func(m *metav1.ObjectMeta) { m.Annotations = map[string]string{"note": "y"} }, true},
		{"the finalizers", func(m *metav1.ObjectMeta) { m.Finalizers = nil }, true},
		{"the deletion timestamp", func(m *metav1.ObjectMeta) { m.DeletionTimestamp = &now }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			old, new := base.DeepCopy(), base.DeepCopy()
			new.ResourceVersion = "2"
			c.change(new)
			require.Equal(t, c.keep, SkipStatusOnly().keep(old, new))
		})
	}
	// The deletion timestamp is compared by its time, not its pointer.
	old, new := base.DeepCopy(), base.DeepCopy()
	old.DeletionTimestamp, new.DeletionTimestamp = &now, &metav1.Time{Time: now.Time}
	require.False(t, SkipStatusOnly().keep(old, new))

	// An object with no generation, such as a ConfigMap, whose data may
	// change with nothing of its metadata: every update is kept.
	old, new = base.DeepCopy(), base.DeepCopy()
	old.Generation, new.Generation, new.ResourceVersion = 0, 0, "2"
	require.True(t, SkipStatusOnly().keep(old, new))
}

// generational returns a Memcached of size whose generation is gen, as
// the API server gives one with a status subresource: client-go's fake
// gives none.
func generational(name string, size, gen int64) *unstructured.Unstructured {
	u := memcached(name, size)
	u.SetGeneration(gen)
	return u
}

func TestServe_with_SkipStatusOnly_reconciles_once_for_a_status_apply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := &reconciles{}
		h := newHarness(t, settingsForTest(), statusReconciler{calls}, []Part{FilterUpdates(SkipStatusOnly())}, generational("a", 1, 1))
		ctx, stop := context.WithCancel(t.Context())
		h.serve(ctx)
		synctest.Wait()
		close(h.elector.grant)
		synctest.Wait()
		require.Equal(t, 1, h.writer.statusesOf("a"))
		require.Equal(t, 1, calls.of("a"), "the status apply, which changes the status alone, is skipped")

		// A change of spec is a new generation, which is reconciled, and
		// applies a status once more, which is skipped.
		require.NoError(t, h.dynamic.Tracker().Update(memcacheds, generational("a", 3, 2), "ns"))
		synctest.Wait()
		require.Equal(t, 2, calls.of("a"))
		require.Equal(t, 2, h.writer.statusesOf("a"))

		stop()
		require.NoError(t, <-h.served)
	})
}
