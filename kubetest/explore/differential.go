package explore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/kubetest/internal/generate"
)

// The differential oracles (issue #47) need no invariant: they compare
// what the operator made of an object with what it makes of the same
// spec by another road, as Acto and Sieve do.
//
// After each step that leaves its object there, once the step has
// settled and passed its checks, a fresh object of the same spec is
// created and, once it has settled, its outcome (outcome.go: its status
// and the objects it controls, normalised) must equal the stepped
// object's: an operator that ignores updates, or acted on a stale view,
// made something of the stepped object that it doesn't make of the
// spec. The fresh object is then deleted, and its children with it. It
// costs a create, a settle and a delete after each such step, about
// two Quiets and the operator's reconciles.
//
// And when a sequence had faults, the same steps are replayed without
// them once the sequence has passed, and where the two end, every
// explored object's outcome, must be the same. It costs a replay,
// without its faults and without fresh objects, of each sequence that
// had a fault: about as much again, for those.

// freshSuffix is added to the stepped object's name to name the fresh
// one. The fresh object lives in the replay's namespace, beside the
// stepped one, rather than in a clean namespace: Build's Controllers
// watch the replay's namespace alone, so an object anywhere else would
// never be reconciled, and a second replica for a clean namespace would
// cost a start, and a sync of its caches, at every step. The explorer's
// names, explore-0 and so on, never end so, and the children's names are
// compared with each parent's name replaced.
const freshSuffix = "-fresh"

// fresh creates a fresh object of the spec of step's object, waits until
// it has settled, and returns an error saying where its outcome differs
// from the stepped object's, or nil when it doesn't. It deletes the fresh
// object, and waits for it and its children to be gone, before it
// returns nil. It does nothing after a delete, or when the step left no
// object: an update of a missing one, a refused create; nor when the
// object's spec was admitted while the operator's admission webhooks were
// down (down.go): the webhooks, back, may refuse a fresh object of it,
// or default it otherwise, and it would not be the same spec.
func (e *explorer) fresh(ctx context.Context, objects dynamic.ResourceInterface, r *replicas, step generate.Step) error {
	if e.noFresh || step.Op == generate.Delete || r.unadmitted[step.Name] {
		return nil
	}
	if err := r.server.wait(ctx); err != nil {
		return err
	}
	stepped, err := objects.Get(ctx, step.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case stepped.GetDeletionTimestamp() != nil:
		return nil
	}
	// The step's faults that haven't come don't come to the fresh
	// object: it is the reference.
	r.w.arm(Step{})
	name := step.Name + freshSuffix
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": e.apiVersion, "kind": e.kind,
		"metadata": map[string]any{"name": name, "namespace": r.ns},
		"spec":     stepped.Object["spec"],
	}}
	if _, err := objects.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating a fresh %s %s of the same spec: %w", e.kind, name, err)
	}
	if err := e.settleFresh(ctx, objects, r, name); err != nil {
		return err
	}
	written, err := e.read(ctx, r.w)
	if err != nil {
		return err
	}
	if stepped, err = objects.Get(ctx, step.Name, metav1.GetOptions{}); err != nil {
		return err
	}
	made, err := objects.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if d := compare(e.outcome(stepped, written), e.outcome(made, written), e.volatile); d != nil {
		return fmt.Errorf("the %s %s and a fresh %s of the same spec, %s, differ: %s", e.kind, step.Name, e.kind, name,
			d.describe(step.Name, "the fresh "+name))
	}
	return e.deleteFresh(ctx, objects, r, name)
}

// settleFresh waits until the fresh object name observes its generation
// and the operator has written nothing for Quiet.
func (e *explorer) settleFresh(ctx context.Context, objects dynamic.ResourceInterface, r *replicas, name string) error {
	start := time.Now()
	for {
		u, err := objects.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading the fresh %s %s: %w", e.kind, name, err)
		}
		why := e.settled(u)
		if why == "" {
			if why, err = e.worldSettled(ctx, r.ns, &r.world); err != nil {
				return err
			}
		}
		var quiet time.Duration
		if why == "" {
			quiet = r.quiet(ctx)
		}
		if why == "" && quiet >= e.quiet && !r.w.hasCrashed() {
			return nil
		}
		if time.Now().After(r.deadline(start)) {
			if why == "" {
				// Said as a step's check says it: an operator that
				// reconciles without end, writing nothing, is busy,
				// not writing (make explore, the loop's planted bug
				// on a loaded machine, where its rate fell below
				// LoopRate and its step passed).
				why = e.whyUnsettled(r, quiet, "")
			}
			return fmt.Errorf("a fresh %s of the same spec, %s, not settled within %v: %s", e.kind, name, time.Since(start).Round(100*time.Millisecond), why)
		}
		if err := r.pause(ctx); err != nil {
			return err
		}
	}
}

