package crcontroller

import (
	"context"
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/loam-dev/loam/benchmarks/memcached"
)

// Reconciler applies a Memcached's ConfigMap and then its status.
type Reconciler struct {
	// Client is the Manager's: reads come from its cache, writes go to the
	// API server.
	client.Client
	// Reconciles counts the reconciles, for the harness.
	Reconciles *atomic.Int64
}

// Reconcile does nothing for a settled Memcached, or one that is gone.
// Otherwise it applies the ConfigMap and the status Ready, observing the
// generation.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.Reconciles.Add(1)
	var m memcached.Memcached
	if err := r.Get(ctx, req.NamespacedName, &m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if memcached.Settled(m.Status, m.Generation) {
		return ctrl.Result{}, nil
	}

	owner := memcached.Owner{Namespace: m.Namespace, Name: m.Name, UID: m.UID}
	err := r.Apply(ctx, memcached.ConfigMap(owner, m.Spec), client.FieldOwner(memcached.FieldManager), client.ForceOwnership)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("apply ConfigMap %s/%s: %w", m.Namespace, m.Name, err)
	}

	status, err := statusApply(&m, memcached.Ready(m.Status, m.Generation))
	if err != nil {
		return ctrl.Result{}, err
	}
	err = r.Status().Apply(ctx, status, client.FieldOwner(memcached.FieldManager), client.ForceOwnership)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("apply the status of %s/%s: %w", m.Namespace, m.Name, err)
	}
	return ctrl.Result{}, nil
}

// statusApply is the apply configuration of m's status st. A custom
// resource has no generated apply configuration, so it is an unstructured
// object holding the names and the status only, as controller-runtime's
// documentation of ApplyConfigurationFromUnstructured suggests.
func statusApply(m *memcached.Memcached, st memcached.Status) (runtime.ApplyConfiguration, error) {
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return nil, fmt.Errorf("convert the status of %s/%s: %w", m.Namespace, m.Name, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	u.SetGroupVersionKind(memcached.GroupVersion.WithKind(memcached.Kind))
	u.SetNamespace(m.Namespace)
	u.SetName(m.Name)
	return client.ApplyConfigurationFromUnstructured(u), nil
}
