package scale

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/loam-dev/loam/adapters/queue"
	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/internal/controllerapp"
	"github.com/loam-dev/loam/kubetest/wait"
	"github.com/loam-dev/loam/ports"
)

// The priority phase's variants: a kube.Controller as it ships, and the
// same three parts — an informer, a work queue, one worker — assembled by
// the harness around adapters/queue's priority queue and around
// client-go's plain FIFO queue, which loam's queue was before. A
// Controller has no switch to a FIFO queue, and none is added for a
// benchmark: the harness's own assembly is the switch.
const (
	priorityController = "controller"
	priorityQueue      = "priority"
	priorityFIFO       = "fifo"
)

var priorityVariants = []string{priorityController, priorityQueue, priorityFIFO}

// reconcileCost is what each reconcile of the priority phase costs: a
// fixed sleep, so that draining N keys takes N times as long with one
// worker whatever the machine's load, and the wait the order saves is
// told apart from the API server's pace.
const reconcileCost = time.Millisecond

// configMapKind is the priority phase's primary: ConfigMaps, which cost
// the API server little to create by the ten thousand.
var configMapKind = kube.Kind[corev1.ConfigMap]{GVR: configMaps, Kind: "ConfigMap", Scope: kube.Namespaced}

// priorityResult is one run of the priority phase: N initial keys queued
// by a new leader's first list, drained by one worker at reconcileCost
// each, and a ConfigMap created once they were all queued.
type priorityResult struct {
	n       int
	variant string
	run     int
	// toReconcile is the time from just before the create until the new
	// ConfigMap's reconcile began; toEvent until the informer handed it
	// over (the harness's own variants alone).
	toReconcile, toEvent time.Duration
	// ahead is how many reconciles began between the create and the new
	// ConfigMap's; behind how many initial keys were still to be
	// reconciled when it began.
	ahead, behind int
	// drain is the time from the create until the last initial key's
	// reconcile began.
	drain time.Duration
}

// priorityObjects creates n ConfigMaps in a namespace of their own, and
// returns it.
func priorityObjects(t *testing.T, c *kubetest.Cluster, cfg config, n int) string {
	t.Helper()
	ctx := t.Context()
	cl := newClients(t, c.RESTConfig())
	ns := c.Namespace(t)
	t.Cleanup(func() {
		require.NoError(t, cl.kube.CoreV1().ConfigMaps(ns).DeleteCollection(context.WithoutCancel(ctx), metav1.DeleteOptions{}, metav1.ListOptions{}))
	})
	require.NoError(t, parallel(ctx, n, cfg.loaders, func(ctx context.Context, i int) error {
		_, err := cl.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%06d", i)},
		}, metav1.CreateOptions{})
		return err
	}))
	return ns
}

// measurePriority runs variant once over the n ConfigMaps of ns, and
// checks that every initial key and the new ConfigMap were reconciled; no
// figure is asserted. The new ConfigMap is deleted afterwards, so that
// every run lists the same n.
func measurePriority(t *testing.T, c *kubetest.Cluster, ns string, n, run int, variant string) priorityResult {
	t.Helper()
	ctx := t.Context()
	cl := newClients(t, c.RESTConfig())
	rec := newReconciles(fmt.Sprintf("new-%s-%d", variant, run), n)
	create := func() {
		rec.change()
		_, err := cl.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: rec.target}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	var toEvent time.Duration
	if variant == priorityController {
		runPriorityController(t, c, ns, rec, run, create)
	} else {
		toEvent = runPriorityQueue(t, c, ns, rec, variant, create)
	}
	require.NoError(t, cl.kube.CoreV1().ConfigMaps(ns).Delete(context.WithoutCancel(ctx), rec.target, metav1.DeleteOptions{}))
	res := rec.result()
	res.n, res.run, res.variant, res.toEvent = n, run, variant, toEvent
	return res
}

// reconciles notes the reconciles a worker begins: how many, when the
// last one began, and when and after how many others the new ConfigMap's
// began.
type reconciles struct {
	target string
	n      int           // initial keys
	all    chan struct{} // closed once n+1 reconciles have begun

	mu       sync.Mutex
	begun    int
	changed  time.Time // when the create was sent
	atChange int       // reconciles begun by then
	at       time.Time // when the new ConfigMap's reconcile began
	ahead    int
	behind   int
	last     time.Time // when the n+1-th reconcile began
}

func newReconciles(target string, n int) *reconciles {
	return &reconciles{target: target, n: n, all: make(chan struct{})}
}

// change notes that the create is about to be sent.
func (r *reconciles) change() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changed, r.atChange = time.Now(), r.begun
}

