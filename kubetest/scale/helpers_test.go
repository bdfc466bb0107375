package scale

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The harness's own helpers, which decide what its figures say.

func TestParseConfig(t *testing.T) {
	c, err := parseConfig("1000, 10000", "1,4,16", "limit,failover", "client-go,watched", "while", "default", 8, 3, "out.md")
	require.NoError(t, err)
	require.Equal(t, []int{1000, 10000}, c.ns)
	require.Equal(t, []int{1, 4, 16}, c.ws)
	require.Equal(t, map[string]bool{phaseLimit: true, phaseFailover: true}, c.phases)
	require.Equal(t, []string{viaClientGo, viaWatched}, c.limits)
	require.Equal(t, loadWhile, c.load)
	require.Equal(t, 15*time.Second, c.lease.duration)
	require.Equal(t, 3, c.repeat)

	_, err = parseConfig("0,x", "", "limit,speed", "loam,fast", "later", "long", 0, 0, "")
	require.EqualError(t, err, `-scale.n: "0" is not a positive integer
-scale.w: "" is not a positive integer
-scale.only: "speed" is not a phase: want some of limit,convergence,startup,memory,failover,priority
-scale.limits: "fast" is not a variant: want some of client-go,loam,watched
-scale.limits: "loam,fast" lacks client-go, the limit itself
-scale.load: "later": want "before" or "while"
-scale.lease: "long": want "short" or "default"
-scale.loaders: 0: want at least 1
-scale.repeat: 0: want at least 1`)
}

func TestParseRequests_sums_the_harness_s_resources_by_verb(t *testing.T) {
	body := []byte(`# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="APPLY",version="v1"} 7
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="APPLY",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="scale.loam.dev",resource="memcacheds",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1"} 99
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 4
apiserver_request_duration_seconds_bucket{group="",resource="configmaps",le="0.005"} 1
`)
	got, err := parseRequests(body)
	require.NoError(t, err)
	require.Equal(t, requestCounts{
		{"APPLY", "configmaps", ""}:       10,
		{"APPLY", "memcacheds", "status"}: 10,
		{"PUT", "leases", ""}:             4,
	}, got)
	require.Equal(t, requestCounts{{"APPLY", "configmaps", ""}: 4}, got.since(requestCounts{
		{"APPLY", "configmaps", ""}: 6, {"APPLY", "memcacheds", "status"}: 10, {"PUT", "leases", ""}: 4,
	}))
	require.Equal(t, "APPLY memcacheds/status 0.20, APPLY configmaps ×4", requestsPerObject(requestCounts{
		{"APPLY", "configmaps", ""}: 4, {"APPLY", "memcacheds", "status"}: 10,
	}, 50), "per object from a tenth of the objects on")

	labels, err := parseLabels(`a="x,y",b="q\"uote\\d",c=""`)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "x,y", "b": `q"uote\d`, "c": ""}, labels)
	_, err = parseLabels(`a="open`)
	require.Error(t, err)
}

func TestSettled_needs_a_Ready_condition_of_the_current_generation(t *testing.T) {
	object := func(generation int64, conds ...any) *unstructured.Unstructured {
		u := newObject("ns", 1)
		u.SetGeneration(generation)
		if conds != nil {
			u.Object["status"] = map[string]any{"conditions": conds}
		}
		return u
	}
	ready := func(status string, observed int64) map[string]any {
		return map[string]any{"type": readyType, "status": status, "observedGeneration": observed}
	}
	require.False(t, settled(object(1)))
	require.False(t, settled(object(2, ready("True", 1))), "an older generation")
	require.False(t, settled(object(1, ready("False", 1))))
	require.False(t, settled(object(1, map[string]any{"type": "Other", "status": "True", "observedGeneration": int64(1)})))
	require.True(t, settled(object(1, ready("True", 1))))

	// What readyStatus returns, once on the server, is settled.
	st := readyStatus(memcachedStatus{}, owner{generation: 3, spec: memcachedSpec{Size: 2}})
	require.Len(t, st.Conditions, 1)
	require.Equal(t, metav1.ConditionTrue, st.Conditions[0].Status)
	require.Equal(t, int64(3), st.Conditions[0].ObservedGeneration)
	again := readyStatus(st, owner{generation: 3, spec: memcachedSpec{Size: 2}})
	require.Equal(t, st, again, "a second reconcile changes nothing, so applies no status")
}

func TestQuantile_and_median(t *testing.T) {
	h := metricdata.HistogramDataPoint[float64]{
		Count: 100, Bounds: []float64{0.01, 0.1, 1}, BucketCounts: []uint64{50, 45, 4, 1},
	}
	b, overflow := quantile(h, 0.5)
	require.Equal(t, 0.01, b)
	require.False(t, overflow)
	b, overflow = quantile(h, 0.99)
	require.Equal(t, 1.0, b)
	require.False(t, overflow)
	b, overflow = quantile(h, 1)
	require.Equal(t, 1.0, b, "the overflow bucket: at least its lower bound")
	require.True(t, overflow)
	require.Equal(t, "≥1000 ms", p99(metricdata.HistogramDataPoint[float64]{Count: 1, Bounds: []float64{1}, BucketCounts: []uint64{0, 1}}))
	b, _ = quantile(metricdata.HistogramDataPoint[float64]{}, 0.5)
	require.Zero(t, b)

	require.Equal(t, 2*time.Second, median([]time.Duration{3 * time.Second, time.Second, 2 * time.Second}))
	require.Equal(t, time.Second, median([]time.Duration{2 * time.Second, time.Second}))
	require.Zero(t, median(nil))
}

func TestTally_counts_reconciles_by_object_and_time(t *testing.T) {
	tl := newTally()
	tl.add("a")
	mid := time.Now()
	// The clock moves on, so the adds after mid are timed after it even
	// where the clock is coarse.
	time.Sleep(time.Millisecond)
	tl.add("a")
	tl.add("b")
	total, objects, first, last := tl.snapshot()
	require.Equal(t, 3, total)
	require.Equal(t, 2, objects)
	require.False(t, last.Before(first))
	require.Equal(t, map[int]int{1: 1, 2: 1}, tl.histogram())
	require.Equal(t, 1, tl.before(mid))
}