// deleteFresh deletes the fresh object name and waits until it is gone,
// with every object it controlled, and the operator has written nothing
// for Quiet since: the next step's writes, which its faults count, are
// the next step's alone.
func (e *explorer) deleteFresh(ctx context.Context, objects dynamic.ResourceInterface, r *replicas, name string) error {
	u, err := objects.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	written, err := e.read(ctx, r.w)
	if err != nil {
		return err
	}
	// The objects it controlled, by kind and name.
	children := map[string]bool{}
	for kind, os := range outcomeOf(u, written, nil).owned {
		for _, o := range os {
			children[kind+" "+o.name] = true
		}
	}
	if err := objects.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting the fresh %s %s: %w", e.kind, name, err)
	}
	start := time.Now()
	for {
		written, err := e.read(ctx, r.w)
		if err != nil {
			return err
		}
		left := []string{}
		if _, err := objects.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			left = append(left, e.kind+" "+name)
		}
		for k, u := range written {
			if children[u.GetKind()+" "+u.GetName()] {
				left = append(left, k)
			}
		}
		if len(left) == 0 && r.quiet(ctx) >= e.quiet {
			return nil
		}
		if time.Now().After(r.deadline(start)) {
			slices.Sort(left)
			return fmt.Errorf("the fresh %s %s, deleted, left behind after %v: %v", e.kind, name, time.Since(start).Round(100*time.Millisecond), left)
		}
		if err := r.pause(ctx); err != nil {
			return err
		}
	}
}

// outcomes returns the outcome of every explored object in the replay's
// namespace, by name.
func (e *explorer) outcomes(ctx context.Context, objects dynamic.ResourceInterface, r *replicas) (map[string]outcome, error) {
	list, err := objects.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	written, err := e.read(ctx, r.w)
	if err != nil {
		return nil, err
	}
	out := make(map[string]outcome, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].GetName()] = e.outcome(&list.Items[i], written)
	}
	return out, nil
}

// outcome returns parent's outcome (outcome.go), without the explorer's
// scenario annotation, when transient errors are on: loam carries the
// scenario of an object's annotation on to the children its reconciles
// write, so the stepped object's children have it and a fresh object's
// don't. It is the explorer's fault, not what the operator made.
func (e *explorer) outcome(parent *unstructured.Unstructured, written map[string]*unstructured.Unstructured) outcome {
	o := outcomeOf(parent, written, e.volatile)
	if e.annotation == "" {
		return o
	}
	for _, os := range o.owned {
		for _, x := range os {
			meta, _ := x.obj["metadata"].(map[string]any)
			annotations, _ := meta["annotations"].(map[string]any)
			delete(annotations, e.annotation)
			if len(annotations) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	return o
}

// faulted reports whether any of steps has a fault of the operator's:
// the kubelet's are the world's, which the replay without faults keeps.
func faulted(steps []Step) bool {
	kinds := faultKinds()
	return slices.ContainsFunc(steps, func(s Step) bool {
		return slices.ContainsFunc(kinds, func(k faultKind) bool { return !k.world && k.has(s) })
	})
}

// unfaulted replays steps, which had faults and ended with ended, every
// explored object's outcome, without their faults, and returns an error
// saying where the two replays end apart, or nil when they don't, or
// when steps had no fault.
func (e *explorer) unfaulted(t *testing.T, steps []Step, ended map[string]outcome) error {
	t.Helper()
	if e.noUnfaulted || !faulted(steps) {
		return nil
	}
	without := slices.Clone(steps)
	for _, k := range faultKinds() {
		// The world's faults, the kubelet's, stay.
		if k.world {
			continue
		}
		for i := range without {
			k.clear(&without[i])
		}
	}
	reference, err := e.run(t, without, nil, true)
	if err != nil {
		return fmt.Errorf("the same steps without their faults: %w", err)
	}
	names := sortedUnion(ended, reference)
	// The first difference, in the objects' order, is the one reported.
	for _, name := range names {
		a, aok := ended[name]
		b, bok := reference[name]
		var why string
		switch {
		case !aok:
			why = fmt.Sprintf("the %s %s is there without the faults, not with them", e.kind, name)
		case !bok:
			why = fmt.Sprintf("the %s %s is there with the faults, not without them", e.kind, name)
		default:
			if d := compare(a, b, e.volatile); d != nil {
				why = fmt.Sprintf("the %s %s: %s", e.kind, name, d.describe("with the faults", "without"))
			}
		}
		if why != "" {
			return fmt.Errorf("the sequence ends elsewhere with its faults than without them: %s", why)
		}
	}
	return nil
}
