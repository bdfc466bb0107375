package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/loam-dev/loam/adapters/lease"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/ports"
)

// The tests in this file check that build passes each Setting through to
// what it configures, observed through client-go's fakes: each would pass
// if build dropped the setting, without them.

// listsAndWatches returns the list and watch actions on gvr among acts,
// the Check's first list with a limit of 1 included.
func listsAndWatches(acts []k8stesting.Action, gvr schema.GroupVersionResource) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range acts {
		if a.GetResource() == gvr && (a.GetVerb() == "list" || a.GetVerb() == "watch") {
			out = append(out, a)
		}
	}
	return out
}

// namespacesOf returns the namespaces acts went to, each once, sorted.
func namespacesOf(acts []k8stesting.Action) []string {
	var ns []string
	for _, a := range acts {
		ns = append(ns, a.GetNamespace())
	}
	slices.Sort(ns)
	return slices.Compact(ns)
}

// serveBriefly runs h's Controller until its caches have synced and every
// goroutine of the bubble waits, then stops it.
func serveBriefly(t *testing.T, h *harness) {
	t.Helper()
	ctx, stop := context.WithCancel(t.Context())
	h.serve(ctx)
	synctest.Wait()
	require.True(t, h.synced(t))
	stop()
	require.NoError(t, <-h.served)
}

func TestWiring_lists_and_watches_the_resource_with_the_Settings_selectors(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		settings := settingsForTest()
		settings.LabelSelector = "app=memcached,tier!=test"
		settings.FieldSelector = "metadata.name!=skipped"
		h := newHarness(t, settings, statusReconciler{&reconciles{}}, nil)
		serveBriefly(t, h)

		acts := listsAndWatches(h.dynamic.Actions(), memcacheds)
		var lists, watches int
		for _, a := range acts {
			var labels, fields string
			switch a := a.(type) {
			case k8stesting.ListAction:
				lists++
				labels, fields = a.GetListRestrictions().Labels.String(), a.GetListRestrictions().Fields.String()
			case k8stesting.WatchAction:
				watches++
				labels, fields = a.GetWatchRestrictions().Labels.String(), a.GetWatchRestrictions().Fields.String()
			}
			require.Equal(t, "app=memcached,tier!=test", labels, "%s %s", a.GetVerb(), a.GetResource())
			require.Equal(t, "metadata.name!=skipped", fields, "%s %s", a.GetVerb(), a.GetResource())
		}
		require.Positive(t, lists)
		require.Positive(t, watches)
	})
}

func TestWiring_lists_and_watches_in_each_namespace_of_the_Settings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Settings)
		want   []string
	}{
		{"every namespace", func(*Settings) {}, []string{""}},
		{"Settings.Namespace", func(s *Settings) { s.Namespace = "a" }, []string{"a"}},
		{"Settings.Namespaces", func(s *Settings) { s.Namespaces = []string{"b", "a"} }, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			synctest.Test(t, func(t *testing.T) {
				settings := settingsForTest()
				tc.change(&settings)
				h := newHarness(t, settings, statusReconciler{&reconciles{}}, nil)
				serveBriefly(t, h)

				resource := listsAndWatches(h.dynamic.Actions(), memcacheds)
				require.NotEmpty(t, resource)
				require.Equal(t, tc.want, namespacesOf(resource), "the resource's")
				owned := listsAndWatches(h.meta.Actions(), deployments)
				require.NotEmpty(t, owned)
				require.Equal(t, tc.want, namespacesOf(owned), "the owned Deployments'")
			})
		})
	}
}

func TestWiring_bounds_each_reconcile_by_Settings_ReconcileTimeout(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		settings := settingsForTest()
		settings.ReconcileTimeout = 7 * time.Second
		// left receives the time left until each reconcile's deadline, or
		// -1 when its context has none.
		left := make(chan time.Duration, 10)
		h := newHarness(t, settings, ReconcilerFunc[cacheSpec, cacheStatus](func(ctx context.Context, _ cacheObject) (Result[cacheStatus], error) {
			if deadline, ok := ctx.Deadline(); ok {
				left <- time.Until(deadline)
			} else {
				left <- -1
			}
			return Result[cacheStatus]{}, nil
		}), nil, memcached("a", 1))
		ctx, stop := context.WithCancel(t.Context())
		close(h.elector.grant)
		h.serve(ctx)
		synctest.Wait()
		stop()
		require.NoError(t, <-h.served)
		require.Equal(t, 1, len(left), "one reconcile")
		// The bubble's clock stands still while the worker runs, so the
		// whole timeout is left when the reconcile starts.
		require.Equal(t, 7*time.Second, <-left)
	})
}

