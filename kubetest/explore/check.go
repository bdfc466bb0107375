package explore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/kubetest/internal/oracle"
)

// check checks the step just made, as checkOnce does, again when it
// failed while the API server restarted: what was read then, or failed
// to be, says nothing of the operator.
func (e *explorer) check(ctx context.Context, r *replicas) error {
	for {
		began := time.Now()
		err := e.checkOnce(ctx, r)
		if err == nil || !r.server.during(began) {
			return err
		}
		if err := r.server.wait(ctx); err != nil {
			return err
		}
	}
}

// checkOnce waits until the operator has written nothing for Quiet and
// every object is settled, then checks the invariants, that the operator
// stays quiet for another Quiet, that it didn't reconcile an object in a
// loop meanwhile, and that nothing panicked.
func (e *explorer) checkOnce(ctx context.Context, r *replicas) error {
	w, ns := r.w, r.ns
	objects := e.admin.Resource(e.gvr).Namespace(ns)
	start := time.Now()
	var (
		why string
		// quietFrom is when the operator's quiet began, once it has
		// lasted Quiet.
		quietFrom time.Time
	)
	for {
		wasDown := r.down(ctx)
		list, err := objects.List(ctx, metav1.ListOptions{})
		why = ""
		switch {
		case err != nil && !wasDown && !r.down(ctx):
			return err
		case err != nil:
			// The operator is down, and with it the webhooks that may
			// convert what the explorer reads (down.go): not settled.
			why = fmt.Sprintf("reading the %ss while the operator is down: %v", e.kind, err)
			list = &unstructured.UnstructuredList{}
		}
		for i := range list.Items {
			if list.Items[i].GetDeletionTimestamp() != nil {
				why = list.Items[i].GetName() + ": still being deleted"
				break
			}
			if why = e.settled(&list.Items[i]); why != "" {
				break
			}
		}
		if why == "" {
			wasDown := r.down(ctx)
			written, err := e.read(ctx, w)
			switch {
			case err != nil && !wasDown && !r.down(ctx):
				return err
			case err != nil:
				// What the operator wrote may be of the explored
				// resource, its status, read through its webhooks'
				// conversion: not settled while they are down.
				why = fmt.Sprintf("reading what the operator wrote while it is down: %v", err)
			}
			if why == "" {
				why = w.collecting(schema.GroupKind{Group: e.gvr.Group, Kind: e.kind}, written, list.Items)
			}
		}
		// What the Pods and workloads are still to do, which the
		// operator's own writes go on causing while it writes.
		world := ""
		if why == "" {
			if world, err = e.worldSettled(ctx, ns, &r.world); err != nil {
				return err
			}
		}
		quiet := r.quiet(ctx)
		if quiet >= e.quiet && w.release() {
			r.n.stale++
			// The operator has done what it does with its stale view:
			// let it see what it missed, and wait for it to be quiet
			// again.
			continue
		}
		if why == "" && world == "" && quiet >= e.quiet && !w.hasCrashed() {
			quietFrom = time.Now().Add(-quiet)
			break
		}
		if time.Now().After(r.deadline(start)) {
			if why == "" {
				why = e.whyUnsettled(r, quiet, world)
			}
			// The time waited, which a restart makes longer than Settle.
			return fmt.Errorf("not settled within %v: %s", time.Since(start).Round(100*time.Millisecond), why)
		}
		if err := r.pause(ctx); err != nil {
			return err
		}
	}
	var errs []error
	for _, inv := range e.invariants {
		if err := inv.Check(ctx, e.admin, ns); err != nil {
			errs = append(errs, fmt.Errorf("invariant %q: %w", inv.Name, err))
		}
	}
	unhealthy, err := e.health(ctx, ns)
	if err != nil {
		return err
	}
	before, err := e.versions(ctx, w)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(e.quiet):
	}
	after, err := e.versions(ctx, w)
	if err != nil {
		return err
	}
	if err := e.stillUnhealthy(ctx, ns, unhealthy); err != nil {
		errs = append(errs, err)
	}
	if changed := oracle.Changed(before, after); len(changed) > 0 {
		slices.Sort(changed)
		errs = append(errs, fmt.Errorf("the operator isn't quiet: with nothing to do, it changed %s", strings.Join(changed, ", ")))
	}
	// The writes seen since quietFrom are the operator's first after its
	// quiet: its reconciles up to then, if any, had nothing to do.
	quietTo := time.Now()
	if last := time.Now().Add(-w.since()); last.Before(quietTo) && last.After(quietFrom) {
		quietTo = last
	}
	if looping := loops(reconciles(r.app.Telemetry().Spans()), quietFrom, quietTo, e.loopRate); len(looping) > 0 {
		errs = append(errs, fmt.Errorf("the operator reconciles in a loop: with nothing to do, writing nothing, %s", strings.Join(looping, "; ")))
	}
	if msgs := r.panicked(); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("a reconcile panicked: %s", msgs[0]))
	}
	return errors.Join(errs...)
}

// unsettled says why a wait for the operator to settle ran out, when
// the objects it reconciles said nothing: its caches not synced, a
// reconcile under way though it has written nothing for Quiet (wanted),
// a reconcile in a loop among them, world, what the Pods and workloads
// are still to do, once it is quiet, or else its writes, the last since
// ago.
func unsettled(synced bool, busy []string, since, quiet, wanted time.Duration, world string) string {
	switch {
	case !synced:
		return "the operator's caches haven't synced"
	case len(busy) > 0 && since >= wanted:
		return fmt.Sprintf("the operator is still reconciling %s, having written nothing for %v", strings.Join(busy, ", "), since.Round(time.Millisecond))
	case world != "" && quiet >= wanted:
		return world
	}
	return fmt.Sprintf("the operator still writes, the last time %v ago", since.Round(time.Millisecond))
}