// begin notes a reconcile of name: one of the n initial keys', each
// reconciled once, or the new ConfigMap's.
func (r *reconciles) begin(name string) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if name == r.target && r.at.IsZero() {
		r.at, r.ahead, r.behind = now, r.begun-r.atChange, r.n-r.begun
	}
	r.begun++
	if r.begun == r.n+1 {
		r.last = now
		close(r.all)
	}
}

// wait waits until every initial key's reconcile, and the new
// ConfigMap's, has begun.
func (r *reconciles) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-r.all:
	case <-t.Context().Done():
		r.mu.Lock()
		defer r.mu.Unlock()
		t.Fatalf("%s: %d of %d reconciles begun", what, r.begun, r.n+1)
	}
}

// result returns what the run measured, once every reconcile has begun.
func (r *reconciles) result() priorityResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return priorityResult{toReconcile: r.at.Sub(r.changed), ahead: r.ahead, behind: r.behind, drain: r.last.Sub(r.changed)}
}

// runPriorityQueue runs the harness's own informer, queue and worker over
// the ConfigMaps of ns: the initial list's keys are added in the
// background to the priority queue, and every key alike to the FIFO one.
// Once every initial key is queued, the worker starts, as a Controller's
// do once its caches have synced, and create is called. It returns the
// time from the create until the informer handed the new ConfigMap over.
func runPriorityQueue(t *testing.T, c *kubetest.Cluster, ns string, rec *reconciles, variant string, create func()) time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cl := newClients(t, ownConnection(c.RESTConfig()))

	var q workQueue
	var initial func(ports.Key)
	switch variant {
	case priorityQueue:
		pq := queue.New(queue.Config{})
		q, initial = pq, pq.AddBackground
	default:
		fifo := workqueue.NewTyped[ports.Key]()
		q, initial = fifo, fifo.Add
	}
	defer q.ShutDown()

	var (
		queued  atomic.Int64
		eventAt atomic.Int64 // when the new ConfigMap's event came, in Unix nanoseconds
	)
	factory := informers.NewSharedInformerFactoryWithOptions(cl.kube, 0, informers.WithNamespace(ns))
	defer func() {
		cancel() // the informer stops with ctx, which Shutdown waits for
		factory.Shutdown()
	}()
	inf := factory.Core().V1().ConfigMaps().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			cm := obj.(*corev1.ConfigMap)
			key := ports.Key{Namespace: cm.Namespace, Name: cm.Name}
			if isInInitialList {
				initial(key)
				queued.Add(1)
				return
			}
			if cm.Name == rec.target {
				eventAt.Store(time.Now().UnixNano())
			}
			q.Add(key)
		},
		UpdateFunc: func(_, obj any) {
			cm := obj.(*corev1.ConfigMap)
			q.Add(ports.Key{Namespace: cm.Namespace, Name: cm.Name})
		},
	})
	require.NoError(t, err)
	factory.Start(ctx.Done())
	wait.For(t, 10*time.Minute, func() bool { return inf.HasSynced() && queued.Load() == int64(rec.n) },
		"the informer never queued the initial list")

	var worker sync.WaitGroup
	defer worker.Wait()
	defer q.ShutDown() // before the Wait
	worker.Go(func() {
		for {
			key, shutdown := q.Get()
			if shutdown {
				return
			}
			rec.begin(key.Name)
			time.Sleep(reconcileCost)
			q.Done(key)
		}
	})
	create()
	rec.wait(t, "the "+variant+" queue")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return time.Unix(0, eventAt.Load()).Sub(rec.changed)
}

// workQueue is what runPriorityQueue needs of either queue.
type workQueue interface {
	Add(ports.Key)
	Get() (ports.Key, bool)
	Done(ports.Key)
	ShutDown()
}

// runPriorityController runs a kube.Controller of the ConfigMaps of ns,
// with one worker, whose Reconciler sleeps reconcileCost, and calls
// create once the Controller's caches have synced and its queue has taken
// every initial key.
func runPriorityController(t *testing.T, c *kubetest.Cluster, ns string, rec *reconciles, run int, create func()) {
	t.Helper()
	ctx := t.Context()
	tel := apptest.NewTelemetry()
	a, ctrl := controllerapp.Start(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := kube.DefaultSettings()
		// A Lease of its own, which it takes at once.
		settings.Name = fmt.Sprintf("scale-priority-%d", run)
		settings.Namespace = ns
		settings.Workers = 1
		settings.LeaderElection.Namespace = ns
		settings.LeaderElection.Identity = "pod-0"
		return kube.NewKindController(s, client, settings, configMapKind,
			kube.KindReconcilerFunc[corev1.ConfigMap](func(_ context.Context, cm corev1.ConfigMap) (time.Duration, error) {
				rec.begin(cm.Name)
				time.Sleep(reconcileCost)
				return 0, nil
			}))
	}, app.WithHost(app.Host{Network: &network{}}), app.WithTelemetry(untraced(tel)))
	wait.For(t, 10*time.Minute, func() bool {
		ok, err := ctrl.Synced().Healthy(ctx)
		require.NoError(t, err)
		return ok && queueAdds(t, tel) >= int64(rec.n)
	}, "the Controller never queued the initial list", reportedApp{a, tel})
	create()
	rec.wait(t, "the Controller")
}

