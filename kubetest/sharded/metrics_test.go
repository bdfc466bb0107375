package sharded

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/adapters/lease"
	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/internal/controllerapp"
	"github.com/loam-dev/loam/kubetest/wait"
)

// TestShardedReplicasMeasureTheShardsTheyHold: each replica of a Tile
// controller of four shards, with controller-runtime's metric names on,
// measures through its App's telemetry which shards it holds — loam's
// shard.held and shards.held, and leader_election_master_status of each
// shard's Lease — and the hand-offs of a rebalance in shard.changes:
// alone, pod-0 holds all four; once pod-1 has joined and taken two, each
// replica's figures are the Leases' holders, as the API server has them.
func TestShardedReplicasMeasureTheShardsTheyHold(t *testing.T) {
	const shards = 4
	c, k, _ := tileCluster(t)
	ns := c.Namespace(t)
	first := startMeasuredTiles(t, c, ns, "pod-0", shards)
	apps := []wait.Watched{first.app}
	wait.For(t, time.Minute, func() bool { return len(tileHolders(t, k, ns)) == shards }, "pod-0 never took every shard", apps...)
	wait.For(t, time.Minute, func() bool { return first.agrees(t, k, ns, shards) == nil }, "pod-0's figures never matched the Leases", apps...)
	require.Equal(t, map[string]int64{tileController: shards}, first.total(t, telemetry.ShardsHeldName, telemetry.ControllerNameKey))

	second := startMeasuredTiles(t, c, ns, "pod-1", shards)
	apps = append(apps, second.app)
	wait.For(t, time.Minute, func() bool {
		per := map[string]int{}
		for _, id := range tileHolders(t, k, ns) {
			per[id]++
		}
		return per["pod-0"] == 2 && per["pod-1"] == 2
	}, "the shards never spread over both replicas", apps...)
	for _, r := range []measuredReplica{first, second} {
		var last error
		wait.For(t, time.Minute, func() bool { last = r.agrees(t, k, ns, shards); return last == nil },
			r.id+"'s figures never matched the Leases after the hand-off", append(apps, wait.LastSeen(func() string { return fmt.Sprint(last) }))...)
		require.Equal(t, map[string]int64{tileController: 2}, r.total(t, telemetry.ShardsHeldName, telemetry.ControllerNameKey), r.id)
	}
	require.Equal(t, map[string]int64{"acquired": 4, "released": 2}, first.total(t, telemetry.ShardChangesName, telemetry.ShardChangeKey),
		"pod-0 took four shards and handed two off")
	require.Equal(t, map[string]int64{"acquired": 2}, second.total(t, telemetry.ShardChangesName, telemetry.ShardChangeKey),
		"pod-1 took the two")
	t.Logf("figure: | pod-0 shard.changes | %v | pod-1 | %v |",
		first.total(t, telemetry.ShardChangesName, telemetry.ShardChangeKey), second.total(t, telemetry.ShardChangesName, telemetry.ShardChangeKey))
}

// measuredReplica is one replica of the Tile controller and the telemetry
// its App reports to.
type measuredReplica struct {
	id        string
	app       wait.Watched
	telemetry *apptest.Telemetry
}

// startMeasuredTiles runs replica id of the Tile controller in ns, with
// shards shards, reporting to a Telemetry of its own with
// controller-runtime's metric names.
func startMeasuredTiles(t *testing.T, c *kubetest.Cluster, ns, id string, shards int) measuredReplica {
	t.Helper()
	tel := apptest.NewTelemetry()
	tel.MetricNames = app.MetricNamesControllerRuntime
	s := kube.DefaultSettings()
	s.Name, s.Namespace, s.Shards, s.Workers = tileController, ns, shards, 2
	s.LeaderElection.Namespace, s.LeaderElection.Identity = ns, id
	tileLeases(&s)
	a, _ := controllerapp.Start(t, c.Connection(), func(setup *app.Setup, client *kube.Client) (*kube.Controller, error) {
		return kube.NewController(setup, client, s, tiles, kube.ReconcilerFunc[tileSpec, tileStatus](
			func(_ context.Context, o kube.Object[tileSpec, tileStatus]) (kube.Result[tileStatus], error) {
				return kube.Result[tileStatus]{Status: &tileStatus{ObservedGeneration: o.Generation}}, nil
			}))
	}, app.WithHost(app.Host{Network: &apptest.Switch{}}), app.WithTelemetry(tel.Builder()))
	return measuredReplica{id: id, app: wait.App(a), telemetry: tel}
}

// total returns the replica's int64 instrument name by key's values.
func (r measuredReplica) total(t *testing.T, name string, key attribute.Key) map[string]int64 {
	t.Helper()
	got, err := r.telemetry.TotalBy(t.Context(), name, key)
	require.NoError(t, err)
	return got
}

// agrees returns an error, unless the replica's shard.held and
// leader_election_master_status say, for every shard, whether the API
// server has the replica holding the shard's Lease.
func (r measuredReplica) agrees(t *testing.T, k kubernetes.Interface, ns string, shards int) error {
	t.Helper()
	holders := tileHolders(t, k, ns)
	wantHeld, wantStatus := map[string]int64{}, map[string]int64{}
	for i := range shards {
		var v int64
		if holders[i] == r.id {
			v = 1
		}
		wantHeld[fmt.Sprint(i)] = v
		wantStatus[lease.ShardLease(tileController, i)] = v
	}
	held := r.total(t, telemetry.ShardHeldName, telemetry.ShardKey)
	status := r.total(t, lease.LeaderStatusName, attribute.Key("name"))
	if fmt.Sprint(held) != fmt.Sprint(wantHeld) || fmt.Sprint(status) != fmt.Sprint(wantStatus) {
		return fmt.Errorf("%s: shard.held %v, leader_election_master_status %v; the Leases' holders %v", r.id, held, status, holders)
	}
	return nil
}
