package telemetry_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/adapters/queue"
	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/ports"
)

// newQueue returns the work queue the controller builds, recording
// through rec. It is shut down when the test ends.
func newQueue(t *testing.T, rec *telemetry.Recorder) *queue.Queue {
	t.Helper()
	q := queue.New(queue.Config{Name: controllerName, Metrics: rec.QueueMetrics()})
	t.Cleanup(q.ShutDown)
	return q
}

// halfTick is half the period the queue updates its gauges at: sleeping a
// whole number of seconds and then halfTick reads the gauges as the tick
// on that whole number set them, whichever goroutine synctest wakes
// first.
const halfTick = 250 * time.Millisecond

func TestAStuckReconcileGrowsTheLongestUnfinishedDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec, tel := newRecorder(t)
		q := newQueue(t, rec)

		q.Add(namespaced)
		stuck, _ := q.Get() // and never Done
		time.Sleep(10*time.Second + halfTick)
		require.InDelta(t, 10.0, gaugeValue[float64](t, tel, telemetry.LongestUnfinishedDurationName), 1e-9)
		require.InDelta(t, 10.0, gaugeValue[float64](t, tel, telemetry.UnfinishedDurationName), 1e-9)

		q.Add(cluster)
		other, _ := q.Get() // at 10.25s
		time.Sleep(5 * time.Second)
		require.InDelta(t, 15.0, gaugeValue[float64](t, tel, telemetry.LongestUnfinishedDurationName), 1e-9,
			"it grows for as long as the reconcile runs")
		require.InDelta(t, 15.0+4.75, gaugeValue[float64](t, tel, telemetry.UnfinishedDurationName), 1e-9,
			"every reconcile in flight, summed")
		notRecorded(t, tel, telemetry.ReconcileDurationName)

		q.Done(stuck)
		q.Done(other)
		time.Sleep(time.Second)
		require.Zero(t, gaugeValue[float64](t, tel, telemetry.LongestUnfinishedDurationName))
		require.Zero(t, gaugeValue[float64](t, tel, telemetry.UnfinishedDurationName))
	})
}

func TestAStandbysQueueHoldsEveryKeyAndItsGaugesReadZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec, tel := newRecorder(t)
		q := newQueue(t, rec)
		for _, name := range []string{"a", "b", "c"} {
			q.Add(ports.Key{Namespace: "cache", Name: name})
		}

		// From the start, before the queue's first tick ...
		require.Equal(t, int64(3), gaugeValue[int64](t, tel, telemetry.QueueDepthName))
		require.Zero(t, gaugeValue[float64](t, tel, telemetry.UnfinishedDurationName))
		require.Zero(t, gaugeValue[float64](t, tel, telemetry.LongestUnfinishedDurationName))

		// ... and after many: no worker takes a key.
		time.Sleep(time.Minute + halfTick)
		require.Equal(t, int64(3), gaugeValue[int64](t, tel, telemetry.QueueDepthName))
		require.Equal(t, int64(3), counterValue(t, tel, telemetry.QueueAddsName))
		require.Zero(t, gaugeValue[float64](t, tel, telemetry.UnfinishedDurationName))
		require.Zero(t, gaugeValue[float64](t, tel, telemetry.LongestUnfinishedDurationName))
		notRecorded(t, tel, telemetry.QueueDurationName)
		notRecorded(t, tel, telemetry.ReconcileDurationName)
	})
}

func TestTheQueueRecordsNoWorkDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec, tel := newRecorder(t)
		q := newQueue(t, rec)

		q.Add(namespaced)
		key, _ := q.Get()
		time.Sleep(time.Second)
		q.Done(key)
		q.Add(key)
		time.Sleep(2 * time.Second)

		rm, err := tel.Metrics(t.Context())
		require.NoError(t, err)
		var names []string
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				names = append(names, m.Name)
			}
		}
		require.ElementsMatch(t, []string{
			telemetry.QueueDepthName,
			telemetry.QueueAddsName,
			telemetry.QueueDurationName,
			telemetry.UnfinishedDurationName,
			telemetry.LongestUnfinishedDurationName,
		}, names)
	})
}

