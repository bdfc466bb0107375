package explore_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"go.uber.org/goleak"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/explore"
	"github.com/loam-dev/loam/kubetest/kubelet"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, kubetest.GoleakOptions()...) }

// managedBy selects the Deployments the Reconciler applied.
const managedBy = memcached.ManagedByLabel + "=" + memcached.UserAgent

// exploreDuration is how long TestExploreWithPods explores: make explore
// sets it to ten minutes, the kept sequences first; make test replays the
// kept sequences alone, TestExplore's and TestExploreWithPods' (they
// restart the API server, fail requests, crash the operator, make its
// view stale and keep its Pods from coming alive already), as go test
// replays a fuzz target's corpus.
var exploreDuration = flag.Duration("explore.duration", 0, "explore the operator for this long, rather than replay the kept sequences alone")

// TestExplore explores the operator's two controllers, as Init makes
// them, with kubetest's explorer: generated changes to Memcacheds, crashes
// after the operator's writes, stale views, API server restarts,
// transient errors through the operator's own failure injection, and the
// checks below after each step. Its clusters make no Pod: a step waits
// for none, where on TestExploreWithPods' each waits for its Pods and
// workloads to settle, for two Quiets. make test replays its kept
// sequences, which need no Pod alive.
//
// make test replays the kept sequences of testdata/explore/TestExplore,
// each the only test of a false alarm of the explorer's, in subtests.
// Those of testdata/explore/TestExplore/repetitions repeat what other
// tests show (issue #41): make explore replays them, in the subtest of
// that name.
//
// Each subtest has a cluster of its own, and they run in parallel, beside
// the package's other tests, each on its own cluster too. A kept sequence
// that restarts the API server replays alone on its cluster, since a
// restart takes every other replay's connections away: on one cluster,
// the two that restart it replayed one after the other (issue #41).
func TestExplore(t *testing.T) {
	t.Parallel()
	crd, err := memcached.Memcached.CRD()
	require.NoError(t, err)
	// make explore's exploration is TestExploreWithPods', under every
	// fault: here the kept sequences are replayed alone, with the
	// comparisons make test leaves out under make explore.
	kept := func() explore.Config[memcached.MemcachedSpec, memcached.MemcachedStatus] {
		cfg := exploreConfig()
		cfg.Duration, cfg.KeptOnly = 0, true
		cfg.Faults.Kubelet = false
		return cfg
	}
	// Each subtest's directory under testdata/explore/TestExplore keeps
	// false alarms of the explorer's that its runs of the example raised,
	// each fixed and its sequence kept. Each sequence that restarts the
	// API server has a subtest of its own, with those that don't.
	subtests := []string{
		// seed-1-sequence-14: the fresh replica after a crash started
		// while the API server restarted, failed its first list and
		// exited.
		"a fresh replica starts once the server is back",
		// seed-1-sequence-45: the explorer checked before a fresh
		// replica had synced its caches. seed-1-sequence-2: its own read
		// failed during a restart that had begun before its check, and
		// the check wasn't taken again.
		"checks wait for a fresh replica and are taken again after a restart",
	}
	if *exploreDuration > 0 {
		subtests = append(subtests, "repetitions")
	}
	for _, name := range subtests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := kubetest.Start(t, kubetest.WithControllerManager(), kubetest.WithCRDs(crd))
			explore.Run(t, c, kept())
		})
	}
}

// TestExploreWithPods explores the operator as TestExplore does, on a
// cluster whose workload controllers and fake kubelet bring the
// Deployments' Pods alive, and under the kubelet's faults too (Pods never
// ready, crash-looping, ready in part), so that the Available condition
// is explored and the health oracle checks it after each step (issue
// #47). make test replays its kept sequence, kubelet-faults; make explore
// explores for -explore.duration with every fault. It runs beside
// TestExplore and TestExploreWebhooks, each on its own cluster.
func TestExploreWithPods(t *testing.T) {
	t.Parallel()
	crd, err := memcached.Memcached.CRD()
	require.NoError(t, err)
	c := kubetest.Start(t, kubetest.WithWorkloadControllers(), kubetest.WithFakeKubelet(kubelet.Config{}), kubetest.WithCRDs(crd))
	explore.Run(t, c, exploreConfig())
}

// exploreConfig is the exploration of TestExploreWithPods, every fault
// on.
func exploreConfig() explore.Config[memcached.MemcachedSpec, memcached.MemcachedStatus] {
	return explore.Config[memcached.MemcachedSpec, memcached.MemcachedStatus]{
		Resource:   memcached.Memcached,
		Build:      exploreBuild,
		Invariants: []explore.Invariant{followsSpec, budgeted},
		Seed:       1, Steps: 6, Duration: *exploreDuration, KeptOnly: *exploreDuration == 0,
		// make test replays each kept sequence once, with its faults,
		// and compares every step with a fresh create; make explore
		// also compares each faulted sequence's end with the same
		// steps replayed without faults, which would double make
		// test's share (issue #41).
		NoUnfaultedReplays: *exploreDuration == 0,
		// Nor fresh creates in make test: once (CI, seed-1-sequence-8)
		// the stepped Memcached still showed its injected fault's
		// message after Quiet, its retry pending, where the fresh one
		// didn't; the oracle can't yet tell a pending retry from a
		// difference (make explore runs it, and may say so).
		NoFreshCreates: *exploreDuration == 0,
		Quiet:          300 * time.Millisecond, Settle: 20 * time.Second,
		// Every fault: a kept sequence replays its own whatever these
		// say, so they pick make explore's new sequences' alone. Down
		// makes a change while no replica runs, which a fresh one
		// finds in its first list.
		Faults: explore.Faults{ScenarioAnnotation: memcached.ScenarioAnnotation, Restarts: true, Kubelet: true, LostEvents: true, Down: true},
		// A Memcached may name flags, which is there, or a ConfigMap
		// that isn't.
		ConfigMaps: []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "flags"}, Data: map[string]string{"m": "64", "c": "512"}}},
		References: map[string]string{"configMap": "ConfigMap"},
		// Which Deployment a Memcached has depends on its history, as
		// the Reconciler says: one that comes to name a ConfigMap that
		// isn't there keeps the Deployment it had, where a fresh one of
		// the same spec has none, and so with the Deployment's
		// PodDisruptionBudget. The differential oracles compare those
		// both have. Its readyReplicas are the kept Deployment's, now
		// that the fake kubelet brings its Pods alive: 1 where a fresh
		// Memcached of the spec has 0 (the configmap-flags sequence,
		// under make explore's fresh creates).
		Volatile: []string{"Deployment", "PodDisruptionBudget", "Memcached.status.readyReplicas"},
	}
}

