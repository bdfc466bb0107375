package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/kubetest/wait"
)

// leaseVersions is every version of the controller's Lease from one read
// on, in the order the API server stored them, each read once: a watch
// from that read's resourceVersion.
type leaseVersions struct {
	w        watch.Interface
	versions []*coordinationv1.Lease
}

// watchLease reads the controller's Lease in ns once and watches it from
// there, until the test ends. The read is the first version.
func watchLease(t *testing.T, k kubernetes.Interface, ns string) *leaseVersions {
	t.Helper()
	first := lease(t, k, ns)
	require.NotNil(t, first, "no Lease to watch")
	w, err := k.CoordinationV1().Leases(ns).Watch(t.Context(), metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", controllerName).String(),
		ResourceVersion: first.ResourceVersion,
	})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return &leaseVersions{w: w, versions: []*coordinationv1.Lease{first}}
}

// latest returns the newest version seen so far.
func (v *leaseVersions) latest() *coordinationv1.Lease { return v.versions[len(v.versions)-1] }

// next takes in the versions the watch has delivered so far, without
// waiting, up to the first held by neither "" nor except, and returns it,
// or nil when there is none yet.
func (v *leaseVersions) next(t *testing.T, except string) *coordinationv1.Lease {
	t.Helper()
	for l := v.take(t); l != nil; l = v.take(t) {
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "" && h != except {
			return l
		}
	}
	return nil
}

// drain takes in every version the watch has delivered so far, without
// waiting.
func (v *leaseVersions) drain(t *testing.T) {
	t.Helper()
	for v.take(t) != nil {
	}
}

// take takes in the next version the watch has delivered, without
// waiting, and returns it, or nil when there is none yet.
func (v *leaseVersions) take(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	select {
	case ev, ok := <-v.w.ResultChan():
		require.True(t, ok, "the Lease's watch ended")
		l, isLease := ev.Object.(*coordinationv1.Lease)
		require.True(t, isLease, "the Lease's watch: %s event of %T: %v", ev.Type, ev.Object, ev.Object)
		require.NotEqual(t, watch.Deleted, ev.Type, "the Lease was deleted")
		v.versions = append(v.versions, l)
		return l
	default:
		return nil
	}
}

// renewals returns the last version before taken that holder wrote, and
// the first of the run of holder's versions up to it whose renewTime has
// its whole second: a standby compares the records it reads to the
// second, so it counts the Lease's duration from the first of them. It
// fails the test when holder wrote none.
func (v *leaseVersions) renewals(t *testing.T, holder string, taken *coordinationv1.Lease) (last, firstOfSecond *coordinationv1.Lease) {
	t.Helper()
	i := len(v.versions) - 1
	for i >= 0 && v.versions[i] != taken {
		i--
	}
	for i >= 0 && ptr.Deref(v.versions[i].Spec.HolderIdentity, "") != holder {
		i--
	}
	require.GreaterOrEqual(t, i, 0, "%s wrote no version of the Lease since the watch began", holder)
	last = v.versions[i]
	second := last.Spec.RenewTime.Truncate(time.Second)
	for firstOfSecond = last; i >= 0; i-- {
		l := v.versions[i]
		if ptr.Deref(l.Spec.HolderIdentity, "") != holder || !l.Spec.RenewTime.Truncate(time.Second).Equal(second) {
			return last, firstOfSecond
		}
		firstOfSecond = l
	}
	require.FailNow(t, "the first renewal of the last one's second came before the watch began", "%s", describeLease(last))
	return nil, nil
}

// watchedASecond waits until the watch has seen a renewal stamped in a
// later second than the first version's, so that renewals counts from
// versions it has seen.
func (v *leaseVersions) watchedASecond(t *testing.T, watched ...wait.Watched) {
	t.Helper()
	first := v.versions[0].Spec.RenewTime.Truncate(time.Second)
	wait.For(t, time.Minute, func() bool {
		v.drain(t)
		return v.latest().Spec.RenewTime.Truncate(time.Second).After(first)
	}, "the Lease's watch saw no renewal", watched...)
}

// released returns the version before taken that released the Lease: no
// holder, written after one.
func (v *leaseVersions) released(t *testing.T, taken *coordinationv1.Lease) *coordinationv1.Lease {
	t.Helper()
	for i := len(v.versions) - 1; i > 0; i-- {
		if v.versions[i] != taken {
			continue
		}
		r := v.versions[i-1]
		require.Empty(t, ptr.Deref(r.Spec.HolderIdentity, ""), "the version before %s's take: %s", ptr.Deref(taken.Spec.HolderIdentity, ""), describeLease(r))
		return r
	}
	require.FailNow(t, "the taking version isn't among the Lease's versions")
	return nil
}

// describeLease is a Lease version, for a failure's message.
func describeLease(l *coordinationv1.Lease) string {
	var renewed, acquired string
	if l.Spec.RenewTime != nil {
		renewed = l.Spec.RenewTime.Format(time.StampMicro)
	}
	if l.Spec.AcquireTime != nil {
		acquired = l.Spec.AcquireTime.Format(time.StampMicro)
	}
	return fmt.Sprintf("resourceVersion %s, holder %q, acquired %s, renewed %s, %ds", l.ResourceVersion,
		ptr.Deref(l.Spec.HolderIdentity, ""), acquired, renewed, ptr.Deref(l.Spec.LeaseDurationSeconds, 0))
}
