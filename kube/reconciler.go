package kube

import (
	"context"
	"time"
)

// Reconciler reconciles the objects of a Resource[Spec, Status]: it brings
// the cluster to what each object declares, and returns what the object's
// status is now.
//
// Reconcile is handed its own copy of the object, decoded from the
// controller's cache, so there is no Get and no not-found to handle: an
// object gone from the cache is never reconciled. It is level-triggered:
// it isn't told what changed, and may run any number of times for the same
// object, never twice at once.
type Reconciler[Spec, Status any] interface {
	// Reconcile returns the object's status, which the controller applies
	// when it differs from the object's, whether or not Reconcile also
	// returns an error. An error retries the object with backoff;
	// otherwise a positive Result.After reconciles it again after that
	// long, unless it changes first.
	Reconcile(ctx context.Context, obj Object[Spec, Status]) (Result[Status], error)
}

// Result is what a Reconciler's Reconcile returns.
type Result[Status any] struct {
	// Status is the object's status as Reconcile left it. The controller
	// applies it to the status subresource, with server-side apply under
	// Settings.Name, when its JSON encoding differs from the object's. A
	// nil Status leaves the status alone, so an error path that returns a
	// zero Result can't wipe it.
	Status *Status
	// After, when positive and Reconcile returned no error, reconciles the
	// object again after that long, unless it changes first: how a
	// Reconciler polls what no Owns or Watches watches.
	After time.Duration
}

// KindReconciler reconciles the objects of a Kind[T], one of Kubernetes'
// own kinds or any kind whose Go type T is defined elsewhere. It is handed
// its own copy of client-go's struct, decoded from the controller's cache,
// and writes no status, which belongs to whoever defines the kind.
type KindReconciler[T any] interface {
	// Reconcile brings the cluster to what obj declares. It returns when
	// to reconcile obj again: a positive duration does after that long,
	// unless obj changes first, and zero waits for a change or the
	// resync. An error retries obj with backoff, and the duration is
	// ignored.
	Reconcile(ctx context.Context, obj T) (time.Duration, error)
}

// KindReconcilerFunc adapts a function to a KindReconciler.
type KindReconcilerFunc[T any] func(ctx context.Context, obj T) (time.Duration, error)

// Reconcile returns f(ctx, obj).
func (f KindReconcilerFunc[T]) Reconcile(ctx context.Context, obj T) (time.Duration, error) {
	return f(ctx, obj)
}

// ReconcilerFunc adapts a function to a Reconciler.
type ReconcilerFunc[Spec, Status any] func(ctx context.Context, obj Object[Spec, Status]) (Result[Status], error)

// Reconcile returns f(ctx, obj).
func (f ReconcilerFunc[Spec, Status]) Reconcile(ctx context.Context, obj Object[Spec, Status]) (Result[Status], error) {
	return f(ctx, obj)
}