// exploreBuild makes the operator's two controllers, as Init does, in
// namespace ns alone, each with a Lease of its own there.
func exploreBuild(s *app.Setup, client *kube.Client, ns string) ([]app.Service, error) {
	kc, err := kubernetes.NewForConfig(client.Config())
	if err != nil {
		return nil, err
	}
	settings := explore.Settings("memcached", ns)
	budget := settings
	budget.Name = "memcached-budget"
	budget.LabelSelector = managedBy
	// The replay's namespace runs the explorer's experiments, its
	// transient errors, as staging does the chaos harness's.
	memcacheds, budgets, err := memcached.Controllers(s, client, settings, budget, kc, ns)
	if err != nil {
		return nil, err
	}
	return []app.Service{memcacheds, budgets}, nil
}

var (
	deploymentsGVR = appsv1.SchemeGroupVersion.WithResource("deployments")
	budgetsGVR     = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
	configMapsGVR  = corev1.SchemeGroupVersion.WithResource("configmaps")
)

// followsSpec is what the Reconciler promises of each Memcached: a
// Deployment of its size and image when it names no ConfigMap, or one
// that is there, with that ConfigMap's hash on its pods (the explorer
// creates flags, and the generator draws a name for configMap from it,
// or one that isn't there); when it names one that isn't there, an
// Available condition that says the ConfigMap is missing.
var followsSpec = explore.Invariant{
	Name: "each Memcached's Deployment follows its spec",
	Check: func(ctx context.Context, client dynamic.Interface, ns string) error {
		list, err := client.Resource(memcached.Memcached.GVR()).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var errs []error
		for _, m := range list.Items {
			wantHash := ""
			if name, _, _ := unstructured.NestedString(m.Object, "spec", "configMap"); name != "" {
				cm, err := client.Resource(configMapsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
				switch {
				case apierrors.IsNotFound(err):
					if reason := availableReason(&m); reason != memcached.ReasonConfigMapMissing {
						errs = append(errs, fmt.Errorf("%s names the ConfigMap %q, which doesn't exist: Available's reason is %q", m.GetName(), name, reason))
					}
					continue
				case err != nil:
					errs = append(errs, fmt.Errorf("%s: %w", m.GetName(), err))
					continue
				}
				data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
				wantHash = memcached.ConfigHash(data)
			}
			size, _, _ := unstructured.NestedInt64(m.Object, "spec", "size")
			image, _, _ := unstructured.NestedString(m.Object, "spec", "image")
			d, err := client.Resource(deploymentsGVR).Namespace(ns).Get(ctx, m.GetName(), metav1.GetOptions{})
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", m.GetName(), err))
				continue
			}
			replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
			containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			var got string
			if len(containers) == 1 {
				got, _, _ = unstructured.NestedString(containers[0].(map[string]any), "image")
			}
			if replicas != size || got != image {
				errs = append(errs, fmt.Errorf("%s: size %d and image %q, its Deployment runs %d of %q", m.GetName(), size, image, replicas, got))
			}
			if hash, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "annotations", memcached.ConfigHashAnnotation); hash != wantHash {
				errs = append(errs, fmt.Errorf("%s: its ConfigMap's hash is %q, its Deployment's pods have %q", m.GetName(), wantHash, hash))
			}
		}
		return errors.Join(errs...)
	},
}

// availableReason returns the reason of m's Available condition, or "".
func availableReason(m *unstructured.Unstructured) string {
	conditions, _, _ := unstructured.NestedSlice(m.Object, "status", "conditions")
	for _, c := range conditions {
		c, _ := c.(map[string]any)
		if c["type"] == "Available" {
			reason, _ := c["reason"].(string)
			return reason
		}
	}
	return ""
}

// budgeted is what Budget promises: each Deployment a Memcached controls
// has a PodDisruptionBudget of its name.
var budgeted = explore.Invariant{
	Name: "each Memcached's Deployment has its PodDisruptionBudget",
	Check: func(ctx context.Context, client dynamic.Interface, ns string) error {
		list, err := client.Resource(deploymentsGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: managedBy})
		if err != nil {
			return err
		}
		var errs []error
		for _, d := range list.Items {
			if _, err := client.Resource(budgetsGVR).Namespace(ns).Get(ctx, d.GetName(), metav1.GetOptions{}); err != nil {
				errs = append(errs, fmt.Errorf("the Deployment %s: %w", d.GetName(), err))
			}
		}
		return errors.Join(errs...)
	},
}
