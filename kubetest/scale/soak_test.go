package scale

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/propagation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The soak: a Controller in a child process over N objects under
// continuous churn, its live heap and goroutines compared between a mark
// and the end. `make test` runs it for a minute with the mark at 30 s;
// `make soak` for 30 minutes with the mark at 5.
var (
	flagSoakN        = flag.Int("soak.n", 1000, "the soak's objects")
	flagSoakDuration = flag.Duration("soak.duration", time.Minute, "how long the soak churns the objects")
	flagSoakMark     = flag.Duration("soak.mark", 30*time.Second, "when, after churn starts, the soak takes the sample it compares the end with")
	flagSoakRate     = flag.Int("soak.rate", 20, "the soak's churn: operations per second, in turn two spec updates, a delete and a re-create")
	flagSoakWorkers  = flag.Int("soak.workers", 4, "the soak's Controller's workers")
	// flagSoakChild makes this test binary the soak's child process: the
	// file holds its job.
	flagSoakChild = flag.String("soak.child", "", "internal: run as the soak's child process, with the job in this file")
)

// soakTolerance is how far the end's live heap and goroutines may be from
// the mark's, as a fraction of the mark's: the promise.
const soakTolerance = 0.10

// soakSamples is how many samples, a second apart, make one of the
// child's measurements, which is their median: a goroutine of a request in
// flight comes and goes, and one sample would count it or not by chance.
const soakSamples = 5

// failedDeleted is the one failed reconcile churn explains: the object
// was deleted while its reconcile ran, so its status apply found nothing
// (404). A status apply on an object deleted and created again under the
// same name doesn't fail: the status subresource ignores the uid the
// apply names, and the new object's creation reconciles it again. The
// soak fails on any other failure.
const failedDeleted = "deleted during its reconcile: applying status: NotFound"

