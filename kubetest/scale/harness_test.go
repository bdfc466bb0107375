package scale

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kubetest"
)

// clients are the harness's own clients, as the cluster's admin, with no
// client-side rate limit (kubetest's RESTConfig has QPS -1).
type clients struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
}

func newClients(t testing.TB, cfg *rest.Config) clients {
	t.Helper()
	k, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	d, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return clients{kube: k, dynamic: d}
}

// ownConnection makes cfg's clients use a connection of their own rather
// than share one with every other client of the same credentials, as
// client-go does by default.
func ownConnection(cfg *rest.Config) *rest.Config {
	var d net.Dialer
	cfg.Dial = d.DialContext
	return cfg
}

// parallel calls f for 0..n-1 from w goroutines, each taking the next
// index, and returns the first error, after which no new index is taken.
func parallel(ctx context.Context, n, w int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range min(w, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// createObjects creates the objects 0..n-1 in ns with loaders parallel
// clients, and returns what a ConfigMap and a status apply name of each.
func createObjects(ctx context.Context, cl clients, ns string, n, loaders int) ([]owner, error) {
	owners := make([]owner, n)
	objects := cl.dynamic.Resource(resource.GVR()).Namespace(ns)
	err := parallel(ctx, n, loaders, func(ctx context.Context, i int) error {
		u, err := objects.Create(ctx, newObject(ns, i), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create %s/%s: %w", ns, objectName(i), err)
		}
		size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
		image, _, _ := unstructured.NestedString(u.Object, "spec", "image")
		owners[i] = owner{
			name: u.GetName(), namespace: ns, uid: u.GetUID(), generation: u.GetGeneration(),
			spec: memcachedSpec{Size: int32(size), Image: image},
		}
		return nil
	})
	return owners, err
}

// deleteAll deletes the objects and ConfigMaps of ns, so that the API
// server's caches don't grow from one run to the next: the cluster runs
// no garbage collector and no namespace controller.
func deleteAll(ctx context.Context, cl clients, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	return errors.Join(
		cl.dynamic.Resource(resource.GVR()).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}),
		cl.kube.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}),
	)
}

// settledWatch is the harness's own watch of a namespace's objects: it
// notes when every one of n objects has a settled status.
type settledWatch struct {
	n        int
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	stopped  chan struct{}

	mu      sync.Mutex
	settled map[string]bool
	at      time.Time // when the n-th object settled
	done    chan struct{}
}

// watchSettled starts the harness's watch of ns and waits for its first
// list; it stops when the test ends.
func watchSettled(t testing.TB, cl clients, ns string, n int) *settledWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	w := &settledWatch{
		n:        n,
		informer: dynamicinformer.NewFilteredDynamicInformer(cl.dynamic, resource.GVR(), ns, 0, cache.Indexers{}, nil).Informer(),
		stop:     cancel,
		stopped:  make(chan struct{}),
		settled:  map[string]bool{},
		done:     make(chan struct{}),
	}
	require.NoError(t, w.informer.SetTransform(func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			u.SetManagedFields(nil)
		}
		return obj, nil
	}))
	_, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.see,
		UpdateFunc: func(_, obj any) { w.see(obj) },
	})
	require.NoError(t, err)
	go func() {
		defer close(w.stopped)
		w.informer.RunWithContext(ctx)
	}()
	t.Cleanup(w.close)
	require.True(t, cache.WaitForCacheSync(t.Context().Done(), w.informer.HasSynced), "the harness's watch never synced")
	return w
}

func (w *settledWatch) see(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || !settled(u) {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.settled[u.GetName()] {
		return
	}
	w.settled[u.GetName()] = true
	if len(w.settled) == w.n {
		w.at = now
		close(w.done)
	}
}

// count returns how many objects have settled.
func (w *settledWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.settled)
}

// wait waits until every object has settled, and returns when the last
// one did. It fails the test when ctx ends first.
func (w *settledWatch) wait(ctx context.Context, t testing.TB, what string) time.Time {
	t.Helper()
	select {
	case <-w.done:
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.at
	case <-ctx.Done():
		t.Fatalf("%s: %d of %d objects settled when %v", what, w.count(), w.n, context.Cause(ctx))
		return time.Time{}
	}
}

func (w *settledWatch) close() {
	w.stop()
	<-w.stopped
}

// requestKey names a kind of request to the API server, as its
// apiserver_request_total counts them.
type requestKey struct{ verb, resource, subresource string }

func (k requestKey) String() string {
	s := k.verb + " " + k.resource
	if k.subresource != "" {
		s += "/" + k.subresource
	}
	return s
}

// requestCounts is the API server's count of the requests it served, by
// verb and resource, for the harness's resource, ConfigMaps and Leases.
type requestCounts map[requestKey]float64

