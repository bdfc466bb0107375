package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The deletion race's finalizers: the controller's own, and one another
// field manager adds and removes while the controller works.
const (
	chaosFinalizer = "chaos.example.com/cleanup"
	otherFinalizer = "other.example.com/hold"
	otherManager   = "other-manager"
)

// objectEvent is one watch event of an object, as the API server sent it.
type objectEvent struct {
	typ        watch.EventType
	name       string
	uid        types.UID
	rv         int64
	finalizers []string
	deleting   bool
	// owners are the field managers of the finalizers, with the
	// operation, for a failure to show who removed one.
	owners []string
}

// eventLog keeps every event of a resource's objects in one namespace,
// from a watch the test holds, in the order the API server sent them.
type eventLog struct {
	mu     sync.Mutex
	events []objectEvent
	err    error
}

// watchObjects watches ri from now on until stop is called, resuming from
// the last event after the watch ends.
func watchObjects(t *testing.T, ri dynamic.ResourceInterface) (log *eventLog, stop func()) {
	t.Helper()
	list, err := ri.List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	log = &eventLog{}
	var wg sync.WaitGroup
	wg.Go(func() {
		rv := list.GetResourceVersion()
		for ctx.Err() == nil {
			w, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				if ctx.Err() == nil {
					log.fail(err)
				}
				return
			}
			for ev := range w.ResultChan() {
				if ctx.Err() != nil {
					break // stopped: what the watch says now is about that
				}
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					log.fail(fmt.Errorf("a watch event of %T: %v", ev.Object, ev.Object))
					continue
				}
				rv = u.GetResourceVersion()
				n, err := strconv.ParseInt(rv, 10, 64)
				if err != nil {
					log.fail(err)
				}
				log.add(objectEvent{
					typ: ev.Type, name: u.GetName(), uid: u.GetUID(), rv: n,
					finalizers: u.GetFinalizers(), deleting: u.GetDeletionTimestamp() != nil,
					owners: finalizerOwners(u),
				})
			}
			w.Stop()
		}
	})
	stop = sync.OnceFunc(func() {
		cancel()
		wg.Wait()
	})
	t.Cleanup(stop)
	return log, stop
}

func (l *eventLog) add(e objectEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// of returns name's events, in order.
func (l *eventLog) of(name string) []objectEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var of []objectEvent
	for _, e := range l.events {
		if e.name == name {
			of = append(of, e)
		}
	}
	return of
}

// reached reports whether the watch has sent an event at revision or
// later: it has sent every event before it.
func (l *eventLog) reached(revision int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.events, func(e objectEvent) bool { return e.rv >= revision })
}

func (l *eventLog) count(typ watch.EventType) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.typ == typ {
			n++
		}
	}
	return n
}

// errNotHeld is applyOther's error when its apply succeeded but the
// object doesn't carry the finalizer.
var errNotHeld = errors.New("the other manager's finalizer isn't held")

// holding is when the other field manager held its finalizer on an
// object: from the resourceVersion its apply that added it made, to the
// one its apply that removed it made.
type holding struct{ from, to int64 }

// stepAnnotation numbers the other manager's applies, so none is ever a
// no-op: the resourceVersion each returns is that of its own change, and
// a change of someone else's just before can't pass for it.
const stepAnnotation = "other.example.com/step"

