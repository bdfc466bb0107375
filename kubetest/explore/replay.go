package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/baggage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/health"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/internal/generate"
	"github.com/loam-dev/loam/kubetest/wait"
)

// replay runs steps against a fresh namespace with a fresh operator, and
// returns what failed first, or nil. When refused isn't nil, as long as
// steps, it sets refused[i] to why the API server refused the i-th
// step's change, for each it refused. It logs where its time went. When steps have faults and pass,
// it replays them again without their faults, and fails when the two
// replays end apart (differential.go).
func (e *explorer) replay(t *testing.T, steps []Step, refused []string) error {
	t.Helper()
	ended, err := e.run(t, steps, refused, false)
	if err != nil {
		return err
	}
	return e.unfaulted(t, steps, ended)
}

// run is replay without its comparison with the same steps replayed
// without faults: it returns every explored object's outcome after the
// last step. Unless it replays the reference, the steps without their
// faults, it creates a fresh object of each step's spec after the step,
// and compares (differential.go), and counts the steps in the tally.
func (e *explorer) run(t *testing.T, steps []Step, refused []string, reference bool) (_ map[string]outcome, failed error) {
	t.Helper()
	ctx := t.Context()
	w := &writes{objects: map[string]object{}, last: time.Now(), explored: e.gvr.GroupResource()}
	r := &replicas{t: t, e: e, w: w, server: e.server}
	tm := r.startTiming("starting")
	defer func() { tm.log(t, len(steps), failed) }()
	// Run last, once the replica has stopped and counted its reconciles.
	defer func() { e.add(r.n) }()
	r.ns = e.cluster.Namespace(t)
	// Before the add above, which runs last.
	defer func() { r.n.lost, r.n.old = r.n.lost+w.takeCuts(), r.n.old+w.takeOld() }()
	w.restart = func() { r.server.begin(ctx) }
	defer func() {
		if err := r.server.wait(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("explore: %v", err)
		}
	}()
	// The seed objects are there before the operator starts, as the
	// objects an operator's users refer to are.
	if err := e.createSeeds(ctx, r.ns); err != nil {
		return nil, err
	}
	proxy := e.cluster.Proxy(t, r.w.serve)
	r.conn = proxy.Connection()
	r.conn.Token = e.cluster.Connection().Token
	if err := r.start(); err != nil {
		return nil, err
	}
	defer r.stop()
	objects := e.admin.Resource(e.gvr).Namespace(r.ns)

	for i, step := range steps {
		tm.next(fmt.Sprintf("step %d", i+1))
		if err := r.server.wait(ctx); err != nil {
			return nil, err
		}
		if err := e.setKubelet(ctx, r.ns, step.Kubelet); err != nil {
			return nil, fmt.Errorf("step %d, %s: %w", i+1, step, err)
		}
		r.w.arm(step)
		scenario, err := e.scenario(i, step)
		if err != nil {
			return nil, err
		}
		result, err := e.change(ctx, r, step, scenario)
		if err != nil {
			return nil, fmt.Errorf("step %d, %s: %w", i+1, step, err)
		}
		if !reference {
			r.n.tally.step(step, result)
		}
		if refused != nil {
			refused[i] = result.refused
		}
		r.admitted(step.Step, result)
		if err := e.agree(ctx, r, e.external(r.ns, step.Step), result); err != nil {
			return nil, fmt.Errorf("step %d, %s: %w", i+1, step, err)
		}
		if err := e.check(ctx, r); err != nil {
			return nil, fmt.Errorf("after step %d, %s: %w", i+1, step, err)
		}
		if !reference {
			if err := e.fresh(ctx, objects, r, step.Step); err != nil {
				return nil, fmt.Errorf("after step %d, %s: %w", i+1, step, err)
			}
		}
	}
	if err := r.server.wait(ctx); err != nil {
		return nil, err
	}
	ended, err := e.outcomes(ctx, objects, r)
	if err != nil {
		return nil, err
	}
	tm.next("deleting")
	// The last step's faults, if they didn't come, don't carry over.
	r.w.arm(Step{})
	r.w.release()
	if err := r.server.wait(ctx); err != nil {
		return nil, err
	}
	if err := e.deleteAll(ctx, objects, r); err != nil {
		return nil, fmt.Errorf("after deleting every %s: %w", e.kind, err)
	}
	if err := e.checkGone(ctx, r.ns); err != nil {
		return nil, fmt.Errorf("after deleting every %s, outside the cluster: %w", e.kind, err)
	}
	tm.next("stopping")
	return ended, nil
}