// reportedApp is an App whose records are in tel, as a failed wait
// reports it.
type reportedApp struct {
	*apptest.App
	tel *apptest.Telemetry
}

func (a reportedApp) Report() string { return wait.Report("the App", a.App, a.tel) }

// queueAdds returns the keys a Controller's queue took, from its
// queue.adds.
func queueAdds(t *testing.T, tel *apptest.Telemetry) int64 {
	t.Helper()
	n, err := tel.Total(t.Context(), telemetry.QueueAddsName)
	if errors.Is(err, apptest.ErrNotRecorded) {
		return 0
	}
	require.NoError(t, err)
	return n
}

// priorityMarkdown renders the priority phase's runs: per N and variant,
// the median of the runs and their spread.
func (r *report) priorityMarkdown() string {
	if len(r.priorities) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("### The priority queue's head start\n\n")
	fmt.Fprintf(&b, "One worker, each reconcile a sleep of %v, drains the N keys a new leader's first list queued; once all are queued, a ConfigMap is created. ", reconcileCost)
	b.WriteString("controller: a kube.Controller of the ConfigMaps. priority and fifo: the harness's own informer and worker around adapters/queue's queue (the initial keys added in the background) and around client-go's plain FIFO queue. ")
	b.WriteString("The median of the runs, (least–most); the variants of a repeat run one after the other, in an order rotated by one each repeat.\n\n")
	b.WriteString("| N | queue | runs | create → its reconcile | reconciles begun before it | initial keys behind it | create → last reconcile | create → the informer's event |\n")
	b.WriteString("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	type group struct {
		n       int
		variant string
	}
	var order []group
	runs := map[group][]priorityResult{}
	for _, p := range r.priorities {
		g := group{p.n, p.variant}
		if _, ok := runs[g]; !ok {
			order = append(order, g)
		}
		runs[g] = append(runs[g], p)
	}
	slices.SortStableFunc(order, func(a, b group) int {
		return cmp.Or(cmp.Compare(a.n, b.n), cmp.Compare(slices.Index(priorityVariants, a.variant), slices.Index(priorityVariants, b.variant)))
	})
	for _, g := range order {
		ps := runs[g]
		durations := func(f func(priorityResult) time.Duration) string {
			var ds []time.Duration
			for _, p := range ps {
				ds = append(ds, f(p))
			}
			return spreadOf(ds, msOrSecs)
		}
		counts := func(f func(priorityResult) int) string {
			var ds []time.Duration
			for _, p := range ps {
				ds = append(ds, time.Duration(f(p)))
			}
			return spreadOf(ds, func(d time.Duration) string { return strconv.FormatInt(int64(d), 10) })
		}
		event := "—"
		if g.variant != priorityController {
			event = durations(func(p priorityResult) time.Duration { return p.toEvent })
		}
		fmt.Fprintf(&b, "| %d | %s | %d | %s | %s | %s | %s | %s |\n", g.n, g.variant, len(ps),
			durations(func(p priorityResult) time.Duration { return p.toReconcile }),
			counts(func(p priorityResult) int { return p.ahead }),
			counts(func(p priorityResult) int { return p.behind }),
			durations(func(p priorityResult) time.Duration { return p.drain }),
			event)
	}
	b.WriteString("\n")
	return b.String()
}

// spreadOf formats the median of ds, and with more than one, their least
// and most.
func spreadOf(ds []time.Duration, format func(time.Duration) string) string {
	s := format(median(ds))
	if len(ds) > 1 {
		s += fmt.Sprintf(" (%s–%s)", format(slices.Min(ds)), format(slices.Max(ds)))
	}
	return s
}

// rotated returns vs rotated left by r, so that each repeat starts with
// another variant.
func rotated(vs []string, r int) []string {
	r %= len(vs)
	return append(slices.Clone(vs[r:]), vs[:r]...)
}

// msOrSecs formats d in milliseconds below a second, and in seconds from
// there on.
func msOrSecs(d time.Duration) string {
	if d < time.Second {
		return ms(d)
	}
	return secs(d)
}
