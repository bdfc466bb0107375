package explore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/explore"
	"github.com/loam-dev/loam/kubetest/internal/generate"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, kubetest.GoleakOptions()...)
}

var (
	resource    = memcached.Resource("explore.loam.dev")
	deployments = appsv1.SchemeGroupVersion.WithResource("deployments")
)

// operator is the spec's Memcached Reconciler, with a bug planted when
// ignoresUpdates is set: it applies the Deployment only when there is
// none, so a change of size after the creation never reaches it.
type operator struct {
	kube           kubernetes.Interface
	ignoresUpdates bool
}

func (o operator) Reconcile(ctx context.Context, m memcached.Object) (kube.Result[memcached.Status], error) {
	apply := true
	if o.ignoresUpdates {
		_, err := o.kube.AppsV1().Deployments(m.Namespace).Get(ctx, m.Name, metav1.GetOptions{})
		apply = apierrors.IsNotFound(err)
	}
	if apply {
		if _, err := o.kube.AppsV1().Deployments(m.Namespace).Apply(ctx, memcached.Deployment(m),
			metav1.ApplyOptions{FieldManager: "explore-test", Force: true}); err != nil {
			return kube.Result[memcached.Status]{}, err
		}
	}
	st := m.Status
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Applied", ObservedGeneration: m.Generation,
	})
	return kube.Result[memcached.Status]{Status: &st}, nil
}

func build(ignoresUpdates bool) explore.Build {
	return func(s *app.Setup, client *kube.Client, ns string) (*kube.Controller, error) {
		k, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		settings := kube.DefaultSettings()
		settings.Name = "explore-memcached"
		settings.Namespace = ns
		settings.LeaderElection.Namespace = ns
		settings.LeaderElection.Identity = "explore"
		return kube.NewController(s, client, settings, resource, operator{kube: k, ignoresUpdates: ignoresUpdates}, kube.Owns(deployments))
	}
}

// sized is the invariant the spec's operator promises: each Memcached's
// Deployment runs its size.
var sized = explore.Invariant{
	Name: "each Memcached's Deployment has its size",
	Check: func(ctx context.Context, client dynamic.Interface, ns string) error {
		list, err := client.Resource(resource.GVR()).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, m := range list.Items {
			size, _, _ := unstructured.NestedInt64(m.Object, "spec", "size")
			d, err := client.Resource(deployments).Namespace(ns).Get(ctx, m.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
			if replicas != size {
				return fmt.Errorf("%s: size %d, its Deployment runs %d", m.GetName(), size, replicas)
			}
		}
		return nil
	},
}

func startCluster(t *testing.T) *kubetest.Cluster {
	t.Helper()
	crd, err := resource.CRD()
	require.NoError(t, err)
	return kubetest.Start(t, kubetest.WithControllerManager(), kubetest.WithCRDs(crd))
}

func config(ignoresUpdates bool, seed uint64) explore.Config[memcached.Spec, memcached.Status] {
	return explore.Config[memcached.Spec, memcached.Status]{
		Resource: resource, Build: build(ignoresUpdates), Invariants: []explore.Invariant{sized},
		Seed: seed, Sequences: 2, Steps: 6, Quiet: 300 * time.Millisecond, Settle: 20 * time.Second,
	}
}

func TestExplore(t *testing.T) {
	c := startCluster(t)

	t.Run("a correct operator explores clean", func(t *testing.T) {
		explore.Run(t, c, config(false, 1))
	})

	t.Run("an operator that ignores updates is found, with a minimal sequence", func(t *testing.T) {
		for _, seed := range []uint64{1, 2, 3, 4, 5} {
			f, err := explore.Find(t, c, config(true, seed))
			require.NoError(t, err)
			require.NotNil(t, f, "seed %d: the planted bug went unfound", seed)
			t.Logf("seed %d: %v", seed, f)
			require.ErrorContains(t, f.Err, "its Deployment runs")
			require.Len(t, f.Steps, 2, "seed %d: a create and an update of a new size are enough", seed)
			require.Equal(t, generate.Create, f.Steps[0].Op)
			require.Equal(t, generate.Update, f.Steps[1].Op)
			require.NotEqual(t, f.Steps[0].Spec["size"], f.Steps[1].Spec["size"])
		}
	})

	t.Run("a wrong config is refused with every mistake", func(t *testing.T) {
		cfg := config(false, 1)
		cfg.Build, cfg.Steps, cfg.Quiet = nil, -1, -time.Second
		_, err := explore.Find(t, c, cfg)
		require.EqualError(t, err, "explore.Config.Build is nil\nexplore.Config.Steps -1: want 0 (the default) or more\nexplore.Config.Quiet -1s: want 0 (the default) or more")
	})
}