func TestWiring_runs_Settings_Workers_reconciles_at_once(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			synctest.Test(t, func(t *testing.T) {
				settings := settingsForTest()
				settings.Workers = workers
				rec := newBlocking()
				objects := []runtime.Object{memcached("a", 1), memcached("b", 1), memcached("c", 1), memcached("d", 1), memcached("e", 1)}
				h := newHarness(t, settings, rec, nil, objects...)
				ctx, stop := context.WithCancel(t.Context())
				close(h.elector.grant)
				h.serve(ctx)
				// Serve waits for the reconciles in flight, which wait for
				// release: a failed check still releases them, so the
				// bubble ends.
				release := sync.OnceFunc(func() { close(rec.release) })
				defer release()
				synctest.Wait()
				require.Equal(t, workers, len(rec.started), "every worker blocks in a reconcile, and no other starts")

				release()
				synctest.Wait()
				require.Equal(t, len(objects), len(rec.started), "the others run once the workers are free")
				stop()
				require.NoError(t, <-h.served)
			})
		})
	}
}

func TestWiring_filters_the_resource_s_updates_with_FilterUpdates(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		calls := &reconciles{}
		skipMarked := FilterFunc("skip-marked", func(_, new metav1.Object) bool { return new.GetLabels()["skip"] != "yes" })
		h := newHarness(t, settingsForTest(), ReconcilerFunc[cacheSpec, cacheStatus](func(_ context.Context, m cacheObject) (Result[cacheStatus], error) {
			defer calls.start(m.Name)()
			return Result[cacheStatus]{}, nil
		}), []Part{FilterUpdates(skipMarked)}, memcached("a", 1))
		ctx, stop := context.WithCancel(t.Context())
		close(h.elector.grant)
		h.serve(ctx)
		synctest.Wait()
		require.Equal(t, 1, calls.of("a"), "added")

		update := func(labels map[string]string) {
			m := memcached("a", 1)
			m.SetLabels(labels)
			require.NoError(t, h.dynamic.Tracker().Update(memcacheds, m, "ns"))
			synctest.Wait()
		}
		update(map[string]string{"skip": "yes"})
		require.Equal(t, 1, calls.of("a"), "the filter skips the update")
		update(map[string]string{"skip": "no"})
		require.Equal(t, 2, calls.of("a"), "the filter keeps the update")
		stop()
		require.NoError(t, <-h.served)
	})
}

// leaseCreates records the namespaces and names of the Leases created
// through a fake clientset.
type leaseCreates struct {
	mu    sync.Mutex
	names []string
}

func (l *leaseCreates) react(a k8stesting.Action) (bool, runtime.Object, error) {
	if c, ok := a.(k8stesting.CreateAction); ok {
		if o, ok := c.GetObject().(metav1.Object); ok {
			l.mu.Lock()
			l.names = append(l.names, a.GetNamespace()+"/"+o.GetName())
			l.mu.Unlock()
		}
	}
	return false, nil, nil
}

func (l *leaseCreates) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := slices.Clone(l.names)
	slices.Sort(names)
	return slices.Compact(names)
}

// probedLeases is the resource a sharded watch's probe lists.
var probedLeases = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// leasesOn is a dynamic client whose Leases are another's.
type leasesOn struct {
	dynamic.Interface
	leases dynamic.Interface
}

func (d leasesOn) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	if gvr == probedLeases {
		return d.leases.Resource(gvr)
	}
	return d.Interface.Resource(gvr)
}

// IsWatchListSemanticsUnSupported tells client-go's informers to list and
// watch, as the fakes it wraps do: they serve no watch-list stream.
func (d leasesOn) IsWatchListSemanticsUnSupported() bool { return true }

