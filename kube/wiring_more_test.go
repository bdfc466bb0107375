package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/loam-dev/loam/adapters/lease"
	adapterstelemetry "github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/ports"
)

// More of build's wiring, as wiring_test.go checks it: each test would
// pass if build dropped what it names.

// failTimes is a Reconciler that fails its first fails reconciles of each
// object, then succeeds, keeping the time of each reconcile since start.
type failTimes struct {
	start time.Time
	fails int

	mu    sync.Mutex
	times map[string][]time.Duration
}

func newFailTimes(fails int) *failTimes {
	return &failTimes{start: time.Now(), fails: fails, times: map[string][]time.Duration{}}
}

func (f *failTimes) Reconcile(_ context.Context, m cacheObject) (Result[cacheStatus], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.times[m.Name] = append(f.times[m.Name], time.Since(f.start))
	if len(f.times[m.Name]) <= f.fails {
		return Result[cacheStatus]{}, errors.New("the Deployment can't be applied")
	}
	return Result[cacheStatus]{}, nil
}

// gaps returns the time between each of name's reconciles and the next.
func (f *failTimes) gaps(name string) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var g []time.Duration
	for i := 1; i < len(f.times[name]); i++ {
		g = append(g, f.times[name][i]-f.times[name][i-1])
	}
	return g
}

func (f *failTimes) of(name string) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.times[name]...)
}

func TestWiring_spaces_the_retries_of_a_failing_object_as_the_Settings_Retry_fields_say(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Settings)
		fails  int
		want   []time.Duration
	}{
		{"RetryBaseDelay doubling to RetryMaxDelay", func(s *Settings) {
			s.RetryBaseDelay, s.RetryMaxDelay = time.Second, 3*time.Second
		}, 4, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}},
		// A token every 2s, one at most: the first retry takes the token
		// the bucket holds, each next one waits for the next token.
		{"RetryRate and RetryBurst", func(s *Settings) {
			s.RetryBaseDelay, s.RetryMaxDelay = time.Millisecond, time.Millisecond
			s.RetryRate, s.RetryBurst = 0.5, 1
		}, 3, []time.Duration{time.Millisecond, 2*time.Second - time.Millisecond, 2 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			synctest.Test(t, func(t *testing.T) {
				settings := settingsForTest()
				tc.change(&settings)
				rec := newFailTimes(tc.fails)
				h := newHarness(t, settings, rec, nil, memcached("a", 1))
				ctx, stop := context.WithCancel(t.Context())
				close(h.elector.grant)
				h.serve(ctx)
				time.Sleep(time.Minute)
				synctest.Wait()
				stop()
				require.NoError(t, <-h.served)
				require.Equal(t, tc.want, rec.gaps("a"), "failures, then a success that settles")
			})
		})
	}
}

// testSetup is the Setup newHarness builds its Controller in.
func testSetup() *app.Setup {
	return &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: apptest.NewTelemetry().Telemetry}
}

// unbinding returns a harnessOptions.clients that unbinds handles from
// the Controller that newHarnessWith's NewController built to check its
// input, so that the harness's own Controller, which build assembles
// next, takes them.
func unbinding(handles ...interface{ unbind() }) func(*clients) {
	return func(*clients) {
		for _, h := range handles {
			h.unbind()
		}
	}
}

// configMaps is the related resource the tests' Watches cache the
// metadata of.
var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func configMapOf(name string, labels map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels},
	}
}

