package watchlistoff

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/internal/controllerapp"
	"github.com/loam-dev/loam/kubetest/wait"
)

// A Counter is what the controller reconciles: a value in its spec,
// which the controller copies into its status with the generation it
// saw.
type counterSpec struct {
	Value int64 `json:"value"`
}

type counterStatus struct {
	Value              int64 `json:"value,omitempty"`
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

var counters = kube.Resource[counterSpec, counterStatus]{
	Group: "watchlistoff.kubetest.loam.dev", Version: "v1", Kind: "Counter", Plural: "counters", Scope: kube.Namespaced,
}

// listAnswer is the answer to one LIST: its code and how many items it
// carried.
type listAnswer struct{ code, items int }

// listRecorder records, of the requests a controller sends through a
// Proxy, those that list Counters, as the API server reads them
// (kubetest.Lists): each LIST of the collection, with its answer, and
// the code of each watch that asks for the initial events first,
// client-go's watch-list. The start-up check's lists of one object are
// left out.
type listRecorder struct {
	mu         sync.Mutex
	lists      []listAnswer
	watchLists []int
}

func (l *listRecorder) inspect(rw http.ResponseWriter, r *http.Request, next http.Handler) {
	q := r.URL.Query()
	if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/"+counters.Plural) || !kubetest.Lists(r) || q.Get("limit") == "1" {
		next.ServeHTTP(rw, r)
		return
	}
	if q.Get("sendInitialEvents") == "true" {
		// A watch, which may stream until the test ends: its code is
		// recorded as the API server writes it.
		next.ServeHTTP(&answerRecorder{ResponseWriter: rw, wrote: func(code int) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.watchLists = append(l.watchLists, code)
		}}, r)
		return
	}
	a := &answerRecorder{ResponseWriter: rw, body: &bytes.Buffer{}}
	next.ServeHTTP(a, r)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lists = append(l.lists, listAnswer{code: a.code, items: a.items()})
}

// seen returns the answers to the LISTs so far, and the codes of the
// watch-lists.
func (l *listRecorder) seen() ([]listAnswer, []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]listAnswer(nil), l.lists...), append([]int(nil), l.watchLists...)
}

// answerRecorder is a ResponseWriter that tells wrote the code of the
// answer, and keeps a copy of its body in body, when it is not nil.
type answerRecorder struct {
	http.ResponseWriter
	code  int
	wrote func(code int)
	body  *bytes.Buffer
}

func (a *answerRecorder) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
		if a.wrote != nil {
			a.wrote(code)
		}
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerRecorder) Write(p []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	if a.body != nil {
		a.body.Write(p)
	}
	return a.ResponseWriter.Write(p)
}

func (a *answerRecorder) Flush() {
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap is for http.ResponseController, which the Proxy flushes with.
func (a *answerRecorder) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// items returns how many items the list the body holds carried, -1 when
// the body is not a list.
func (a *answerRecorder) items() int {
	var r io.Reader = a.body
	if a.Header().Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(a.body)
		if err != nil {
			return -1
		}
		r = z
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if json.NewDecoder(r).Decode(&list) != nil || list.Items == nil {
		return -1
	}
	return len(list.Items)
}

// reconciles counts each Counter's reconciles.
type reconciles struct {
	mu     sync.Mutex
	counts map[string]int
}

func (r *reconciles) add(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[name]++
}

func (r *reconciles) of(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[name]
}

// TestController_syncs_and_settles_from_a_real_LIST runs a controller
// through a Proxy against an API server with WatchList off, over n
// Counters created before it starts. Its informer's watch-list is
// refused, so it LISTs: the test records that LIST, answered with the n
// Counters, and no watch-list served. Each Counter is reconciled twice,
// once for what the list carried and once for its own status write,
// whose status carries the spec's value, read from the cache the list
// filled, and then settles: a marker created after every status landed
// is reconciled, with one worker, after anything those writes queued,
// and no Counter was reconciled a third time.
func TestController_syncs_and_settles_from_a_real_LIST(t *testing.T) {
	const n = 20
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	crd, err := counters.CRD()
	require.NoError(t, err)
	require.NoError(t, c.InstallCRDs(t.Context(), crd))
	d, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("c%02d", i)
		createCounter(t, d, ns, names[i], int64(i+1))
	}

	rec := &listRecorder{}
	conn := c.Proxy(t, rec.inspect).Connection()
	conn.Token = c.Connection().Token
	seen := &reconciles{counts: map[string]int{}}
	s := kube.DefaultSettings()
	s.Name, s.Namespace = "counter-controller", ns
	s.Workers = 1 // what the settling's proof of order rests on
	s.LeaderElection.Namespace, s.LeaderElection.Identity = ns, "pod-0"
	a, _ := controllerapp.Start(t, conn, func(setup *app.Setup, client *kube.Client) (*kube.Controller, error) {
		return kube.NewController(setup, client, s, counters, kube.ReconcilerFunc[counterSpec, counterStatus](
			func(_ context.Context, o kube.Object[counterSpec, counterStatus]) (kube.Result[counterStatus], error) {
				seen.add(o.Name)
				return kube.Result[counterStatus]{Status: &counterStatus{Value: o.Spec.Value, ObservedGeneration: o.Generation}}, nil
			}))
	}, app.WithHost(app.Host{Network: &apptest.Switch{}}))
	watched := wait.App(a)

	wait.For(t, time.Minute, func() bool {
		return landed(t, d, ns, names...) && allReconciled(seen, 2, names...)
	}, "not every Counter was reconciled twice with its status landed", watched)
	createCounter(t, d, ns, "marker", 1000)
	wait.For(t, time.Minute, func() bool { return seen.of("marker") >= 1 }, "the marker was never reconciled", watched)
	for _, name := range names {
		require.Equal(t, 2, seen.of(name), "%s's reconciles once the marker, created after every status landed, was reconciled", name)
	}

	lists, watchLists := rec.seen()
	require.NotEmpty(t, lists, "the controller never LISTed Counters: it synced otherwise (a watch-list?); watch-lists answered %v", watchLists)
	require.Equal(t, listAnswer{code: http.StatusOK, items: n}, lists[0], "its first LIST carried the Counters created before it started")
	for _, code := range watchLists {
		require.NotEqual(t, http.StatusOK, code, "a watch-list was served: the API server has WatchList on")
	}
	require.Equal(t, 0, a.Stop())
}

// createCounter creates the Counter ns/name with value.
func createCounter(t *testing.T, d dynamic.Interface, ns, name string, value int64) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": counters.Group + "/" + counters.Version, "kind": counters.Kind,
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"value": value},
	}}
	_, err := d.Resource(counters.GVR()).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{})
	require.NoError(t, err)
}

// landed reports whether each Counter of names in ns has the status the
// controller writes: its spec's value, and its generation.
func landed(t *testing.T, d dynamic.Interface, ns string, names ...string) bool {
	t.Helper()
	list, err := d.Resource(counters.GVR()).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	byName := map[string]unstructured.Unstructured{}
	for _, u := range list.Items {
		byName[u.GetName()] = u
	}
	for _, name := range names {
		u, ok := byName[name]
		if !ok {
			return false
		}
		value, _, _ := unstructured.NestedInt64(u.Object, "spec", "value")
		status, _, _ := unstructured.NestedInt64(u.Object, "status", "value")
		generation, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		if status != value || generation != u.GetGeneration() {
			return false
		}
	}
	return true
}

// allReconciled reports whether each of names was reconciled at least
// times times.
func allReconciled(seen *reconciles, times int, names ...string) bool {
	for _, name := range names {
		if seen.of(name) < times {
			return false
		}
	}
	return true
}