// applyOther applies the metadata of the object name, held to uid, with
// the other manager's finalizer when hold is true and without it
// otherwise, as another controller sharing the object does, as its step'th
// apply.
func applyOther(ctx context.Context, ri dynamic.ResourceInterface, r kube.Resource[memcachedSpec, memcachedStatus], name string, uid types.UID, hold bool, step int) (int64, error) {
	meta := map[string]any{"name": name, "uid": string(uid), "annotations": map[string]any{stepAnnotation: strconv.Itoa(step)}}
	if hold {
		meta["finalizers"] = []any{otherFinalizer}
	}
	// The spec it created the object with, which it keeps.
	body := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": r.Group + "/" + r.Version, "kind": r.Kind, "metadata": meta,
		"spec": map[string]any{"size": int64(1)},
	}}
	u, err := ri.Apply(ctx, name, body, metav1.ApplyOptions{FieldManager: otherManager})
	if err != nil {
		return 0, err
	}
	if hold && !slices.Contains(u.GetFinalizers(), otherFinalizer) {
		return 0, fmt.Errorf("%w: applied, but the API server left the finalizer out: %v, deleting: %v", errNotHeld, u.GetFinalizers(), u.GetDeletionTimestamp() != nil)
	}
	return strconv.ParseInt(u.GetResourceVersion(), 10, 64)
}

// gone reports whether err is an apply's to an object that no longer
// exists: one held to a uid is a Conflict that says so.
func gone(err error) bool {
	return apierrors.IsNotFound(err) || (apierrors.IsConflict(err) && strings.Contains(err.Error(), "no existing object was found"))
}

// waitWithout waits, for ten seconds at most, until the object name is
// gone or has no finalizer f. It is the other manager's pacing, not a
// check: it runs on a goroutine of its own, where a test may not fail,
// so it gives up quietly rather than with wait.For, and the watch's
// events tell afterwards what happened.
func waitWithout(ctx context.Context, ri dynamic.ResourceInterface, name, f string) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil || !slices.Contains(u.GetFinalizers(), f) {
			return
		}
	}
}

// createHeld creates the Memcached ns/name of size 1 as the other field
// manager, with its finalizer, and returns its uid and the
// resourceVersion it was created at.
func createHeld(t *testing.T, ri dynamic.ResourceInterface, r kube.Resource[memcachedSpec, memcachedStatus], ns, name string) (types.UID, int64) {
	t.Helper()
	body := memcached.New(r, ns, name, 1)
	body.SetFinalizers([]string{otherFinalizer})
	u, err := ri.Apply(t.Context(), name, body, metav1.ApplyOptions{FieldManager: otherManager})
	require.NoError(t, err)
	rv, err := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	require.NoError(t, err)
	return u.GetUID(), rv
}

// raceTracker records the reconciles and finalizes of the deletion race.
type raceTracker struct {
	mu        sync.Mutex
	started   map[string]chan struct{}
	deleted   map[string]chan struct{}
	inFlight  map[string]int
	finalized map[string]int
	// deleting counts the Reconciler's calls with an object being deleted,
	// which it must never get.
	deleting atomic.Int32
}

func newRaceTracker(names []string) *raceTracker {
	rt := &raceTracker{
		started: map[string]chan struct{}{}, deleted: map[string]chan struct{}{},
		inFlight: map[string]int{}, finalized: map[string]int{},
	}
	for _, n := range names {
		rt.started[n] = make(chan struct{})
		rt.deleted[n] = make(chan struct{})
	}
	return rt
}

// deletedCh is closed once the test's deletion of name has returned.
func (rt *raceTracker) deletedCh(name string) chan struct{} {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.deleted[name]
}

func (rt *raceTracker) begin(name string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.inFlight[name]++
	if ch := rt.started[name]; ch != nil {
		close(ch)
		rt.started[name] = nil
	}
}

func (rt *raceTracker) end(name string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.inFlight[name]--
}

func (rt *raceTracker) reconciling(name string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.inFlight[name] > 0
}

func (rt *raceTracker) startedCh(name string) <-chan struct{} {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if ch := rt.started[name]; ch != nil {
		return ch
	}
	closed := make(chan struct{})
	close(closed)
	return closed
}

func (rt *raceTracker) finalize(name string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.finalized[name]++
}

func (rt *raceTracker) finalizes(name string) int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.finalized[name]
}