func TestWiring_filters_a_Watches_related_updates_with_its_filters(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		calls := &reconciles{}
		cms := NewCache(Kind[metav1.PartialObjectMetadata]{GVR: configMaps, Kind: "ConfigMap", Scope: Namespaced}, CacheOptions[metav1.PartialObjectMetadata]{})
		sameName := MapFunc(func(cm metav1.Object) []Key { return []Key{{Namespace: cm.GetNamespace(), Name: cm.GetName()}} })
		skipMarked := FilterFunc("skip-marked", func(_, new metav1.Object) bool { return new.GetLabels()["skip"] != "yes" })
		h := newHarnessWith(t, testSetup(), settingsForTest(), ReconcilerFunc[cacheSpec, cacheStatus](func(_ context.Context, m cacheObject) (Result[cacheStatus], error) {
			defer calls.start(m.Name)()
			return Result[cacheStatus]{}, nil
		}), []Part{Watches(cms, sameName, skipMarked)}, harnessOptions{clients: unbinding(cms)}, memcached("a", 1))
		require.NoError(t, h.meta.Tracker().Create(configMaps, configMapOf("a", nil), "ns"))
		ctx, stop := context.WithCancel(t.Context())
		close(h.elector.grant)
		h.serve(ctx)
		synctest.Wait()
		require.Equal(t, 1, calls.of("a"), "added")

		update := func(labels map[string]string) {
			require.NoError(t, h.meta.Tracker().Update(configMaps, configMapOf("a", labels), "ns"))
			synctest.Wait()
		}
		update(map[string]string{"skip": "yes"})
		require.Equal(t, 1, calls.of("a"), "the Watches' filter skips the ConfigMap's update")
		update(map[string]string{"skip": "no"})
		require.Equal(t, 2, calls.of("a"), "the Watches' filter keeps the ConfigMap's update")
		stop()
		require.NoError(t, <-h.served)
	})
}

func TestWiring_keeps_the_Controller_s_Indexes_over_its_objects(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		bySize := NewIndex("size", func(m cacheObject) []Key { return []Key{{Name: fmt.Sprint(m.Spec.Size)}} })
		h := newHarnessWith(t, testSetup(), settingsForTest(), statusReconciler{&reconciles{}}, []Part{Indexes(bySize)},
			harnessOptions{clients: unbinding(bySize)}, memcached("a", 1), memcached("b", 2), memcached("c", 1))
		ctx, stop := context.WithCancel(t.Context())
		h.serve(ctx)
		synctest.Wait()
		require.True(t, h.synced(t))

		ones, err := bySize.List(Key{Name: "1"})
		require.NoError(t, err)
		var names []string
		for _, m := range ones {
			names = append(names, m.Name)
		}
		require.ElementsMatch(t, []string{"a", "c"}, names)
		stop()
		require.NoError(t, <-h.served)
	})
}

// scenarioHarness returns a harness whose App injects failures, with a
// Controller that trusts every object's scenario.
func scenarioHarness(t *testing.T, settings Settings, rec Reconciler[cacheSpec, cacheStatus], objects ...runtime.Object) *harness {
	t.Helper()
	s := testSetup()
	s.Faults, _ = faultsForTest(t)
	trust := TrustScenario(scenarioAnnotation, func(metav1.Object) bool { return true })
	return newHarnessWith(t, s, settings, rec, []Part{trust}, harnessOptions{}, objects...)
}

func TestWiring_retries_an_object_failed_under_a_scenario_once_the_scenario_ends(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		settings := settingsForTest()
		settings.RetryBaseDelay, settings.RetryMaxDelay = time.Minute, time.Hour
		rec := newFailTimes(1)
		h := scenarioHarness(t, settings, rec, annotated(memcached("a", 1), endingScenario(t, 3*time.Second)))
		serveCtx, stop := context.WithCancel(t.Context())
		close(h.elector.grant)
		h.serve(serveCtx)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		stop()
		require.NoError(t, <-h.served)
		require.Equal(t, []time.Duration{0, 3 * time.Second}, rec.of("a"),
			"retried as the scenario ends, not a RetryBaseDelay after the failure")
	})
}

// endingScenario returns the annotation value of a scenario that aborts
// every apply of a Deployment, and ends in d.
func endingScenario(t *testing.T, d time.Duration) string {
	t.Helper()
	_, codec := faultsForTest(t)
	ctx, err := fit.ContextWithScenario(context.Background(), codec, fit.Scenario{Rules: []fit.Rule{abortApplies}, Ends: time.Now().Add(d)})
	require.NoError(t, err)
	return baggage.FromContext(ctx).String()
}

func TestWiring_reconciles_at_once_the_objects_failed_under_a_scenario_when_a_FaultSwitch_turns_failures_off(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		settings := settingsForTest()
		settings.RetryBaseDelay, settings.RetryMaxDelay = time.Minute, time.Hour
		_, codec := faultsForTest(t)
		rec := newFailTimes(1)
		h := scenarioHarness(t, settings, rec,
			annotated(memcached("carrying", 1), scenarioValue(t, codec, abortApplies)), memcached("plain", 1))
		ctx, stop := context.WithCancel(t.Context())
		close(h.elector.grant)
		h.serve(ctx)
		synctest.Wait()
		time.Sleep(time.Second)
		h.faults.SetOn(false)
		synctest.Wait()
		stop()
		require.NoError(t, <-h.served)
		require.Equal(t, []time.Duration{0, time.Second}, rec.of("carrying"), "reconciled as failures are turned off")
		require.Equal(t, []time.Duration{0}, rec.of("plain"), "failed under no scenario: retried at its backoff")
	})
}

