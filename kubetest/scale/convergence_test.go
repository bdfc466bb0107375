package scale

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// convergenceResult is what the convergence phase measured for one N and
// W.
type convergenceResult struct {
	n, w int
	load string
	// settled is the time from the start until the harness's watch had
	// seen every status settled; synced is until the Controller's caches
	// had synced. The start is the App's start when the objects were
	// created before it, and the loader's start when they were created
	// while it ran; loading is how long the loader took then.
	settled, synced, loading time.Duration
	cpu                      time.Duration
	others                   float64
	// reconciles counts every reconcile, objects how many objects were
	// reconciled, and perObject how many objects were reconciled k times.
	reconciles, objects int
	perObject           map[int]int
	// atSettled counts the reconciles begun before every object had
	// settled; busy is from the sync to the last reconcile's start; and
	// applying is the time the reconciles spent in the ConfigMap apply.
	atSettled      int
	busy, applying time.Duration
	failures       int
	requests       requestCounts
	queueWait      metricdata.HistogramDataPoint[float64]
	reconcile      metricdata.HistogramDataPoint[float64]
	adds           float64
}

// measureConvergence runs the harness's Controller with w workers over n
// new objects, created before it starts or while it runs as cfg.load
// says, and times it until every object's status is settled.
func measureConvergence(t *testing.T, c *kubetest.Cluster, cfg config, n, w int) convergenceResult {
	t.Helper()
	ctx := t.Context()
	cl := newClients(t, c.RESTConfig())
	ns := c.Namespace(t)
	t.Cleanup(func() { require.NoError(t, deleteAll(context.WithoutCancel(ctx), cl, ns)) })
	res := convergenceResult{n: n, w: w, load: cfg.load}

	if cfg.load == loadBefore {
		_, err := createObjects(ctx, cl, ns, n, cfg.loaders)
		require.NoError(t, err)
	}
	watch := watchSettled(t, cl, ns, n)
	tally := newTally()
	before, err := scrapeRequests(ctx, cl)
	require.NoError(t, err)
	stopProfile := profile(t, *flagProfile, fmt.Sprintf("convergence-%d-%d-%s", n, w, cfg.load))
	cpu0, start := readCPU(), time.Now()

	a := startController(t, c.Connection(), controllerConfig{
		name: "scale-controller", namespace: ns, identity: "pod-0", workers: w, owns: true, tally: tally,
	})
	syncedAt := a.waitSynced(ctx, t)
	res.synced = syncedAt.Sub(start)
	if cfg.load == loadWhile {
		// The Controller leads and waits for objects: now they come.
		wait.For(t, 10*time.Minute, func() bool { return len(a.recordTimes(acquiredLease)) > 0 }, "the Controller never took its Lease", a)
		cpu0, start = readCPU(), time.Now()
		res.synced = 0
		_, err := createObjects(ctx, cl, ns, n, cfg.loaders)
		require.NoError(t, err)
		res.loading = time.Since(start)
	}
	waitCtx, cancel := context.WithTimeoutCause(ctx, time.Duration(n)*20*time.Millisecond+time.Minute, fmt.Errorf("the deadline of %d objects", n))
	defer cancel()
	settledAt := watch.wait(waitCtx, t, "convergence")
	res.settled = settledAt.Sub(start)
	res.cpu, res.others = cpu0.window()
	stopProfile()

	// The second reconciles, which find nothing to apply, come after the
	// last status: wait until no reconcile has begun for a second.
	wait.For(t, 10*time.Minute, func() bool {
		_, _, _, last := tally.snapshot()
		return time.Since(last) > time.Second && a.gauge(t, telemetry.QueueDepthName) == 0
	}, "the Controller never went quiet", a)
	after, err := scrapeRequests(ctx, cl)
	require.NoError(t, err)
	res.requests = after.since(before)
	var last time.Time
	res.reconciles, res.objects, _, last = tally.snapshot()
	res.atSettled = tally.before(settledAt)
	res.busy = last.Sub(start) - res.synced
	res.applying = tally.applyTime()
	res.perObject = tally.histogram()
	res.queueWait = a.histogram(t, telemetry.QueueDurationName)
	res.reconcile = a.histogram(t, telemetry.ReconcileDurationName)
	res.adds = a.gauge(t, telemetry.QueueAddsName)
	require.Equal(t, 0, a.Stop(), "the App's exit code; stderr: %s", a.Stderr())
	res.failures = len(a.recordTimes("reconcile failed"))
	require.Equal(t, n, res.objects, "every object is reconciled")
	return res
}

// acquiredLease is the body of client-go's record of a Lease taken.
const acquiredLease = "Successfully acquired lease"