// replicas runs the operator of one replay, a replica at a time: a fresh
// one replaces one that crashed.
type replicas struct {
	t    *testing.T
	e    *explorer
	ns   string
	w    *writes
	conn kube.Connection
	// server restarts the API server.
	server *restarter
	// app is the running replica, and synced the Monitors of its
	// Services' caches: those that have a Synced method, as a
	// kube.Controller has.
	app    *apptest.App
	synced []health.Monitor
	// syncedAt is when the running replica was first seen synced, or
	// zero while it isn't yet; startedAt when it started, and wasSynced
	// whether it has ever been seen synced.
	syncedAt, startedAt time.Time
	wasSynced           bool
	// busy are the objects the running replica was reconciling when
	// quiet last looked, in the order their reconciles began.
	busy []string
	// panics are the panics of the replicas stopped.
	panics []string
	// n is what this replay counted: the explorer adds it to its total
	// when the replay ends.
	n counted
	// world is what the checks last saw of the Pods and workloads.
	world world
	// unadmitted are the explored objects, by name, whose spec the API
	// server admitted while the operator, and its admission webhooks,
	// were down (down.go).
	unadmitted map[string]bool
}

// start starts a fresh replica behind a network of its own, which a
// crash cuts.
func (r *replicas) start() error {
	network := &apptest.Switch{}
	r.w.replica(network.Cut)
	// Each replica's Host holds the Config's Files, afresh, as a
	// restarted Pod's mounts do.
	host := apptest.NewHost(r.t, apptest.WithFiles(r.e.files))
	options := []app.Option{app.WithHost(app.Host{Network: network, FS: host.FS()})}
	if r.e.codec != nil {
		options = append(options, app.WithFaults(fault.Settings{Decoder: r.e.codec}))
	}
	var built bool
	var synced []health.Monitor
	a := apptest.Start(r.t, func(_ context.Context, s *app.Setup) ([]app.Service, error) {
		client, err := kube.NewClient(s, r.conn)
		if err != nil {
			return nil, err
		}
		services, err := r.e.build(s, client, r.ns)
		built = err == nil
		for _, svc := range services {
			if c, ok := svc.(interface{ Synced() health.Monitor }); ok {
				synced = append(synced, c.Synced())
			}
		}
		return services, err
	}, apptest.WithHost(host), apptest.WithAppOptions(options...))
	a.Setup()
	r.app, r.synced, r.syncedAt, r.startedAt, r.wasSynced = a, synced, time.Time{}, time.Now(), false
	if !built {
		return fmt.Errorf("the Build failed: %s", wait.Report("the operator", a, a.Telemetry()))
	}
	return nil
}

// quiet returns how long the running replica has been quiet: since the
// operator's last write, or since the replica was first seen synced,
// whichever is later, and 0 while it isn't synced or while one of its
// reconciles is under way. A fresh replica writes nothing until its
// caches have synced and it has reconciled, which may take longer than
// Quiet: until then its quiet says nothing. Nor does a reconcile's
// silence while it works outside the cluster, a CREATE DATABASE, say:
// what it does there shows in the cluster only once it is done, so
// Quiet needn't outlast it.
func (r *replicas) quiet(ctx context.Context) time.Duration {
	r.busy = nil
	for _, m := range r.synced {
		if ok, err := m.Healthy(ctx); !ok || err != nil {
			r.syncedAt = time.Time{}
			return 0
		}
	}
	if r.syncedAt.IsZero() {
		r.syncedAt, r.wasSynced = time.Now(), true
	}
	if r.busy = underWay(r.app.Telemetry().Running()); len(r.busy) > 0 {
		return 0
	}
	return min(r.w.since(), time.Since(r.syncedAt))
}

