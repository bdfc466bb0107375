package lease_test

import (
	"context"
	"maps"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/loam-dev/loam/adapters/lease"
	"github.com/loam-dev/loam/app/apptest"
)

// leaderStatus returns leader_election_master_status by its name label.
func leaderStatus(t *testing.T, tel *apptest.Telemetry) map[string]int64 {
	t.Helper()
	got, err := tel.TotalBy(context.Background(), lease.LeaderStatusName, attribute.Key("name"))
	require.NoError(t, err)
	return got
}

func TestRun_records_controller_runtime_s_leader_status_with_a_MeterProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		tel := apptest.NewTelemetry()
		leader, err := lease.New(lease.Config{
			Client: client.CoordinationV1(), Name: "memcached-controller", Namespace: "memcached-system", Identity: "pod-a",
			LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
			MeterProvider: tel.MeterProvider,
		})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		hold := make(chan struct{})
		c := campaign(ctx, leader, func(ctx context.Context) { <-hold; <-ctx.Done() })
		<-c.leading
		require.Equal(t, map[string]int64{"memcached-controller": 1}, leaderStatus(t, tel), "leading")
		close(hold)
		cancel()
		<-c.done
		require.Equal(t, map[string]int64{"memcached-controller": 0}, leaderStatus(t, tel), "its term over")
	})
}

// TestShards_record_each_shard_s_leader_status_with_a_MeterProvider: a
// sharded replica's leader_election_master_status has a series per
// shard's Lease, 0 for all four from Start, 1 for the shard it holds while
// it does and 0 again once its term is over; the membership Lease it
// holds records none.
func TestShards_record_each_shard_s_leader_status_with_a_MeterProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := apptest.NewTelemetry()
		s, err := lease.NewShards(lease.ShardsConfig{
			Client: fake.NewClientset().CoordinationV1(), Name: "memcached-controller", Namespace: "memcached-system",
			Identity: "pod-0", Incarnation: "a1", Count: 4,
			LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
			MeterProvider: tel.MeterProvider,
		})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		s.Start(ctx, func() {})
		defer s.Stop()
		require.True(t, s.WaitForSync(ctx))
		none := map[string]int64{
			"memcached-controller-shard-0": 0, "memcached-controller-shard-1": 0,
			"memcached-controller-shard-2": 0, "memcached-controller-shard-3": 0,
		}
		require.Equal(t, none, leaderStatus(t, tel), "from Start")

		member := campaign(ctx, s.Member().(*lease.Elector), untilDone)
		<-member.leading
		hold, stopHolding := context.WithCancel(ctx)
		one := campaign(hold, s.Shard(1, nil).(*lease.Elector), untilDone)
		<-one.leading
		holding := maps.Clone(none)
		holding["memcached-controller-shard-1"] = 1
		require.Equal(t, holding, leaderStatus(t, tel), "holding shard 1, and no series of the membership Lease")

		stopHolding()
		<-one.done
		require.Equal(t, none, leaderStatus(t, tel), "shard 1 released")
		cancel()
		<-member.done
	})
}
