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

	"github.com/loam-dev/loam/domain/settings"
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

// TestRun_keeps_leading_on_a_slow_API_server_that_accepts_every_renewal:
// an API server that answers each Lease update d after it was sent, having
// accepted it, never lets a standby take the Lease, so it must not fence
// the leader as long as the fence can't lapse between two accepted
// renewals. client-go starts a renewal a RetryPeriod after the one before
// returned (wait.Until slides), so a renewal that starts at L is accepted
// at L + d and the next one, starting at L + d + RetryPeriod, at
// L + 2d + RetryPeriod; the fence lapses settings.FenceAfter = W − S −
// RetryPeriod after L (W the LeaseDuration in whole seconds, S
// settings.SameSecond). So the leader keeps leading while
// 2d + RetryPeriod < W − S − RetryPeriod, that is while
// d < (W − S − 2·RetryPeriod) / 2: 1.25 s at the chaos timings (4 s, 2 s,
// 0.5 s: W 4 s, S 0.5 s), 5.5 s at the defaults (15 s, 10 s, 2 s: S 0).
// Just over, it fences exactly FenceAfter after its first renewal, which
// starts as it begins leading: the fence can't tell a renewal in flight
// from one the server will never accept, and a standby may take the Lease
// a RetryPeriod later. At 3 s, 2 s, 0.5 s (the chaos timings of old, with
// no margin) the threshold is 0.75 s, so 0.8 s fences there, deliberately:
// a standby may take the Lease 2.5 s after the leader's last renewal.
// The fence counted RenewDeadline from that renewal's start before, which
// fenced a leader at 2·d + RetryPeriod > RenewDeadline: 0.8 s at 4 s, 2 s,
// 0.5 s, 4.5 s at the defaults, every renewal accepted.
func TestRun_keeps_leading_on_a_slow_API_server_that_accepts_every_renewal(t *testing.T) {
	const chaosLease, chaosRenew, chaosRetry = 4 * time.Second, 2 * time.Second, 500 * time.Millisecond
	const chaosThreshold = 1250 * time.Millisecond // (4s − 0.5s − 2·0.5s) / 2
	for _, tc := range []struct {
		name                                      string
		leaseDuration, renewDeadline, retryPeriod time.Duration
		latency                                   time.Duration
		fenced                                    bool
	}{
		{"chaos timings, 0.8s latency", chaosLease, chaosRenew, chaosRetry, 800 * time.Millisecond, false},
		{"default timings, 4.5s latency", leaseDuration, renewDeadline, retryPeriod, 4500 * time.Millisecond, false},
		{"chaos timings, just under the threshold", chaosLease, chaosRenew, chaosRetry, chaosThreshold - time.Millisecond, false},
		{"chaos timings, just over the threshold", chaosLease, chaosRenew, chaosRetry, chaosThreshold + time.Millisecond, true},
		{"default timings, just under the threshold", leaseDuration, renewDeadline, retryPeriod, 5500*time.Millisecond - time.Millisecond, false},
		{"default timings, just over the threshold", leaseDuration, renewDeadline, retryPeriod, 5500*time.Millisecond + time.Millisecond, true},
		{"3s, 2s, 0.5s, 0.8s latency", 3 * time.Second, 2 * time.Second, 500 * time.Millisecond, 800 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client := fake.NewClientset()
				var updates atomic.Int64
				e := electorOn(t, slowLeases{LeasesGetter: client.CoordinationV1(), latency: tc.latency, updates: &updates}, "a",
					tc.leaseDuration, tc.renewDeadline, tc.retryPeriod)
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
				if tc.fenced {
					require.Equal(t, settings.FenceAfter(tc.leaseDuration, tc.retryPeriod), ended,
						"the leader's context ended %v after it began leading, with renewals answered in %v: not FenceAfter after its first renewal", ended, tc.latency)
					return
				}
				require.Zero(t, ended,
					"the leader's context ended %v after it began leading, though the API server accepted all %d of its Lease updates, each answered in %v",
					ended, n, tc.latency)
				require.Greater(t, n, int64(20*tc.leaseDuration/(2*tc.latency+tc.retryPeriod)/2), "the leader renewed all along")
			})
		})
	}
}