// deadline returns when a wait that began at start, and may take Settle,
// is over: later after an API server's restart (restarter.deadline),
// and while a relist after lost events is still to come or has just
// come (writes.deadline).
func (r *replicas) deadline(start time.Time) time.Time {
	return r.w.deadline(r.server.deadline(start, r.e.settle), r.e.settle)
}

// stop stops the running replica, keeping what panicked in it, and
// counting the requests it had fail and its reconciles.
func (r *replicas) stop() {
	r.app.Stop()
	r.panics = append(r.panics, r.app.Telemetry().ExceptionMessages("reconcile panicked")...)
	r.n.failed += len(r.app.Telemetry().ExceptionMessages(fault.InjectedBody))
	for _, rec := range reconciles(r.app.Telemetry().Spans()) {
		r.n.tally.reconciles++
		if rec.succeeded {
			r.n.tally.succeeded++
		}
	}
}

// recover replaces the running replica with a fresh one once it has
// crashed. A crashed replica is cut off: its stop, which would release
// the Lease, reaches nothing.
func (r *replicas) recover() error {
	if !r.w.hasCrashed() {
		return nil
	}
	r.n.crashes++
	r.stop()
	// A fresh replica that started while the API server restarts would
	// fail its first list and exit, and the kubelet would start it again
	// until the server were back: it starts once the server is back.
	if err := r.server.wait(r.t.Context()); err != nil {
		return err
	}
	return r.start()
}

// panicked returns what panicked in any replica so far.
func (r *replicas) panicked() []string {
	return append(slices.Clone(r.panics), r.app.Telemetry().ExceptionMessages("reconcile panicked")...)
}

// pause waits a poll's interval, and fails when ctx ends or the running
// replica exits on its own first, unless it had crashed.
func (r *replicas) pause(ctx context.Context) error {
	if err := r.recover(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-r.app.Done():
		if r.w.hasCrashed() {
			// Cut off by its crash since the recover above, it lost its
			// Lease and exited, as a crashed replica may.
			return r.recover()
		}
		if restartedOut(r.wasSynced, r.server.during(r.startedAt), r.app.Telemetry().ExceptionMessages("service failed")) {
			// It exited for the API server's restart, as a Pod's
			// process would, and the kubelet would start it again. It
			// starts once the server is back.
			r.stop()
			if err := r.server.wait(ctx); err != nil {
				return err
			}
			return r.start()
		}
		return fmt.Errorf("the operator exited with %d: %s", r.app.Wait(), wait.Report("the operator", r.app, r.app.Telemetry()))
	case <-time.After(100 * time.Millisecond):
		return nil
	}
}

// restartedOut reports whether a replica that exited on its own did so
// for a restart of the API server since it started (restarted), as a
// Pod's process does: a restart began as it started (a crash and a
// restart at writes of one step race), so its first list failed and it
// never synced; or the server was away longer than the Lease's
// RenewDeadline, so it lost its Lease (failed, what its Services failed
// with, says so) and exited, as kube.Controller must. make explore's
// databases run met the second on a loaded machine, where a restart took
// 15 s. Any other exit is the operator's.
func restartedOut(synced, restarted bool, failed []string) bool {
	if !restarted {
		return false
	}
	return !synced || slices.ContainsFunc(failed, func(msg string) bool {
		return strings.Contains(msg, kube.ErrLostLeadership.Error())
	})
}

