package telemetry

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/loam-dev/loam/ports"
)

// The names of a sharded controller's instruments of the shards its
// replica holds.
const (
	// ShardHeldName is a gauge per shard: 1 while the replica holds the
	// shard's Lease, 0 otherwise.
	ShardHeldName = "loam.kube.controller.shard.held"
	// ShardsHeldName is a gauge of how many shards the replica holds.
	ShardsHeldName = "loam.kube.controller.shards.held"
	// ShardChangesName counts the shards the replica acquired, released
	// and lost, by ShardChangeKey: a hand-off is a release on one
	// replica and an acquire on another.
	ShardChangesName = "loam.kube.controller.shard.changes"
)

// ShardChangeKey is on shard.changes' data points: acquired, released or
// lost.
const ShardChangeKey = attribute.Key("loam.kube.controller.shard.change")

const unitShards = "{shard}"

// shardInstruments are a replica's instruments of its shards.
type shardInstruments struct {
	name    attribute.KeyValue
	held    metric.Int64Gauge
	count   metric.Int64Gauge
	changes metric.Int64Counter

	// mu keeps holding and the gauges' last values in step: campaigns
	// report their shards from goroutines of their own.
	mu      sync.Mutex
	holding map[int]bool
}

func newShardInstruments(meter metric.Meter, name attribute.KeyValue) (*shardInstruments, error) {
	s := &shardInstruments{name: name, holding: map[int]bool{}}
	var err error
	if s.held, err = meter.Int64Gauge(ShardHeldName, metric.WithUnit(unitShards),
		metric.WithDescription("Whether this replica holds the shard's Lease: 1 while it does, 0 otherwise.")); err != nil {
		return nil, fmt.Errorf("telemetry: instrument %s: %w", ShardHeldName, err)
	}
	if s.count, err = meter.Int64Gauge(ShardsHeldName, metric.WithUnit(unitShards),
		metric.WithDescription("How many shards this replica holds.")); err != nil {
		return nil, fmt.Errorf("telemetry: instrument %s: %w", ShardsHeldName, err)
	}
	if s.changes, err = meter.Int64Counter(ShardChangesName, metric.WithUnit(unitShards),
		metric.WithDescription("Shards this replica acquired, released or lost, by change.")); err != nil {
		return nil, fmt.Errorf("telemetry: instrument %s: %w", ShardChangesName, err)
	}
	return s, nil
}

// Sharded records that the replica of a controller of count shards holds
// none of them yet: every shard's shard.held, and shards.held, read 0 from
// the start, so a standby's read 0 rather than nothing. A shard acquired
// already keeps its 1.
func (r *Recorder) Sharded(count int) {
	s := r.shards
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx := context.Background()
	for i := range count {
		if !s.holding[i] {
			s.held.Record(ctx, 0, s.shardAttributes(i))
		}
	}
	s.count.Record(ctx, int64(len(s.holding)), metric.WithAttributeSet(attribute.NewSet(s.name)))
}

func (s *shardInstruments) shardAttributes(i int) metric.RecordOption {
	return metric.WithAttributeSet(attribute.NewSet(s.name, ShardKey.Int(i)))
}

// changed records change of shard on the three instruments.
func (s *shardInstruments) changed(ctx context.Context, change ports.ShardChange, shard int) {
	ctx = context.WithoutCancel(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	var v int64
	if change == ports.ShardAcquired {
		v = 1
		s.holding[shard] = true
	} else {
		delete(s.holding, shard)
	}
	s.held.Record(ctx, v, s.shardAttributes(shard))
	s.count.Record(ctx, int64(len(s.holding)), metric.WithAttributeSet(attribute.NewSet(s.name)))
	s.changes.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(s.name, ShardChangeKey.String(change.String()))))
}
