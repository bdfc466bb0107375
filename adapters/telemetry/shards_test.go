package telemetry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/ports"
)

// totalBy returns the int64 instrument name by key's values.
func totalBy(t *testing.T, tel *apptest.Telemetry, name string, key attribute.Key) map[string]int64 {
	t.Helper()
	got, err := tel.TotalBy(context.Background(), name, key)
	require.NoError(t, err)
	return got
}

// TestShardsHeldFollowTheShardsAReplicaAcquiresAndGivesUp: from Sharded,
// every shard's shard.held and shards.held read 0; each acquire sets its
// shard's 1 and counts it, each release or loss sets it back to 0; and
// shard.changes counts each change by kind.
func TestShardsHeldFollowTheShardsAReplicaAcquiresAndGivesUp(t *testing.T) {
	rec, tel := newRecorder(t)
	ctx := context.Background()
	rec.Sharded(4)
	require.Equal(t, map[string]int64{"0": 0, "1": 0, "2": 0, "3": 0}, totalBy(t, tel, telemetry.ShardHeldName, telemetry.ShardKey), "a standby's")
	require.Equal(t, map[string]int64{controllerName: 0}, totalBy(t, tel, telemetry.ShardsHeldName, telemetry.ControllerNameKey))

	rec.ShardChanged(ctx, ports.ShardAcquired, 0, 4)
	rec.ShardChanged(ctx, ports.ShardAcquired, 2, 4)
	rec.ShardChanged(ctx, ports.ShardAcquired, 3, 4)
	require.Equal(t, map[string]int64{"0": 1, "1": 0, "2": 1, "3": 1}, totalBy(t, tel, telemetry.ShardHeldName, telemetry.ShardKey))
	require.Equal(t, map[string]int64{controllerName: 3}, totalBy(t, tel, telemetry.ShardsHeldName, telemetry.ControllerNameKey))

	rec.ShardChanged(ctx, ports.ShardReleased, 2, 4)
	rec.ShardChanged(ctx, ports.ShardLost, 3, 4)
	rec.Sharded(4) // a shard held keeps its 1
	require.Equal(t, map[string]int64{"0": 1, "1": 0, "2": 0, "3": 0}, totalBy(t, tel, telemetry.ShardHeldName, telemetry.ShardKey))
	require.Equal(t, map[string]int64{controllerName: 1}, totalBy(t, tel, telemetry.ShardsHeldName, telemetry.ControllerNameKey))
	require.Equal(t, map[string]int64{"acquired": 3, "released": 1, "lost": 1}, totalBy(t, tel, telemetry.ShardChangesName, telemetry.ShardChangeKey))
}
