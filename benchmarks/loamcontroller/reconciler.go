package loamcontroller

import (
	"context"
	"fmt"
	"runtime/pprof"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/benchmarks/internal/probe"
	"github.com/loam-dev/loam/benchmarks/memcached"
	"github.com/loam-dev/loam/kube"
)

// Object is one Memcached, as the controller hands it to the Reconciler.
type Object = kube.Object[memcached.Spec, memcached.Status]

// Reconciler applies a Memcached's ConfigMap and returns its status,
// which the controller applies when it changed.
type Reconciler struct {
	// Kube applies the ConfigMap: a clientset on the Client's transport.
	Kube kubernetes.Interface
	// Reconciles counts the reconciles, for the harness.
	Reconciles *atomic.Int64
	// LabelPasses, when the harness profiles the controller, labels the
	// worker's goroutine with the pass each reconcile is, for package
	// passes to split the profile by.
	LabelPasses bool
}

// Reconcile does nothing for a settled Memcached. Otherwise it applies
// the ConfigMap and returns the status Ready, observing the generation.
func (r Reconciler) Reconcile(ctx context.Context, m Object) (kube.Result[memcached.Status], error) {
	r.Reconciles.Add(1)
	settled := memcached.Settled(m.Status, m.Generation)
	if r.LabelPasses {
		labelPass(ctx, settled)
	}
	if settled {
		return kube.Result[memcached.Status]{}, nil
	}

	owner := memcached.Owner{Namespace: m.Namespace, Name: m.Name, UID: m.UID}
	_, err := r.Kube.CoreV1().ConfigMaps(m.Namespace).Apply(ctx, memcached.ConfigMap(owner, m.Spec),
		metav1.ApplyOptions{FieldManager: memcached.FieldManager, Force: true})
	if err != nil {
		return kube.Result[memcached.Status]{}, fmt.Errorf("apply ConfigMap %s/%s: %w", m.Namespace, m.Name, err)
	}

	st := memcached.Ready(m.Status, m.Generation)
	return kube.Result[memcached.Status]{Status: &st}, nil
}

// labelPass labels the calling goroutine, the worker's, with the pass
// this is: the second, over a settled object, or the first. The label
// stays until the worker's next pass sets its own.
func labelPass(ctx context.Context, settled bool) {
	pass := probe.FirstPass
	if settled {
		pass = probe.SecondPass
	}
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels(probe.PassLabel, pass)))
}