// soakChildJob is what the parent asks of the soak's child process.
type soakChildJob struct {
	Kubeconfig string `json:"kubeconfig"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Workers    int    `json:"workers"`
}

// soakSample is one measurement of the child, which it prints as a line
// "soak: " and the JSON.
type soakSample struct {
	// Heap is the median live heap after garbage collection, in bytes, and
	// Goroutines the median goroutine count, of soakSamples samples.
	Heap       uint64   `json:"heap"`
	Goroutines int      `json:"goroutines"`
	Heaps      []uint64 `json:"heaps"`
	Counts     []int    `json:"counts"`
	Reconciles int      `json:"reconciles"`
	// Failed counts the failed reconciles by what explains them;
	// Unexplained holds the first messages of those nothing does.
	Failed      map[string]int `json:"failed"`
	Unexplained []string       `json:"unexplained,omitempty"`
	// Records counts the App's other WARN and ERROR records by body.
	Records map[string]int `json:"records,omitempty"`
	// Exit is the App's exit code, in the last sample only.
	Exit *int `json:"exit,omitempty"`
}

// TestSoak runs the soak: -soak.n objects, a Controller over them in a
// child process, -soak.duration of churn at -soak.rate, and a sample of
// the child's live heap and goroutines at -soak.mark and at the end. Both
// must be within 10% of the mark's, every object must converge once the
// churn stops, and every failed reconcile must be one churn explains.
func TestSoak(t *testing.T) {
	require.Positive(t, *flagSoakN, "-soak.n")
	require.Positive(t, *flagSoakRate, "-soak.rate")
	require.Positive(t, *flagSoakMark, "-soak.mark")
	require.Greater(t, *flagSoakDuration, *flagSoakMark, "-soak.duration must be longer than -soak.mark")
	ctx := t.Context()
	c := startCluster(t)
	cl := newClients(t, c.RESTConfig())
	ns := c.Namespace(t)
	n := *flagSoakN
	_, err := createObjects(ctx, cl, ns, n, *flagLoaders)
	require.NoError(t, err)

	child := startSoakChild(t, c, soakChildJob{Namespace: ns, Name: "soak", Workers: *flagSoakWorkers})
	start := time.Now()
	waitConverged(t, cl, ns, 5*time.Minute, child)
	t.Logf("figure: %d objects converged in %v after the child started", n, time.Since(start).Round(100*time.Millisecond))

	ch := startChurn(ctx, cl, ns, n, *flagSoakRate)
	churnStart := time.Now()
	sleepUntil(t, churnStart.Add(*flagSoakMark), child, ch)
	mark := child.sample(t)
	t.Logf("figure: mark, %v into the churn: live heap %s, %d goroutines, %d reconciles (samples %v, %v)",
		*flagSoakMark, mib(int64(mark.Heap)), mark.Goroutines, mark.Reconciles, mark.Heaps, mark.Counts)
	sleepUntil(t, churnStart.Add(*flagSoakDuration), child, ch)
	end := child.sample(t)
	t.Logf("figure: end, %v into the churn: live heap %s, %d goroutines, %d reconciles (samples %v, %v)",
		*flagSoakDuration, mib(int64(end.Heap)), end.Goroutines, end.Reconciles, end.Heaps, end.Counts)
	ops := ch.stop()
	require.NoError(t, ops.err, "the churn")
	t.Logf("figure: churn: %d spec updates, %d deletes, %d re-creates in %v",
		ops.updates, ops.deletes, ops.creates, time.Since(churnStart).Round(time.Second))

	stopped := time.Now()
	waitConverged(t, cl, ns, 2*time.Minute, child)
	t.Logf("figure: every object converged %v after the churn stopped", time.Since(stopped).Round(100*time.Millisecond))
	last := child.stop(t)

	t.Logf("figure: heap end/mark %.3f, goroutines end/mark %.3f", ratio(float64(end.Heap), float64(mark.Heap)), ratio(float64(end.Goroutines), float64(mark.Goroutines)))
	t.Logf("figure: reconciles %d, failed by cause %v, other WARN/ERROR records %v", last.Reconciles, last.Failed, last.Records)
	require.Positive(t, end.Reconciles-mark.Reconciles, "the Controller reconciled nothing after the mark")
	require.InEpsilon(t, float64(mark.Heap), float64(end.Heap), soakTolerance,
		"the live heap at the end (%s) is not within 10%% of the mark's (%s)", mib(int64(end.Heap)), mib(int64(mark.Heap)))
	require.InEpsilon(t, float64(mark.Goroutines), float64(end.Goroutines), soakTolerance,
		"the goroutines at the end (%d) are not within 10%% of the mark's (%d)", end.Goroutines, mark.Goroutines)
	require.Empty(t, last.Unexplained, "failed reconciles that churn doesn't explain")
	require.NotNil(t, last.Exit)
	require.Equal(t, 0, *last.Exit, "the child's App exit code")
}

// ratio returns a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// sleepUntil waits until at, and fails the test when the child exits, the
// churn fails or the test's context ends first: the soak's whole point is
// time passing.
func sleepUntil(t *testing.T, at time.Time, child *soakChild, ch *churn) {
	t.Helper()
	timer := time.NewTimer(time.Until(at))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-child.done:
		t.Fatalf("the child process exited: %v\n%s", child.err, child.output())
	case <-ch.finished:
		t.Fatalf("the churn stopped: %v", ch.counts.err)
	case <-t.Context().Done():
		t.Fatalf("the test ended: %v", context.Cause(t.Context()))
	}
}

// waitConverged waits until every object of ns has a settled status and
// a ConfigMap that it controls, by its uid, holding its spec.
func waitConverged(t *testing.T, cl clients, ns string, within time.Duration, child *soakChild) {
	t.Helper()
	var lastSeen string
	wait.For(t, within, func() bool {
		lastSeen = unconverged(t.Context(), cl, ns)
		return lastSeen == ""
	}, "the objects never converged", child, wait.LastSeen(func() string { return lastSeen }))
}

// unconverged returns why the first object of ns that hasn't converged
// hasn't, or "" when all have.
func unconverged(ctx context.Context, cl clients, ns string) string {
	objects, err := cl.dynamic.Resource(resource.GVR()).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Sprintf("list the objects: %v", err)
	}
	cms, err := cl.kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Sprintf("list the ConfigMaps: %v", err)
	}
	type child struct {
		owner types.UID
		size  string
	}
	children := map[string]child{}
	for _, cm := range cms.Items {
		for _, ref := range cm.OwnerReferences {
			if ref.Controller != nil && *ref.Controller {
				children[cm.Name] = child{owner: ref.UID, size: cm.Data["size"]}
			}
		}
	}
	for i := range objects.Items {
		u := &objects.Items[i]
		if !settled(u) {
			return fmt.Sprintf("%s: generation %d has no Ready status", u.GetName(), u.GetGeneration())
		}
		size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
		cm, ok := children[u.GetName()]
		switch {
		case !ok:
			return fmt.Sprintf("%s: no ConfigMap it controls", u.GetName())
		case cm.owner != u.GetUID():
			return fmt.Sprintf("%s: its ConfigMap is controlled by uid %s, not %s", u.GetName(), cm.owner, u.GetUID())
		case cm.size != strconv.FormatInt(size, 10):
			return fmt.Sprintf("%s: its ConfigMap holds size %s, the spec %d", u.GetName(), cm.size, size)
		}
	}
	return ""
}

// churnCounts is what a churn did, and its first error.
type churnCounts struct {
	updates, deletes, creates int
	err                       error
}

// churn changes the objects of a namespace at a steady rate until
// stopped: in turn two spec updates, a delete, and a re-create of the
// name deleted longest ago once deleteLead names wait, so that about
// deleteLead objects are missing at any time.
type churn struct {
	stopChurn context.CancelFunc
	// finished is closed when the churn has returned counts: on stop, or
	// at its first error.
	finished chan struct{}
	counts   churnCounts
}

// deleteLead is how many deleted names wait before the churn creates the
// first of them again.
const deleteLead = 10

func startChurn(ctx context.Context, cl clients, ns string, n, rate int) *churn {
	ctx, cancel := context.WithCancel(ctx)
	c := &churn{stopChurn: cancel, finished: make(chan struct{})}
	go func() {
		defer close(c.finished)
		c.counts = runChurn(ctx, cl, ns, n, rate)
	}()
	return c
}

// stop stops the churn and returns what it did.
func (c *churn) stop() churnCounts {
	c.stopChurn()
	<-c.finished
	return c.counts
}

func runChurn(ctx context.Context, cl clients, ns string, n, rate int) churnCounts {
	var counts churnCounts
	objects := cl.dynamic.Resource(resource.GVR()).Namespace(ns)
	// A fixed seed: the same run churns the same names.
	rnd := rand.New(rand.NewPCG(1, 2))
	present := make([]int, n)
	for i := range present {
		present[i] = i
	}
	var deleted []int
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for op := 0; ; op++ {
		select {
		case <-ctx.Done():
			return counts
		case <-tick.C:
		}
		var err error
		switch op % 4 {
		case 0, 1:
			i := present[rnd.IntN(len(present))]
			patch := fmt.Sprintf(`{"spec":{"size":%d}}`, 1+rnd.IntN(3))
			_, err = objects.Patch(ctx, objectName(i), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			counts.updates++
		case 2:
			k := rnd.IntN(len(present))
			i := present[k]
			present = slices.Delete(present, k, k+1)
			deleted = append(deleted, i)
			err = objects.Delete(ctx, objectName(i), metav1.DeleteOptions{})
			counts.deletes++
		case 3:
			if len(deleted) < deleteLead {
				continue
			}
			i := deleted[0]
			deleted = deleted[1:]
			present = append(present, i)
			_, err = objects.Create(ctx, newObject(ns, i), metav1.CreateOptions{})
			counts.creates++
		}
		if err != nil && ctx.Err() == nil {
			counts.err = fmt.Errorf("churn operation %d: %w", op, err)
			return counts
		}
	}
}

// soakChild is the soak's child process, driven over its stdin and read
// from its stdout.
type soakChild struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	samples chan soakSample
	done    chan struct{}
	err     error

	mu  sync.Mutex
	out strings.Builder
}

// Done and Report make the child a wait.Watched.
func (c *soakChild) Done() <-chan struct{} { return c.done }

func (c *soakChild) Report() string { return "the child process's output:\n" + c.output() }

func (c *soakChild) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// startSoakChild runs the soak's Controller in a child process: this test
// binary again, selecting TestSoakChild. The test's end kills it, if the
// test didn't stop it first.
func startSoakChild(t *testing.T, c *kubetest.Cluster, job soakChildJob) *soakChild {
	t.Helper()
	dir := t.TempDir()
	job.Kubeconfig = filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(job.Kubeconfig, c.Kubeconfig(), 0o600))
	data, err := json.Marshal(job)
	require.NoError(t, err)
	jobPath := filepath.Join(dir, "job.json")
	require.NoError(t, os.WriteFile(jobPath, data, 0o600))

	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestSoakChild$", "-test.count=1", "-test.timeout=0", "-soak.child="+jobPath)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	child := &soakChild{cmd: cmd, stdin: stdin, samples: make(chan soakSample, 1), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			if s, ok := strings.CutPrefix(line, "soak: "); ok {
				var sample soakSample
				if err := json.Unmarshal([]byte(s), &sample); err == nil {
					child.samples <- sample
					continue
				}
			}
			child.mu.Lock()
			child.out.WriteString(line + "\n")
			child.mu.Unlock()
		}
		child.err = cmd.Wait()
		close(child.done)
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		<-child.done
	})
	return child
}

// ask sends the child a command and returns the sample it answers with.
func (c *soakChild) ask(t *testing.T, command string) soakSample {
	t.Helper()
	_, err := fmt.Fprintln(c.stdin, command)
	require.NoError(t, err, "the child's stdin")
	select {
	case s := <-c.samples:
		return s
	case <-c.done:
		t.Fatalf("the child process exited: %v\n%s", c.err, c.output())
	case <-t.Context().Done():
		t.Fatalf("the test ended: %v", context.Cause(t.Context()))
	}
	return soakSample{}
}

// sample asks the child to measure itself.
func (c *soakChild) sample(t *testing.T) soakSample { return c.ask(t, "sample") }

// stop asks the child to stop its App and report, then waits for it to
// exit.
func (c *soakChild) stop(t *testing.T) soakSample {
	t.Helper()
	s := c.ask(t, "stop")
	<-c.done
	require.NoError(t, c.err, "the child process:\n%s", c.output())
	return s
}

// TestSoakChild is the soak's child process: it runs the Controller and
// answers TestSoak's commands on its stdin, one per line: "sample", and
// "stop", which stops the App. Each answer is a soakSample on a line of
// its stdout. Run otherwise, it skips.
func TestSoakChild(t *testing.T) {
	if *flagSoakChild == "" {
		t.Skip("runs only as the child process of TestSoak")
	}
	var job soakChildJob
	readJSON(t, *flagSoakChild, &job)
	conn, err := connectionOf(job.Kubeconfig)
	require.NoError(t, err)

	tally := newCountingTally()
	failed := &failureCount{failed: map[string]int{}, records: map[string]int{}}
	a := startController(t, conn, controllerConfig{
		name: job.Name, namespace: job.Namespace, identity: "soak", workers: job.Workers,
		owns: true, tally: tally, telemetry: countingTelemetry(failed),
	})
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch cmd := sc.Text(); cmd {
		case "sample":
			printSample(t, measure(tally, failed))
		case "stop":
			exit := a.Stop()
			s := measure(tally, failed)
			s.Exit = &exit
			printSample(t, s)
			return
		default:
			t.Fatalf("unknown command %q", cmd)
		}
	}
	t.Fatalf("stdin closed before stop: %v", sc.Err())
}

func printSample(t *testing.T, s soakSample) {
	out, err := json.Marshal(s)
	require.NoError(t, err)
	_, err = fmt.Fprintf(os.Stdout, "soak: %s\n", out)
	require.NoError(t, err)
}

// measure takes soakSamples samples of the live heap and the goroutines,
// a second apart, and returns their medians with the counts.
func measure(tl *tally, failed *failureCount) soakSample {
	var s soakSample
	for i := range soakSamples {
		if i > 0 {
			time.Sleep(time.Second)
		}
		s.Heaps = append(s.Heaps, liveHeap())
		s.Counts = append(s.Counts, runtime.NumGoroutine())
	}
	heaps, counts := slices.Clone(s.Heaps), slices.Clone(s.Counts)
	slices.Sort(heaps)
	slices.Sort(counts)
	s.Heap, s.Goroutines = heaps[len(heaps)/2], counts[len(counts)/2]
	s.Reconciles, _, _, _ = tl.snapshot()
	s.Failed, s.Unexplained, s.Records = failed.snapshot()
	return s
}

// countingTelemetry is the soak child's telemetry: metrics a reader
// nobody reads aggregates, in the memory their attributes bound, no
// tracing, and log records counted by failed, never kept.
func countingTelemetry(failed *failureCount) app.TelemetryBuilder {
	return func(context.Context, app.Process) (app.Telemetry, func(context.Context) error, error) {
		meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		loggers := sdklog.NewLoggerProvider(sdklog.WithProcessor(failed))
		return app.Telemetry{
			MeterProvider:  meters,
			LoggerProvider: loggers,
			Propagator:     propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		}, func(ctx context.Context) error {
			return errors.Join(meters.Shutdown(ctx), loggers.Shutdown(ctx))
		}, nil
	}
}

// maxUnexplained is how many messages of unexplained failures a
// failureCount keeps.
const maxUnexplained = 10

// failureCount is a log processor that counts the failed reconciles by
// what explains them, and the other WARN and ERROR records by body.
type failureCount struct {
	mu          sync.Mutex
	failed      map[string]int
	unexplained []string
	records     map[string]int
}

func (*failureCount) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }

func (f *failureCount) OnEmit(_ context.Context, r *sdklog.Record) error {
	if r.Severity() < log.SeverityWarn {
		return nil
	}
	body := r.Body().AsString()
	var message string
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		if kv.Key == "exception.message" {
			message = kv.Value.AsString()
			return false
		}
		return true
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if body != "reconcile failed" {
		f.records[body]++
		if body == "reconcile panicked" || body == "reconcile timed out" {
			f.keepUnexplained(body + ": " + message)
		}
		return nil
	}
	cause := failureCause(message)
	if cause == "" {
		f.failed["unexplained"]++
		f.keepUnexplained(message)
		return nil
	}
	f.failed[cause]++
	return nil
}

func (f *failureCount) keepUnexplained(message string) {
	if len(f.unexplained) < maxUnexplained {
		f.unexplained = append(f.unexplained, message)
	}
}

func (*failureCount) Shutdown(context.Context) error   { return nil }
func (*failureCount) ForceFlush(context.Context) error { return nil }

func (f *failureCount) snapshot() (failed map[string]int, unexplained []string, records map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.failed), slices.Clone(f.unexplained), maps.Clone(f.records)
}

// failureCause returns what explains a failed reconcile's message, or ""
// when churn doesn't: domain/reconcile's "applying status: " and the
// API server's NotFound message at its end, with no other error joined
// to it on a line of its own.
func failureCause(message string) string {
	if strings.Contains(message, "applying status: ") && strings.HasSuffix(message, " not found") && !strings.Contains(message, "\n") {
		return failedDeleted
	}
	return ""
}

func TestFailureCount_counts_only_a_status_apply_s_NotFound_as_explained(t *testing.T) {
	f := &failureCount{failed: map[string]int{}, records: map[string]int{}}
	loggers := sdklog.NewLoggerProvider(sdklog.WithProcessor(f))
	logger := loggers.Logger("soak")
	emit := func(severity log.Severity, body, message string) {
		var r log.Record
		r.SetSeverity(severity)
		r.SetBody(attribute.StringValue(body))
		if message != "" {
			r.AddAttributes(attribute.String("exception.message", message))
		}
		logger.Emit(t.Context(), r)
	}
	notFound := `applying status: memcacheds.scale.loam.dev "m00012" not found`
	emit(log.SeverityWarn, "reconcile failed", notFound)
	emit(log.SeverityWarn, "reconcile failed", notFound)
	emit(log.SeverityWarn, "reconcile failed", `configmaps "m00012" not found`)
	emit(log.SeverityWarn, "reconcile failed", "boom\n"+notFound)
	emit(log.SeverityError, "reconcile panicked", "assignment to entry in nil map")
	emit(log.SeverityWarn, "watch ended", "")
	emit(log.SeverityInfo, "reconcile failed", "not counted: below WARN")

	failed, unexplained, records := f.snapshot()
	require.Equal(t, map[string]int{failedDeleted: 2, "unexplained": 2}, failed)
	require.Equal(t, []string{`configmaps "m00012" not found`, "boom\n" + notFound, "reconcile panicked: assignment to entry in nil map"}, unexplained)
	require.Equal(t, map[string]int{"reconcile panicked": 1, "watch ended": 1}, records)
	require.NoError(t, loggers.Shutdown(t.Context()))
}