// scenario returns the value of the annotation that fails the request
// the i-th step's FailAt names, or "" when it fails none. Its ID names the
// step, so that each step's scenario is counted afresh.
func (e *explorer) scenario(i int, step Step) (string, error) {
	if step.FailAt == 0 {
		return "", nil
	}
	var rules []fit.Rule
	if step.FailAt > 1 {
		// The zero Fault lets the requests before it through, counted.
		rules = append(rules, fit.Rule{Point: "kube:*", Count: step.FailAt - 1})
	}
	rules = append(rules, fit.Rule{Point: "kube:*", Count: 1, Fault: fit.Fault{Abort: step.FailWith == 0, Status: step.FailWith}})
	ctx, err := fit.ContextWithScenario(context.Background(), e.codec, fit.Scenario{ID: fmt.Sprintf("explore-step-%d", i+1), Rules: rules})
	if err != nil {
		return "", fmt.Errorf("step %d, %s: %w", i+1, step, err)
	}
	return baggage.FromContext(ctx).String(), nil
}

// do makes one step's change, to, with scenario in the explored object's
// annotation, or none when it is "", when transient errors are on. A
// step the cluster's state makes pointless, as a shrunk sequence may hold
// (an update of an object that isn't there), is skipped: wasted, not
// failed. A spec the API server refuses (a CEL rule the generator
// doesn't solve, an admission webhook's denial) is skipped too. do says
// which it was, for the explorer to count.
func (e *explorer) do(ctx context.Context, to writeTo, ns string, step generate.Step, scenario string) (made, error) {
	var err error
	objects := to.objects
	switch step.Op {
	case generate.Create:
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": to.apiVersion, "kind": e.kind,
			"metadata": map[string]any{"name": step.Name, "namespace": ns},
			"spec":     step.Spec,
		}}
		if scenario != "" {
			u.SetAnnotations(map[string]string{e.annotation: scenario})
		}
		_, err = objects.Create(ctx, u, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return made{wasted: true}, nil
		}
	case generate.Update:
		var deleting bool
		deleting, err = e.updateSpec(ctx, objects, step.Name, step.Spec, scenario)
		if deleting {
			return made{wasted: true}, nil
		}
	case generate.Delete:
		if e.annotation != "" {
			// The finalizer's reconciles carry the delete's scenario, or
			// none: not one an earlier step left.
			value := any(nil)
			if scenario != "" {
				value = scenario
			}
			patch, merr := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{e.annotation: value}}})
			if merr != nil {
				return made{}, merr
			}
			if _, err = objects.Patch(ctx, step.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				break
			}
		}
		err = objects.Delete(ctx, step.Name, metav1.DeleteOptions{})
	}
	switch {
	case refusal(err):
		return made{refused: err.Error()}, nil
	case apierrors.IsNotFound(err):
		return made{wasted: true}, nil
	}
	return made{}, err
}

// made is what became of a step's change: made, wasted on an object that
// wasn't there, was being deleted or was there already, or refused by
// the API server, and why; and, for a step made while the operator was
// down, down, with why the API server refused it then, when it did, in
// downRefused (down.go).
type made struct {
	wasted      bool
	refused     string
	down        bool
	downRefused string
}

// updateSpec replaces name's whole spec, and its scenario annotation
// when transient errors are on, retrying on a conflict with the
// operator's own writes. It changes nothing, and reports deleting, when
// name is being deleted.
func (e *explorer) updateSpec(ctx context.Context, objects dynamic.ResourceInterface, name string, spec map[string]any, scenario string) (deleting bool, err error) {
	for {
		u, err := objects.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if u.GetDeletionTimestamp() != nil {
			return true, nil
		}
		u.Object["spec"] = spec
		if e.annotation != "" {
			annotations := u.GetAnnotations()
			delete(annotations, e.annotation)
			if scenario != "" {
				if annotations == nil {
					annotations = map[string]string{}
				}
				annotations[e.annotation] = scenario
			}
			u.SetAnnotations(annotations)
		}
		_, err = objects.Update(ctx, u, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return false, err
		}
	}
}
