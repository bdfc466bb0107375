package lease_test

import (
	"context"
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
