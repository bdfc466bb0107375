package scale

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// childJob is what the parent asks of the child process.
type childJob struct {
	Kubeconfig string `json:"kubeconfig"` // the file's path
	Namespace  string `json:"namespace"`
	Name       string `json:"name"` // the Controller's, and its Lease's
	Workers    int    `json:"workers"`
	Owns       bool   `json:"owns"`
	Result     string `json:"result"` // where the child writes its childResult
}

// childResult is what the child process measured of its own Controller.
type childResult struct {
	// Synced and FirstReconcile are the times from Serve until the caches
	// synced and until the first reconcile began.
	Synced         time.Duration `json:"synced"`
	FirstReconcile time.Duration `json:"firstReconcile"`
	// RSSBefore is the resident memory before Serve; PeakSynced the peak
	// resident memory (VmHWM) from then until the caches synced, when
	// PeakReset says the peak could be reset before Serve, and since the
	// process started otherwise.
	RSSBefore  int64 `json:"rssBefore"`
	PeakSynced int64 `json:"peakSynced"`
	PeakReset  bool  `json:"peakReset"`
	// HeapBefore and HeapSynced are the live heap after garbage
	// collection, before Serve and once synced (at the first reconcile,
	// which waits for the measurement).
	HeapBefore uint64 `json:"heapBefore"`
	HeapSynced uint64 `json:"heapSynced"`
}

// startupResult is what the start-up and memory phases measured for one
// N: the child with the owned ConfigMaps, and without.
type startupResult struct {
	n                int
	withOwns, noOwns childResult
	// The mean size of an object's and of a ConfigMap's metadata as the
	// API server serves them in a list, in JSON, and of an object without
	// its managedFields.
	wireObject, wireObjectStripped, wireMetadata float64
}

// TestScaleChild is the child process of the start-up and memory phases:
// TestScale runs this test binary again with -test.run selecting it and
// -scale.child naming its job. Run otherwise, it skips.
func TestScaleChild(t *testing.T) {
	if *flagChild == "" {
		t.Skip("runs only as the child process of TestScale")
	}
	var job childJob
	readJSON(t, *flagChild, &job)
	conn, err := connectionOf(job.Kubeconfig)
	require.NoError(t, err)

	var res childResult
	res.HeapBefore = liveHeap()
	res.RSSBefore, _ = procStatus("VmRSS")
	// Writing 5 to clear_refs resets VmHWM to the current resident memory.
	res.PeakReset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil

	gate := make(chan struct{})
	tally := newTally()
	a := startController(t, conn, controllerConfig{
		name: job.Name, namespace: job.Namespace, identity: "child", workers: job.Workers, owns: job.Owns,
		tally: tally, gate: gate,
	})
	synced := a.waitSynced(t.Context(), t)
	res.PeakSynced, err = procStatus("VmHWM")
	require.NoError(t, err)
	wait.For(t, 10*time.Minute, func() bool { total, _, _, _ := tally.snapshot(); return total > 0 }, "no reconcile", a)
	_, _, first, _ := tally.snapshot()
	served := a.servedAt()
	res.Synced, res.FirstReconcile = synced.Sub(served), first.Sub(served)
	// The reconciles wait at the gate, so the heap holds the caches and
	// the queue, and no reconcile's garbage.
	res.HeapSynced = liveHeap()
	close(gate)
	require.Equal(t, 0, a.Stop(), "the child's App; stderr: %s", a.Stderr())

	out, err := json.Marshal(res)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(job.Result, out, 0o600))
}

// liveHeap returns the bytes of live heap objects after a full garbage
// collection; twice, so that what the first one's finalizers freed is
// gone too.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// procStatus returns a field of /proc/self/status measured in kB, such as
// VmRSS, in bytes.
func procStatus(field string) (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), field+":")
		if !ok {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/self/status: %s: %w", field, err)
		}
		return kib << 10, nil
	}
	return 0, fmt.Errorf("/proc/self/status has no %s", field)
}

// readJSON reads the JSON file at path into v, as a child process reads
// its job.
func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v), "%s", path)
}