func TestChaos_deletions_race_slow_reconciles_and_another_manager_s_finalizer_and_nothing_comes_back(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	objects := chaosSize(20, 200)
	names := make([]string, objects)
	for i := range names {
		names[i] = fmt.Sprintf("racer-%03d", i)
	}
	events, stopWatching := watchObjects(t, memcacheds)

	// The marker is made once every other object is gone, to tell when
	// the controller has seen every deletion.
	const marker = "marker"
	rt := newRaceTracker(append(slices.Clone(names), marker))
	waitsForDelete := map[string]bool{}
	for i, name := range names {
		waitsForDelete[name] = i%2 == 0
	}
	a := startChaosController(t, c.Connection(), app.Host{Network: &chaosNetwork{}}, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		kc, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		settings := settingsFor("deletion-controller", ns, "pod-0")
		settings.Namespace = ns
		settings.Workers = 4
		child := memcachedReconciler{kube: kc, identity: "pod-0", seen: &seen{}}
		slow := kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(ctx context.Context, m memcachedObject) (kube.Result[memcachedStatus], error) {
			rt.begin(m.Name)
			defer rt.end(m.Name)
			if m.Name == marker {
				return kube.Result[memcachedStatus]{}, nil
			}
			if m.DeletionTimestamp != nil {
				rt.deleting.Add(1)
			}
			// Slow: the first reconcile of half the objects waits until
			// the object's deletion has returned, so it lands in the
			// middle, before the child and the status are applied; the
			// others take a while at any rate.
			if waitsForDelete[m.Name] {
				select {
				case <-rt.deletedCh(m.Name):
				case <-time.After(10 * time.Second):
				}
			}
			time.Sleep(rand.N(200 * time.Millisecond))
			return child.Reconcile(ctx, m)
		})
		return kube.NewController(s, client, settings, r, slow,
			kube.Owns(deploymentsGVR),
			kube.Finalize(chaosFinalizer, func(_ context.Context, m memcachedObject) error {
				time.Sleep(rand.N(50 * time.Millisecond))
				rt.finalize(m.Name)
				return nil
			}))
	})

	var (
		wg              sync.WaitGroup
		mu              sync.Mutex
		uids            = map[types.UID]string{}
		holds           = map[string][]holding{}
		lost            = map[string]bool{}
		upstreamRaces   int
		bypassed        int
		deletedInFlight atomic.Int32
	)
	start := time.Now()
	for _, name := range names {
		// Another field manager creates the object with its finalizer,
		// so the controller's first apply meets it there, then removes it
		// and adds it again, over and over, until the object is being
		// deleted; then it lets go, so the deletion can end.
		uid, from := createHeld(t, memcacheds, r, ns, name)
		mu.Lock()
		uids[uid] = name
		mu.Unlock()
		deleted := rt.deletedCh(name)
		wg.Go(func() {
			ctx := context.WithoutCancel(t.Context())
			step := 0
			for {
				time.Sleep(rand.N(150 * time.Millisecond))
				select {
				case <-deleted:
					// Held as the deletion began: hold on until the
					// controller has removed its own finalizer, so its
					// removal always meets this one.
					waitWithout(ctx, memcacheds, name, chaosFinalizer)
				default:
				}
				step++
				to, err := applyOther(ctx, memcacheds, r, name, uid, false, step)
				for apierrors.IsConflict(err) && !gone(err) {
					time.Sleep(50 * time.Millisecond)
					step++
					to, err = applyOther(ctx, memcacheds, r, name, uid, false, step)
				}
				if err != nil && !gone(err) {
					t.Errorf("%s: the other manager's release failed: %v", name, err)
					return
				}
				if err != nil {
					// Gone while its finalizer was held: the checks of the
					// watch's events below tell who removed it.
					t.Logf("%s: the other manager's finalizer, added at resourceVersion %d, is gone before it let go: %v", name, from, err)
					mu.Lock()
					holds[name] = append(holds[name], holding{from: from, to: math.MaxInt64})
					lost[name] = true
					mu.Unlock()
					return
				}
				mu.Lock()
				holds[name] = append(holds[name], holding{from: from, to: to})
				mu.Unlock()
				select {
				case <-deleted:
					return
				case <-time.After(rand.N(100 * time.Millisecond)):
				}
				step++
				if from, err = applyOther(ctx, memcacheds, r, name, uid, true, step); err != nil {
					// Being deleted, so no new finalizer may be added, or
					// gone.
					if errors.Is(err, errNotHeld) {
						t.Logf("%s: %v", name, err)
					}
					return
				}
			}
		})
		// Half the objects are deleted while their first reconcile runs;
		// the others at any moment.
		wg.Go(func() {
			defer close(deleted)
			if waitsForDelete[name] {
				select {
				case <-rt.startedCh(name):
				case <-time.After(time.Minute):
					t.Errorf("%s: never reconciled", name)
				}
			} else {
				time.Sleep(rand.N(500 * time.Millisecond))
			}
			err := memcacheds.Delete(context.WithoutCancel(t.Context()), name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(uid)}})
			if err != nil {
				t.Errorf("deleting %s: %v", name, err)
				return
			}
			if rt.reconciling(name) {
				deletedInFlight.Add(1)
			}
		})
	}
	wg.Wait()

	// Every object is gone: each finalizer of ours was removed once its
	// Finalize succeeded, and the other manager let go of its own.
	wait.For(t, time.Minute, func() bool {
		list, err := memcacheds.List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		return len(list.Items) == 0
	}, "objects are left behind", a)
	gone := time.Since(start)
	wait.For(t, time.Minute, func() bool { return events.count(watch.Deleted) >= objects }, "the watch never saw every deletion", a)
	// Nothing comes back: a reconcile still in flight, a status apply or
	// a retry must not re-create an object. The proof needs no pause. The
	// controller reconciles a marker made after every deletion, so its
	// informer, which delivers in order, has seen them all: no later pass
	// reads a deleted object, and a retry of one finds nothing to do. Then
	// it stops, so nothing of it runs on; and the test's watch sees a
	// change made after that, so it has seen every write the controller
	// made.
	newMemcached(t, admin.dynamic, r, ns, marker, 1)
	wait.For(t, time.Minute, func() bool {
		select {
		case <-rt.startedCh(marker):
			return true
		default:
			return false
		}
	}, "the controller never reconciled the marker made after the deletions", a)
	require.Equal(t, 0, a.Stop())
	stopped := touch(t, memcacheds, marker, "after-the-controller-stopped")
	wait.For(t, time.Minute, func() bool { return events.reached(stopped) }, "the watch never saw the change made after the controller stopped")
	stopWatching()
	require.NoError(t, events.err)

	cycles := 0
	for _, name := range names {
		evs := events.of(name)
		require.NotEmpty(t, evs, name)
		require.Equal(t, watch.Added, evs[0].typ, "%s: first seen %s", name, evs[0].typ)
		for i, e := range evs {
			require.Equal(t, evs[0].uid, e.uid, "%s: another object of the same name", name)
			if i > 0 {
				require.NotEqual(t, watch.Added, e.typ, "%s: added again", name)
			}
		}
		last := evs[len(evs)-1]
		require.Equal(t, watch.Deleted, last.typ, "%s: not deleted last", name)
		require.Equal(t, 1, countOf(evs, watch.Deleted), "%s: deleted twice", name)

		// Whatever the controller applied while the other manager held its
		// finalizer kept it: the controller's applies name its own
		// finalizer only.
		for _, h := range holds[name] {
			cycles++
			for _, e := range evs {
				if e.rv >= h.from && e.rv < h.to {
					require.Contains(t, e.finalizers, otherFinalizer, "%s at resourceVersion %d: the other manager's finalizer was removed while it held it (%d–%d):%s", name, e.rv, h.from, h.to, history(evs))
				}
			}
		}

		// An object gone while the other manager held its finalizer was
		// deleted by the API server with the finalizer on, because the
		// deletion had found none a moment before and went ahead at once:
		// kubernetes/kubernetes#77988, a race between a delete and an
		// update that adds a finalizer, in the API server. The controller
		// did nothing: no version without the finalizer was ever written
		// (the check above), and the deletion never began gracefully.
		if lost[name] {
			require.Contains(t, last.finalizers, otherFinalizer, "%s: gone without the other manager's finalizer:%s", name, history(evs))
			require.False(t, slices.ContainsFunc(evs, func(e objectEvent) bool { return e.deleting }),
				"%s: gone with the other manager's finalizer after a graceful deletion began:%s", name, history(evs))
			upstreamRaces++
		}

		// The object went only after Finalize ran, if it ever carried our
		// finalizer when its deletion began.
		if i := slices.IndexFunc(evs, func(e objectEvent) bool { return e.deleting }); i >= 0 && slices.Contains(evs[i].finalizers, chaosFinalizer) {
			require.Positive(t, rt.finalizes(name), "%s: its finalizer went without Finalize", name)
		} else if i < 0 && slices.Contains(last.finalizers, chaosFinalizer) {
			// Deleted at once with our finalizer on, by the same race in
			// the API server: Finalize never had a chance.
			bypassed++
		}
	}
	require.Zero(t, rt.deleting.Load(), "the Reconciler was called with an object being deleted")

	// Children: each is controlled by one of the deleted objects, so the
	// garbage collector, which the shared cluster doesn't run, removes it.
	// Those applied by a reconcile that outlived its object are the
	// orphans.
	deployments, err := admin.kube.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, d := range deployments.Items {
		ref := metav1.GetControllerOf(&d)
		require.NotNil(t, ref, "Deployment %s has no controller", d.Name)
		require.Contains(t, uids, ref.UID, "Deployment %s is controlled by an object the test never made", d.Name)
		require.Equal(t, uids[ref.UID], d.Name)
	}
	require.GreaterOrEqual(t, int(deletedInFlight.Load()), objects/2, "the deletions didn't land while reconciles ran")
	t.Logf("figure: deletion races: %d objects, %d deleted while reconciled, %d hold cycles of another manager's finalizer; every object gone %v after the first was created; %d failed reconciles (retried), %d children left for the garbage collector, 0 objects re-created; %d deleted by the API server with the other's finalizer just added and %d with ours (kubernetes#77988)",
		objects, deletedInFlight.Load(), cycles, gone.Round(time.Millisecond), len(a.Telemetry().ExceptionMessages("reconcile failed")), len(deployments.Items), upstreamRaces, bypassed)
	for _, msg := range a.Telemetry().ExceptionMessages("reconcile failed") {
		t.Logf("a failed reconcile, retried: %s", msg)
	}
	require.Empty(t, a.Telemetry().ExceptionMessages("reconcile panicked"))
}

// finalizerOwners returns who owns which finalizers of u, as its managed
// fields say.
func finalizerOwners(u *unstructured.Unstructured) []string {
	var owners []string
	for _, e := range u.GetManagedFields() {
		if e.FieldsV1 == nil || !bytes.Contains(e.FieldsV1.GetRawBytes(), []byte("f:finalizers")) {
			continue
		}
		owners = append(owners, fmt.Sprintf("%s/%s%s: %s", e.Manager, e.Operation, e.Subresource, e.FieldsV1.GetRawBytes()))
	}
	return owners
}

// history prints evs, for a failure.
func history(evs []objectEvent) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "\n  %s rv=%d deleting=%v finalizers=%v owners=%v", e.typ, e.rv, e.deleting, e.finalizers, e.owners)
	}
	return b.String()
}

func countOf(evs []objectEvent, typ watch.EventType) int {
	n := 0
	for _, e := range evs {
		if e.typ == typ {
			n++
		}
	}
	return n
}
