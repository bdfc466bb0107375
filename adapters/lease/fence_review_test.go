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

// slowLeases is a LeasesGetter whose Updates the API server accepts, every
// one, but answers latency after they were sent: a loaded API server or
// etcd, not a hanging one. The write lands at the start of the wait, so a
// standby sees every renewal as soon as it is sent.
type slowLeases struct {
	coordinationv1client.LeasesGetter
	latency time.Duration
	updates *atomic.Int64
}

func (s slowLeases) Leases(namespace string) coordinationv1client.LeaseInterface {
	return slowLease{LeaseInterface: s.LeasesGetter.Leases(namespace), s: s}
}

type slowLease struct {
	coordinationv1client.LeaseInterface
	s slowLeases
}

func (l slowLease) Update(ctx context.Context, o *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	got, err := l.LeaseInterface.Update(ctx, o, opts)
	if err == nil {
		l.s.updates.Add(1)
	}
	select {
	case <-time.After(l.s.latency):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return got, err
}

// TestReview_Fence_a_slow_API_server_that_accepts_every_renewal_fences_the_leader:
// REVIEW: the fence counts RenewDeadline from the start of the last
// *accepted* renewal, but the next renewal starts only latency+RetryPeriod
// after it (client-go's wait.Until slides by RetryPeriod after each
// renewal returns) and is accepted latency later. With 2·latency +
// RetryPeriod > RenewDeadline the fence lapses while a renewal the server
// is about to accept is in flight, though every renewal is accepted, each
// well inside client-go's own RenewDeadline, and no standby could ever
// take the Lease (it sees a renewal every latency+RetryPeriod, far below
// LeaseDuration). The leader gives up its Lease and its function is
// cancelled: at the chaos timings a 0.8 s API server latency (below
// RenewDeadline−RetryPeriod = 1.5 s) is enough; at the defaults 4.5 s
// (below 10 s). In a sharded controller a fenced shard Lease is
// ShardLost and Serve returns ErrLostLeadership; so does a fenced
// membership Lease: a slow, healthy API server crash-loops every replica.
// Without the fence (client-go alone) the leader keeps leading.
func TestReview_Fence_a_slow_API_server_that_accepts_every_renewal_fences_the_leader(t *testing.T) {
	for _, tc := range []struct {
		name                                      string
		leaseDuration, renewDeadline, retryPeriod time.Duration
		latency                                   time.Duration
	}{
		{"chaos timings, 0.8s latency", 3 * time.Second, 2 * time.Second, 500 * time.Millisecond, 800 * time.Millisecond},
		{"default timings, 4.5s latency", leaseDuration, renewDeadline, retryPeriod, 4500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client := fake.NewClientset()
				var updates atomic.Int64
				e, err := lease.New(lease.Config{
					Client:        slowLeases{LeasesGetter: client.CoordinationV1(), latency: tc.latency, updates: &updates},
					Name:          "memcached-controller",
					Namespace:     "memcached-system",
					Identity:      "a",
					LeaseDuration: tc.leaseDuration,
					RenewDeadline: tc.renewDeadline,
					RetryPeriod:   tc.retryPeriod,
				})
				require.NoError(t, err)
				ctx, stop := context.WithCancel(t.Context())
				defer stop()
				c := campaign(ctx, e, untilDone)
				leading := <-c.leading
				began := time.Now()

				// Twenty LeaseDurations of renewals, every one accepted.
				var ended time.Duration
				select {
				case <-leading.Done():
					ended = time.Since(began)
				case <-time.After(20 * tc.leaseDuration):
				}
				n := updates.Load()
				stop()
				<-c.done
				require.Zero(t, ended,
					"the leader's context ended %v after it began leading, though the API server accepted all %d of its Lease updates, each answered in %v < RenewDeadline %v",
					ended, n, tc.latency, tc.renewDeadline)
			})
		})
	}
}
