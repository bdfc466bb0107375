package lease_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/loam-dev/loam/adapters/lease"
	"github.com/loam-dev/loam/domain/settings"
)

// TestRun_fences_a_leader_cut_off_by_a_hanging_API_server: when the API
// server hangs instead of refusing (a partition), client-go gives up
// renewing RetryPeriod+RenewDeadline after the last renewal and then
// release() Gets the Lease with a RenewDeadline timeout, which hangs too;
// a standby the partition doesn't cut off takes the Lease no sooner than
// settings.Takeover's earliest after the last renewal. The leader's fence
// cancels its context exactly settings.FenceAfter (a RetryPeriod before
// that earliest) after the start of its last accepted renewal, on its own
// clock, so it has stopped before the standby begins: at the default
// timings, at the chaos suite's, and at the chaos suite's of old, which
// have no margin left for client-go's own give-up.
func TestRun_fences_a_leader_cut_off_by_a_hanging_API_server(t *testing.T) {
	for _, tc := range []struct {
		name                                      string
		leaseDuration, renewDeadline, retryPeriod time.Duration
	}{
		{"default timings", leaseDuration, renewDeadline, retryPeriod},
		{"chaos timings", 4 * time.Second, 2 * time.Second, 500 * time.Millisecond},
		{"3s, 2s, 0.5s", 3 * time.Second, 2 * time.Second, 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client := fake.NewClientset()
				var cut atomic.Bool
				elector := func(identity string, leases coordinationv1client.LeasesGetter) *lease.Elector {
					return electorOn(t, leases, identity, tc.leaseDuration, tc.renewDeadline, tc.retryPeriod)
				}
				ctxA, stopA := context.WithCancel(t.Context())
				var aEnded atomic.Int64
				ca := campaign(ctxA, elector("a", cutLeases{LeasesGetter: client.CoordinationV1(), cut: &cut, hang: true}), func(leading context.Context) {
					<-leading.Done()
					aEnded.Store(time.Now().UnixNano())
				})
				<-ca.leading

				ctxB, stopB := context.WithCancel(t.Context())
				var bLed atomic.Int64
				cb := campaign(ctxB, elector("b", client.CoordinationV1()), func(leading context.Context) {
					bLed.Store(time.Now().UnixNano())
					<-leading.Done()
				})
				// A few renewals seen by the standby, then the partition.
				time.Sleep(3 * tc.retryPeriod)
				cut.Store(true)
				l, err := client.CoordinationV1().Leases("memcached-system").Get(context.Background(), "memcached-controller", metav1.GetOptions{})
				require.NoError(t, err)
				lastRenewal := l.Spec.RenewTime.Time

				<-cb.leading
				<-ca.returned
				// b's function stores its start after the send: let it.
				synctest.Wait()
				overlap := time.Duration(aEnded.Load() - bLed.Load())
				fencedAfter := time.Unix(0, aEnded.Load()).Sub(lastRenewal)
				stopA()
				stopB()
				<-ca.done
				<-cb.done
				require.LessOrEqual(t, overlap, time.Duration(0),
					"the partitioned leader's context ended %v after the standby began leading: both led at once", overlap)
				require.Equal(t, settings.FenceAfter(tc.leaseDuration, tc.retryPeriod), fencedAfter,
					"the partitioned leader's context ended %v after its last renewal: not FenceAfter", fencedAfter)
			})
		})
	}
}
