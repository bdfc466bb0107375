package lease_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/loam-dev/loam/adapters/lease"
)

// partitioned is a LeasesGetter whose requests hang, as behind a network
// partition or an API server that stops answering, while cut is set: each
// waits for its context to end, as an HTTP request that gets no answer does.
type partitioned struct {
	coordinationv1client.LeasesGetter
	cut *atomic.Bool
}

func (p partitioned) Leases(namespace string) coordinationv1client.LeaseInterface {
	return hanging{LeaseInterface: p.LeasesGetter.Leases(namespace), cut: p.cut}
}

type hanging struct {
	coordinationv1client.LeaseInterface
	cut *atomic.Bool
}

func (h hanging) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if h.cut.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return h.LeaseInterface.Get(ctx, name, o)
}

func (h hanging) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if h.cut.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return h.LeaseInterface.Update(ctx, l, o)
}

func (h hanging) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if h.cut.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return h.LeaseInterface.Create(ctx, l, o)
}

// REVIEW: the leader's context outlives its Lease when the API server
// hangs instead of refusing (issue #42's "Lease lost during a drain",
// partitioned). client-go gives up renewing RetryPeriod+RenewDeadline after
// the last renewal (12 s here), then release() Gets the Lease with a
// RenewDeadline timeout, which hangs another 10 s; the Elector cancels
// onStarted's context only after client-go's Run returns (or in
// beforeRelease, which a failed Get never reaches). So onStarted's context
// (the drain's "leading", handoff.go) ends ~22 s after the last renewal,
// while a standby the partition doesn't cut off takes the Lease
// LeaseDuration (15 s) after it: ~7 s in which both replicas reconcile, even
// with a Reconciler that heeds its context. docs/kubernetes.md's "A Lease
// lost during the drain ... cancels the reconciles at once" is false here.
// With the chaos timings (3 s / 2 s / 0.5 s) the gap is 4.5 s against 3 s.
func TestReview_partitioned_leader_is_told_after_the_standby_took_the_Lease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		var cut atomic.Bool
		a, err := lease.New(lease.Config{
			Client:        partitioned{LeasesGetter: client.CoordinationV1(), cut: &cut},
			Name:          "memcached-controller",
			Namespace:     "memcached-system",
			Identity:      "a",
			LeaseDuration: leaseDuration,
			RenewDeadline: renewDeadline,
			RetryPeriod:   retryPeriod,
		})
		require.NoError(t, err)
		ctxA, stopA := context.WithCancel(t.Context())
		var aEnded atomic.Int64
		ca := campaign(ctxA, a, func(leading context.Context) {
			<-leading.Done()
			aEnded.Store(time.Now().UnixNano())
		})
		<-ca.leading

		ctxB, stopB := context.WithCancel(t.Context())
		var bLed atomic.Int64
		cb := campaign(ctxB, newElector(t, client, "b"), func(leading context.Context) {
			bLed.Store(time.Now().UnixNano())
			<-leading.Done()
		})
		// A few renewals seen by the standby, then the partition.
		time.Sleep(3 * retryPeriod)
		cut.Store(true)

		<-cb.leading
		<-ca.returned
		overlap := time.Duration(aEnded.Load() - bLed.Load())
		stopA()
		stopB()
		<-ca.done
		<-cb.done
		require.LessOrEqual(t, overlap, time.Duration(0),
			"the partitioned leader's context ended %v after the standby began leading: both led at once", overlap)
	})
}