// connectionOf reads a kubeconfig file of a server, a CA and a token, as
// kubetest writes one, into a kube.Connection.
func connectionOf(path string) (kube.Connection, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return kube.Connection{}, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return kube.Connection{}, fmt.Errorf("kubeconfig %s: no context %q", path, cfg.CurrentContext)
	}
	cluster, user := cfg.Clusters[kctx.Cluster], cfg.AuthInfos[kctx.AuthInfo]
	if cluster == nil || user == nil {
		return kube.Connection{}, fmt.Errorf("kubeconfig %s: context %q lacks its cluster or user", path, cfg.CurrentContext)
	}
	u, err := url.Parse(cluster.Server)
	if err != nil {
		return kube.Connection{}, fmt.Errorf("kubeconfig %s: server: %w", path, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cluster.CertificateAuthorityData) {
		return kube.Connection{}, fmt.Errorf("kubeconfig %s: no CA certificate", path)
	}
	host, _, err := net.SplitHostPort(u.Host)
	if err != nil {
		return kube.Connection{}, fmt.Errorf("kubeconfig %s: server: %w", path, err)
	}
	token := user.Token
	return kube.Connection{
		Server: u.Host,
		TLS:    &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12},
		Token:  func(context.Context) (string, error) { return token, nil },
	}, nil
}

// runChild runs the Controller of job in a child process: this test
// binary again, selecting TestScaleChild.
func runChild(t *testing.T, c *kubetest.Cluster, job childJob) childResult {
	t.Helper()
	dir := t.TempDir()
	job.Kubeconfig = filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(job.Kubeconfig, c.Kubeconfig(), 0o600))
	job.Result = filepath.Join(dir, "result.json")
	data, err := json.Marshal(job)
	require.NoError(t, err)
	jobPath := filepath.Join(dir, "job.json")
	require.NoError(t, os.WriteFile(jobPath, data, 0o600))

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestScaleChild$", "-test.count=1", "-test.timeout=30m", "-scale.child="+jobPath)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	require.NoError(t, cmd.Run(), "the child process:\n%s", output.String())
	data, err = os.ReadFile(job.Result)
	require.NoError(t, err, "the child process wrote no result:\n%s", output.String())
	var res childResult
	require.NoError(t, json.Unmarshal(data, &res))
	return res
}

// populate creates n objects in a namespace of their own with their
// ConfigMaps and settled statuses, as a controller would have left them,
// and returns the namespace.
func populate(t *testing.T, c *kubetest.Cluster, cfg config, n int) string {
	t.Helper()
	ctx := t.Context()
	cl := newClients(t, c.RESTConfig())
	ns := c.Namespace(t)
	owners, err := createObjects(ctx, cl, ns, n, cfg.loaders)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, deleteAll(context.WithoutCancel(ctx), cl, ns)) })
	require.NoError(t, parallel(ctx, n, cfg.loaders, func(ctx context.Context, i int) error { return applyBoth(ctx, cl, owners[i]) }))
	return ns
}

// measureStartup runs the child process over the n objects of ns, with
// Owns of their ConfigMaps and without, and sizes the objects as the API
// server serves them.
func measureStartup(t *testing.T, c *kubetest.Cluster, n int, ns string) startupResult {
	t.Helper()
	res := startupResult{n: n}
	// Each run has a Lease of its own, which it takes at once.
	res.withOwns = runChild(t, c, childJob{Namespace: ns, Name: "scale-startup-owns", Workers: 4, Owns: true})
	res.noOwns = runChild(t, c, childJob{Namespace: ns, Name: "scale-startup-alone", Workers: 4, Owns: false})
	mc, err := metadata.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	res.wireObject, res.wireObjectStripped, res.wireMetadata, err = wireSizes(t.Context(), newClients(t, c.RESTConfig()), mc, ns)
	require.NoError(t, err)
	require.Positive(t, res.withOwns.FirstReconcile)
	require.Greater(t, res.withOwns.HeapSynced, res.withOwns.HeapBefore, "the caches take memory")
	return res
}

// wireSizes lists ns's objects and ConfigMaps' metadata and returns their
// mean JSON sizes: an object's, an object's without managedFields, and a
// ConfigMap's metadata, as an Owns informer receives it.
func wireSizes(ctx context.Context, cl clients, mc metadata.Interface, ns string) (object, stripped, meta float64, err error) {
	list, err := cl.dynamic.Resource(resource.GVR()).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, 0, err
	}
	if len(list.Items) == 0 {
		return 0, 0, 0, errors.New("no objects")
	}
	var sum, sumStripped int
	for _, u := range list.Items {
		b, err := json.Marshal(u.Object)
		if err != nil {
			return 0, 0, 0, err
		}
		sum += len(b)
		u.SetManagedFields(nil)
		if b, err = json.Marshal(u.Object); err != nil {
			return 0, 0, 0, err
		}
		sumStripped += len(b)
	}
	metas, err := mc.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, 0, err
	}
	var sumMeta int
	for _, m := range metas.Items {
		b, err := json.Marshal(m)
		if err != nil {
			return 0, 0, 0, err
		}
		sumMeta += len(b)
	}
	items := float64(len(list.Items))
	return float64(sum) / items, float64(sumStripped) / items, float64(sumMeta) / float64(max(len(metas.Items), 1)), nil
}