func TestQueueInstrumentsNamesAndUnits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec, tel := newRecorder(t)
		q := newQueue(t, rec)
		q.Add(namespaced)
		time.Sleep(time.Second)
		key, _ := q.Get()
		q.Done(key)

		for name, unit := range map[string]string{
			telemetry.QueueDepthName:                "{key}",
			telemetry.QueueAddsName:                 "{key}",
			telemetry.QueueDurationName:             "s",
			telemetry.UnfinishedDurationName:        "s",
			telemetry.LongestUnfinishedDurationName: "s",
		} {
			m := metric(t, tel, name)
			require.Equal(t, unit, m.Unit, name)
			require.NotEmpty(t, m.Description, name)
		}
		require.Equal(t, []histogramPoint{
			{Attributes: map[string]string{"loam.kube.controller.name": controllerName}, Count: 1, Sum: 1},
		}, histogram(t, tel, telemetry.QueueDurationName), "the key waited a second")
	})
}

// points returns the data points of the int64 gauge or sum named name,
// by their loam.kube.controller.shard ("" for none).
func points(t *testing.T, tel *apptest.Telemetry, name string) map[string]int64 {
	t.Helper()
	by, err := tel.TotalBy(t.Context(), name, telemetry.ShardKey)
	require.NoError(t, err)
	return by
}

// TestAShardedQueueRecordsEachKeyWithItsShard: a sharded controller's
// queue records its depth, adds and waits by the shard of each key's
// object, a key of no known shard without one, every shard's depth from
// 0, and no data point without a shard beside them that would count a
// key twice; the gauges of the reconciles in flight stay the
// controller's.
func TestAShardedQueueRecordsEachKeyWithItsShard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec, tel := newRecorder(t)
		shards := map[string]int{"a": 0, "b": 1, "c": 1}
		q := queue.New(queue.Config{
			Name: controllerName, Metrics: rec.QueueMetrics(), Keys: rec.ShardedQueue(2),
			Shard: func(k ports.Key) (int, bool) { s, ok := shards[k.Name]; return s, ok },
		})
		t.Cleanup(q.ShutDown)
		require.Equal(t, map[string]int64{"0": 0, "1": 0}, points(t, tel, telemetry.QueueDepthName), "a standby reads 0 for every shard")

		for _, name := range []string{"a", "b", "c", "gone"} {
			q.Add(ports.Key{Namespace: "ns", Name: name})
		}
		q.Add(ports.Key{Namespace: "ns", Name: "b"}) // waiting already: no add
		require.Equal(t, map[string]int64{"0": 1, "1": 2, "": 1}, points(t, tel, telemetry.QueueDepthName))
		require.Equal(t, map[string]int64{"0": 1, "1": 2, "": 1}, points(t, tel, telemetry.QueueAddsName))

		time.Sleep(2 * time.Second)
		for range 4 {
			key, _ := q.Get()
			q.Done(key)
		}
		require.Equal(t, map[string]int64{"0": 0, "1": 0, "": 0}, points(t, tel, telemetry.QueueDepthName))
		require.ElementsMatch(t, []histogramPoint{
			{Attributes: map[string]string{"loam.kube.controller.name": controllerName, "loam.kube.controller.shard": "0"}, Count: 1, Sum: 2},
			{Attributes: map[string]string{"loam.kube.controller.name": controllerName, "loam.kube.controller.shard": "1"}, Count: 2, Sum: 4},
			{Attributes: map[string]string{"loam.kube.controller.name": controllerName}, Count: 1, Sum: 2},
		}, histogram(t, tel, telemetry.QueueDurationName))
		time.Sleep(time.Second)
		require.Zero(t, gaugeValue[float64](t, tel, telemetry.LongestUnfinishedDurationName), "the controller's, with no shard")
	})
}
