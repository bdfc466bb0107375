package lease_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/adapters/lease"
	"github.com/loam-dev/loam/ports"
)

func newShards(t *testing.T, client *fake.Clientset) *lease.Shards {
	t.Helper()
	s, err := lease.NewShards(lease.ShardsConfig{
		Client: client.CoordinationV1(), Name: "memcached-controller", Namespace: "memcached-system",
		Identity: "pod-0", Incarnation: "a1", Count: 4,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
	})
	require.NoError(t, err)
	return s
}

func TestNewShardsReportsEveryMistake(t *testing.T) {
	_, err := lease.NewShards(lease.ShardsConfig{Name: "c", Identity: "pod-0", LeaseDuration: time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: time.Second})
	require.Error(t, err)
	for _, want := range []string{
		"lease: ShardsConfig.Incarnation is empty",
		"lease: ShardsConfig.Count is 0: want at least 1",
		"lease: Config.Client is nil",
		"lease: Config.Namespace is empty",
		"leaseDuration must be greater than renewDeadline",
	} {
		require.ErrorContains(t, err, want)
	}
}

// TestShardsWatchTheControllersLeases: the replica's membership Lease and
// a shard's carry the labels, the watch sees them as records, and
// another controller's Lease is not among them.
func TestShardsWatchTheControllersLeases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset(&coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "other-shard-0", Namespace: "memcached-system", Labels: map[string]string{lease.ControllerLabel: "other", lease.ShardLabel: "0", lease.ShardsLabel: "4"}},
		})
		s := newShards(t, client)
		require.Equal(t, "pod-0_a1", s.Holder())
		require.NoError(t, s.Check(t.Context()))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		changes := make(chan struct{}, 16)
		s.Start(ctx, func() { changes <- struct{}{} })
		defer s.Stop()
		require.True(t, s.WaitForSync(ctx))

		member := campaign(ctx, s.Member().(*lease.Elector), untilDone)
		<-member.leading
		one := campaign(ctx, s.Shard(1, nil).(*lease.Elector), untilDone)
		<-one.leading
		synctest.Wait()

		l, err := client.CoordinationV1().Leases("memcached-system").Get(ctx, "memcached-controller-shard-1", metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, map[string]string{lease.ControllerLabel: "memcached-controller", lease.ShardsLabel: "4", lease.ShardLabel: "1"}, l.Labels)
		records := map[string]ports.LeaseRecord{}
		for _, r := range s.Records() {
			records[r.Name] = r
		}
		require.Len(t, records, 2, "only the controller's own Leases: %v", records)
		m := records["memcached-controller-member-pod-0"]
		require.Equal(t, -1, m.Shard)
		require.Equal(t, "pod-0_a1", m.Holder)
		require.Equal(t, 4, m.Count)
		require.Equal(t, leaseDuration, m.Duration)
		require.False(t, m.Renewed.IsZero())
		require.Equal(t, 1, records["memcached-controller-shard-1"].Shard)
		require.NotEmpty(t, changes)
		cancel()
		<-member.done
		<-one.done
	})
}

// TestShardTakesALeaseSeenExpiredAtOnce: a shard's Lease held by another
// replica is taken at its Elector's first try when the run says it saw
// the Lease expire, instead of after LeaseDuration of watching it.
func TestShardTakesALeaseSeenExpiredAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		expired bool
		want    time.Duration
	}{
		{"seen expired", true, 0},
		{"not seen expired", false, leaseDuration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				now := metav1.NewMicroTime(time.Now())
				client := fake.NewClientset(&coordinationv1.Lease{
					ObjectMeta: metav1.ObjectMeta{Name: "memcached-controller-shard-2", Namespace: "memcached-system"},
					Spec: coordinationv1.LeaseSpec{
						HolderIdentity: ptr.To("pod-9_old"), LeaseDurationSeconds: ptr.To(int32(leaseDuration / time.Second)),
						AcquireTime: &now, RenewTime: &now,
					},
				})
				s := newShards(t, client)
				var asked []ports.LeaseRecord
				e := s.Shard(2, func(r ports.LeaseRecord) bool {
					asked = append(asked, r)
					return tc.expired
				})
				start := time.Now()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				c := campaign(ctx, e.(*lease.Elector), untilDone)
				<-c.leading
				// client-go waits a whole LeaseDuration from its first
				// sight, then up to a jittered RetryPeriod for its next try.
				took := time.Since(start)
				require.GreaterOrEqual(t, took, tc.want)
				require.Less(t, took, tc.want+2*retryPeriod)
				require.Equal(t, "pod-0_a1", holderOf(t, client, "memcached-controller-shard-2"))
				require.Equal(t, ports.LeaseRecord{Name: "memcached-controller-shard-2", Holder: "pod-9_old", Renewed: now.Time}, asked[0])
				cancel()
				<-c.done
			})
		})
	}
}

func holderOf(t *testing.T, client *fake.Clientset, name string) string {
	t.Helper()
	l, err := client.CoordinationV1().Leases("memcached-system").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return ptr.Deref(l.Spec.HolderIdentity, "")
}
