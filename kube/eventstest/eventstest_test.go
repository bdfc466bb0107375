package eventstest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kube/eventstest"
)

type spec struct{ Replicas int32 }

type status struct{ Ready int32 }

// A Reconciler's RecordEvent, in a Recorder's context, records on the
// object into memory, with the related object and action it names; the
// checks are RecordEvent's own, so a bad Event fails as it would in a
// Controller and is not recorded.
func TestRecorder_records_what_RecordEvent_is_handed(t *testing.T) {
	m := kube.Object[spec, status]{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cache", UID: "u1"}}
	d := kube.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "cache", UID: "d1"}
	reconcile := func(ctx context.Context, _ kube.Object[spec, status]) error {
		if err := kube.RecordEvent(ctx, kube.Normal, "Scaled", "to 3", kube.Related(d), kube.Action("Scale")); err != nil {
			return err
		}
		return kube.RecordEvent(ctx, kube.Warning, "not CamelCase", "")
	}
	rec := eventstest.New()
	err := reconcile(rec.Context(t, m), m)
	require.ErrorContains(t, err, `kube: RecordEvent: the reason "not CamelCase"`)
	cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "flags", UID: "c1"}}
	require.NoError(t, kube.RecordEvent(rec.FinalizeContext(t, &cm), kube.Normal, "Released", ""))

	require.Equal(t, []eventstest.Event{
		{Namespace: "ns", Name: "cache", UID: "u1", Type: kube.Normal, Reason: "Scaled", Action: "Scale", Note: "to 3", Related: &d},
		{Namespace: "ns", Name: "flags", UID: "c1", Type: kube.Normal, Reason: "Released", Action: "Finalize"},
	}, rec.Events())
}

func TestRecorder_without_records_is_empty(t *testing.T) {
	require.Empty(t, eventstest.New().Events())
	require.ErrorContains(t, kube.RecordEvent(t.Context(), kube.Normal, "Scaled", ""), "the context is not one a Controller handed")
}