// whyUnsettled says, as unsettled does, why a wait for r's operator to
// settle ran out, with quiet its quiet so far and world what the Pods
// and workloads are still to do; and names a loop among its reconciles
// under way as one (stillReconciling).
func (e *explorer) whyUnsettled(r *replicas, quiet time.Duration, world string) string {
	if !r.syncedAt.IsZero() && len(r.busy) > 0 && r.w.since() >= e.quiet {
		return e.stillReconciling(r)
	}
	return unsettled(!r.syncedAt.IsZero(), r.busy, r.w.since(), quiet, e.quiet, world)
}

// stillReconciling says why r's operator, settled but for a reconcile
// under way each time the settle wait looked, and writing nothing for
// Quiet or more, isn't settled at Settle. A reconcile at work outside the
// cluster is still at it. Reconciles of one object in a loop, so close
// together that one was under way at every look (a loop whose reconciles
// are slow next to the pause between them, on a loaded machine, say),
// are a loop, which the liveness oracle would have named had the wait
// once seen the operator quiet: so they are named here, counted since
// the operator last wrote or was seen synced.
func (e *explorer) stillReconciling(r *replicas) string {
	since := r.w.since()
	if !r.syncedAt.IsZero() {
		since = min(since, time.Since(r.syncedAt))
	}
	now := time.Now()
	if looping := loops(reconciles(r.app.Telemetry().Spans()), now.Add(-since), now, e.loopRate); len(looping) > 0 {
		return fmt.Sprintf("the operator reconciles in a loop: with nothing to do, writing nothing, %s", strings.Join(looping, "; "))
	}
	return fmt.Sprintf("the operator is still reconciling %s, having written nothing for %v", strings.Join(r.busy, ", "), r.w.since().Round(time.Millisecond))
}

// read returns each object the operator has written that is still
// there, by its name.
func (e *explorer) read(ctx context.Context, w *writes) (map[string]*unstructured.Unstructured, error) {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range w.written() {
		u, err := e.admin.Resource(o.gvr).Namespace(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", o, err)
		}
		out[o.String()] = u
	}
	return out, nil
}

// versions returns the resourceVersion of each object the operator has
// written, by its name, leaving out those gone.
func (e *explorer) versions(ctx context.Context, w *writes) (map[string]string, error) {
	written, err := e.read(ctx, w)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(written))
	for k, u := range written {
		out[k] = u.GetResourceVersion()
	}
	return out, nil
}

// collecting is collecting of the kinds the operator has been seen to
// write in this replay, written's among them, and explored: the one
// place a check asks, so that its unit test covers what each check
// does (a kind known from an earlier check is what sequence 8 of the
// Memcached example's seed 1 needed, and make test no longer replays
// that sequence).
func (w *writes) collecting(explored schema.GroupKind, written map[string]*unstructured.Unstructured, owners []unstructured.Unstructured) string {
	return collecting(w.kinds(explored, written), written, owners)
}

// collecting says which written object the cluster, not the operator,
// is still to change, or "" when none is: one being deleted, or one whose
// owner is gone, which the garbage collector deletes in its own time.
// Without waiting for those, the collector's delete after a step would
// look like the operator's write. An owner is known gone when it is of
// a known kind, the explored one or one the operator wrote, and no object
// of owners (every object of the explored kind) or written has its UID.
// The known kinds are passed, not read off owners and written: after the
// last object of a kind is deleted, none is left to say what kind it
// was, and that is when its dependents are collected. Kinds are compared
// without their version: an owner reference may name any version the
// kind is served at.
func collecting(known map[schema.GroupKind]bool, written map[string]*unstructured.Unstructured, owners []unstructured.Unstructured) string {
	alive := map[types.UID]bool{}
	for i := range owners {
		alive[owners[i].GetUID()] = true
	}
	for _, u := range written {
		alive[u.GetUID()] = true
	}
	keys := slices.Sorted(maps.Keys(written))
	for _, k := range keys {
		u := written[k]
		if u.GetDeletionTimestamp() != nil {
			return k + ": still being deleted"
		}
		for _, ref := range u.GetOwnerReferences() {
			gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
			if known[gk] && !alive[ref.UID] {
				return fmt.Sprintf("%s: its owner %s %s is gone, and the garbage collector is still to delete it", k, ref.Kind, ref.Name)
			}
		}
	}
	return ""
}

// deleteAll deletes every object and waits until each is gone, with what
// the operator wrote for it: finalizers removed, children collected.
func (e *explorer) deleteAll(ctx context.Context, objects dynamic.ResourceInterface, r *replicas) error {
	w := r.w
	if err := objects.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	start := time.Now()
	for {
		left, err := e.versions(ctx, w)
		if err != nil {
			return err
		}
		list, err := objects.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, u := range list.Items {
			left[fmt.Sprintf("%s %s (finalizers %v)", e.kind, u.GetName(), u.GetFinalizers())] = ""
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(r.deadline(start)) {
			keys := make([]string, 0, len(left))
			for k := range left {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			return fmt.Errorf("left behind after %v: %s", time.Since(start).Round(100*time.Millisecond), strings.Join(keys, ", "))
		}
		if err := r.pause(ctx); err != nil {
			return err
		}
	}
}