func TestWiring_shards_the_controller_s_Leases_by_Settings_Shards(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		settings := settingsForTest()
		settings.Shards = 2
		created := &leaseCreates{}
		coordination := kubefake.NewClientset()
		coordination.PrependReactor("create", "leases", created.react)
		calls := &reconciles{}
		s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: apptest.NewTelemetry().Telemetry}
		h := newHarnessWith(t, s, settings, ReconcilerFunc[cacheSpec, cacheStatus](func(_ context.Context, m cacheObject) (Result[cacheStatus], error) {
			defer calls.start(m.Name)()
			return Result[cacheStatus]{}, nil
		}), nil, harnessOptions{clients: func(cl *clients) {
			cl.elector = nil // a sharded controller campaigns for its shards' Leases only
			cl.shards = func(sc lease.ShardsConfig) (ports.ShardLeases, error) {
				sc.Client = coordination.CoordinationV1()
				return lease.NewShards(sc)
			}
			// The sharded watch's probe lists Leases through the dynamic
			// client: an API server that ignores shard selectors, as
			// client-go's fake does, echoes none.
			cl.dynamic = leasesOn{Interface: cl.dynamic, leases: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(
				runtime.NewScheme(), map[schema.GroupVersionResource]string{probedLeases: "LeaseList"})}
		}}, memcached("a", 1), memcached("b", 1))
		ctx, stop := context.WithCancel(t.Context())
		h.serve(ctx)
		// Past the replica's announcement and its campaigns, each a
		// RetryPeriod at most.
		time.Sleep(3 * settings.LeaderElection.LeaseDuration)
		synctest.Wait()
		require.Equal(t, []string{
			"memcached-system/memcached-controller-member-pod-a",
			"memcached-system/memcached-controller-shard-0",
			"memcached-system/memcached-controller-shard-1",
		}, created.all(), "in Settings.LeaderElection.Namespace")
		require.Equal(t, 1, calls.of("a"), "the replica holds every shard")
		require.Equal(t, 1, calls.of("b"))
		stop()
		require.NoError(t, <-h.served)
	})
}

func TestWiring_records_failure_Events_as_Settings_FailureEvents_says(t *testing.T) {
	for _, tc := range []struct {
		events FailureEvents
		want   []string
	}{
		{FailureEventsOn, []string{"ReconcileFailed"}},
		{FailureEventsOff, nil},
	} {
		t.Run(fmt.Sprint(tc.events), func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			synctest.Test(t, func(t *testing.T) {
				settings := settingsForTest()
				settings.FailureEvents = tc.events
				cs := kubefake.NewClientset()
				s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: apptest.NewTelemetry().Telemetry}
				h := newHarnessWith(t, s, settings, ReconcilerFunc[cacheSpec, cacheStatus](func(context.Context, cacheObject) (Result[cacheStatus], error) {
					return Result[cacheStatus]{}, errors.New("the Deployment can't be applied")
				}), nil, harnessOptions{clients: func(cl *clients) { cl.events = cs.EventsV1() }}, memcached("a", 1))
				ctx, stop := context.WithCancel(t.Context())
				close(h.elector.grant)
				h.serve(ctx)
				synctest.Wait()
				stop()
				require.NoError(t, <-h.served)
				require.NoError(t, h.ctrl.Shutdown(t.Context()), "flushes the Events")

				var reasons []string
				for _, a := range cs.Actions() {
					if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "events" {
						reasons = append(reasons, c.GetObject().(*eventsv1.Event).Reason)
					}
				}
				require.Equal(t, tc.want, slices.Compact(reasons))
			})
		})
	}
}

func TestWiring_resyncs_every_object_each_Settings_Resync(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		settings := settingsForTest()
		settings.Resync = time.Minute
		calls := &reconciles{}
		h := newHarness(t, settings, ReconcilerFunc[cacheSpec, cacheStatus](func(_ context.Context, m cacheObject) (Result[cacheStatus], error) {
			defer calls.start(m.Name)()
			return Result[cacheStatus]{}, nil
		}), nil, memcached("a", 1))
		ctx, stop := context.WithCancel(t.Context())
		close(h.elector.grant)
		h.serve(ctx)
		synctest.Wait()
		require.Equal(t, 1, calls.of("a"), "added")
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		require.Equal(t, 2, calls.of("a"), "resynced once a minute")
		stop()
		require.NoError(t, <-h.served)
	})
}
