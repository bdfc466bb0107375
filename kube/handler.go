package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/loam-dev/loam/ports"
)

// handler adapts the end user's code on objects of type T to the domain's
// ports.Handler: it decodes each cached object into a new T, the end
// user's own copy, and encodes the status they return. Each call's
// context carries the object for RecordEvent.
type handler[T any] struct {
	reconcile func(context.Context, T) (ports.Result, error)
	// finalize is nil for a Controller without a Finalize, whose domain
	// never calls it.
	finalize func(context.Context, T) error
	// events is where RecordEvent records; nil leaves it nowhere to, and
	// it fails.
	events ports.Events
}

var _ eventsHandler = handler[struct{}]{}

// recordingOn returns h with RecordEvent recording through e.
func (h handler[T]) recordingOn(e ports.Events) ports.Handler {
	h.events = e
	return h
}

func (h handler[T]) Reconcile(ctx context.Context, obj ports.Object) (ports.Result, error) {
	v, err := decode[T](obj.JSON)
	if err != nil {
		return ports.Result{}, err
	}
	return h.reconcile(withEvents(ctx, h.events, obj, actionReconcile), v)
}

func (h handler[T]) Finalize(ctx context.Context, obj ports.Object) error {
	if h.finalize == nil {
		return errors.New("kube: the controller has no Finalize")
	}
	v, err := decode[T](obj.JSON)
	if err != nil {
		return err
	}
	return h.finalize(withEvents(ctx, h.events, obj, actionFinalize), v)
}

// decode returns doc, a cached object's JSON shared with the cache, as a
// new T that shares nothing with it: the end user may change it as they
// like. A T decodes as encoding/json decodes it, as the API server's own
// clients do.
func decode[T any](doc []byte) (T, error) {
	var v T
	if err := json.Unmarshal(doc, &v); err != nil {
		return v, fmt.Errorf("kube: decoding the cached object into a %T: %w", v, err)
	}
	return v, nil
}

// resourceReconcile adapts a Reconciler, encoding the Status it returns.
func resourceReconcile[Spec, Status any](r Reconciler[Spec, Status]) func(context.Context, Object[Spec, Status]) (ports.Result, error) {
	return func(ctx context.Context, obj Object[Spec, Status]) (ports.Result, error) {
		res, err := r.Reconcile(ctx, obj)
		out := ports.Result{After: res.After}
		if res.Status != nil {
			b, merr := json.Marshal(res.Status)
			if merr != nil {
				return ports.Result{}, errors.Join(err, fmt.Errorf("kube: encoding the status Reconcile returned: %w", merr))
			}
			out.Status = b
		}
		return out, err
	}
}

// kindReconcile adapts a KindReconciler, which applies no status.
func kindReconcile[T any](r KindReconciler[T]) func(context.Context, T) (ports.Result, error) {
	return func(ctx context.Context, obj T) (ports.Result, error) {
		after, err := r.Reconcile(ctx, obj)
		return ports.Result{After: after}, err
	}
}