// scrapeRequests reads apiserver_request_total from the API server's
// /metrics.
func scrapeRequests(ctx context.Context, cl clients) (requestCounts, error) {
	body, err := cl.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the API server's /metrics: %w", err)
	}
	return parseRequests(body)
}

// parseRequests sums apiserver_request_total's samples, in Prometheus's
// text format, by verb, resource and subresource.
func parseRequests(body []byte) (requestCounts, error) {
	counts := requestCounts{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "apiserver_request_total{")
		if !ok {
			continue
		}
		end := strings.LastIndex(line, "} ")
		if end < 0 {
			return nil, fmt.Errorf("apiserver_request_total: no value in %q", line)
		}
		labels, err := parseLabels(line[:end])
		if err != nil {
			return nil, fmt.Errorf("apiserver_request_total: %w", err)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+2:]), 64)
		if err != nil {
			return nil, fmt.Errorf("apiserver_request_total: value of %q: %w", line, err)
		}
		switch {
		case labels["group"] == group, labels["resource"] == "configmaps", labels["resource"] == "leases":
		default:
			continue
		}
		counts[requestKey{labels["verb"], labels["resource"], labels["subresource"]}] += v
	}
	return counts, sc.Err()
}

// parseLabels parses a Prometheus sample's labels: name="value",...
func parseLabels(s string) (map[string]string, error) {
	labels := map[string]string{}
	for s != "" {
		eq := strings.Index(s, `="`)
		if eq < 0 {
			return nil, fmt.Errorf("labels %q: no =\"", s)
		}
		name := s[:eq]
		s = s[eq+2:]
		var value strings.Builder
		closed := false
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '\\' && i+1 < len(s):
				i++
				switch s[i] {
				case 'n':
					value.WriteByte('\n')
				default:
					value.WriteByte(s[i])
				}
			case c == '"':
				s, closed = s[i+1:], true
			default:
				value.WriteByte(c)
			}
			if closed {
				break
			}
		}
		if !closed {
			return nil, fmt.Errorf("label %s: unterminated value", name)
		}
		labels[name] = value.String()
		s = strings.TrimPrefix(s, ",")
	}
	return labels, nil
}

// since returns the requests counted in c and not in before.
func (c requestCounts) since(before requestCounts) requestCounts {
	d := requestCounts{}
	for k, v := range c {
		if dv := v - before[k]; dv > 0 {
			d[k] = dv
		}
	}
	return d
}

// cpuTime returns the user and system CPU time this process has used: the
// API server's, etcd's, the controller's and the harness's, since they all
// run in it.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuUsage is the CPU time this process and the whole machine have used.
type cpuUsage struct {
	self, machine time.Duration
	at            time.Time
}

func readCPU() cpuUsage {
	return cpuUsage{self: cpuTime(), machine: machineBusy(), at: time.Now()}
}

// window is what was used from u until now: this process's CPU time, and
// the CPU time other processes took, in cores (0 to the machine's CPUs).
func (u cpuUsage) window() (self time.Duration, others float64) {
	now := readCPU()
	self = now.self - u.self
	elapsed := now.at.Sub(u.at)
	if elapsed <= 0 || u.machine == 0 || now.machine == 0 {
		return self, 0
	}
	return self, max(float64(now.machine-u.machine-self), 0) / float64(elapsed)
}

// machineBusy returns the CPU time every process of the machine has used,
// from /proc/stat: all but idle and iowait. It returns 0 when it can't
// tell.
func machineBusy() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:] {
		if i >= 8 { // guest time is counted in user time already
			break
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0
		}
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		busy += n
	}
	// USER_HZ is 100 on Linux.
	return time.Duration(busy) * 10 * time.Millisecond
}

// network is an App's network: the real one, until the test cuts it,
// which closes every connection and refuses every dial, as a replica cut
// off from the API server sees it.
type network = apptest.Switch

// profile starts a CPU profile of the process, when dir is not empty,
// and returns the func that stops it and writes it to dir/name.pprof.
func profile(t testing.TB, dir, name string) (stop func()) {
	t.Helper()
	if dir == "" {
		return func() {}
	}
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Logf("no CPU profile of %s: %v", name, err)
		return func() {}
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, name+".pprof"), buf.Bytes(), 0o644))
		})
	}
	t.Cleanup(stop) // when the test fails before it stops the profile
	return stop
}

// startCluster starts the harness's cluster, with the resource's CRD
// installed before anything else so that no object waits for it.
func startCluster(t *testing.T) *kubetest.Cluster {
	t.Helper()
	crd, err := resource.CRD()
	require.NoError(t, err)
	return kubetest.Start(t, kubetest.WithCRDs(crd))
}