// shardedOn has a harness's Controller campaign for its shards' Leases on
// coordination, and probe them on a fake that echoes none, as
// TestWiring_shards_the_controller_s_Leases_by_Settings_Shards does.
func shardedOn(coordination *kubefake.Clientset) func(*clients) {
	return func(cl *clients) {
		cl.elector = nil
		cl.shards = func(sc lease.ShardsConfig) (ports.ShardLeases, error) {
			sc.Client = coordination.CoordinationV1()
			return lease.NewShards(sc)
		}
		cl.dynamic = leasesOn{Interface: cl.dynamic, leases: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(
			runtime.NewScheme(), map[schema.GroupVersionResource]string{probedLeases: "LeaseList"})}
	}
}

func TestWiring_records_a_sharded_Controller_s_queue_by_shard(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		settings := settingsForTest()
		settings.Shards = 2
		tel := apptest.NewTelemetry()
		s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: tel.Telemetry}
		calls := &reconciles{}
		h := newHarnessWith(t, s, settings, statusReconciler{calls}, nil,
			harnessOptions{clients: shardedOn(kubefake.NewClientset())}, memcached("a", 1), memcached("b", 1))
		ctx, stop := context.WithCancel(t.Context())
		h.serve(ctx)
		time.Sleep(3 * settings.LeaderElection.LeaseDuration)
		synctest.Wait()
		require.Positive(t, calls.of("a"), "the replica holds every shard")
		require.Positive(t, calls.of("b"))
		stop()
		require.NoError(t, <-h.served)

		adds, err := tel.TotalBy(t.Context(), adapterstelemetry.QueueAddsName, adapterstelemetry.ShardKey)
		require.NoError(t, err)
		require.NotContains(t, adds, "", "every key is counted with its object's shard")
		var total int64
		for _, n := range adds {
			total += n
		}
		require.GreaterOrEqual(t, total, int64(2), "a and b, at least: %v", adds)
	})
}

func TestWiring_campaigns_for_the_Lease_the_Settings_name(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		settings := settingsForTest()
		settings.LeaderElection.Namespace = "leases-here"
		settings.LeaderElection.Identity = "pod-b"
		settings.LeaderElection.LeaseDuration = 20 * time.Second
		settings.LeaderElection.RenewDeadline = 12 * time.Second
		settings.LeaderElection.RetryPeriod = 3 * time.Second
		coordination := kubefake.NewClientset()
		var asked []lease.Config
		calls := &reconciles{}
		h := newHarnessWith(t, testSetup(), settings, statusReconciler{calls}, nil, harnessOptions{clients: func(cl *clients) {
			cl.elector = func(lc lease.Config) (ports.Elector, error) {
				asked = append(asked, lc)
				lc.Client = coordination.CoordinationV1()
				return lease.New(lc)
			}
		}}, memcached("a", 1))
		require.Equal(t, []lease.Config{{
			Name: "memcached-controller", Namespace: "leases-here", Identity: "pod-b",
			LeaseDuration: 20 * time.Second, RenewDeadline: 12 * time.Second, RetryPeriod: 3 * time.Second,
		}}, asked)

		ctx, stop := context.WithCancel(t.Context())
		h.serve(ctx)
		synctest.Wait()
		require.Positive(t, calls.of("a"), "the replica leads")
		stop()
		require.NoError(t, <-h.served)

		var created []*coordinationv1.Lease
		for _, a := range coordination.Actions() {
			if c, ok := a.(k8stesting.CreateAction); ok && a.GetVerb() == "create" && a.GetResource().Resource == "leases" {
				require.Equal(t, "leases-here", a.GetNamespace())
				created = append(created, c.GetObject().(*coordinationv1.Lease))
			}
		}
		require.Len(t, created, 1)
		require.Equal(t, "memcached-controller", created[0].Name)
		require.Equal(t, "pod-b", *created[0].Spec.HolderIdentity)
		require.Equal(t, int32(20), *created[0].Spec.LeaseDurationSeconds)
	})
}
