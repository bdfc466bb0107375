package explore

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// fakeServer stands for the API server behind the proxy, for the
// ConfigMaps of namespace ns: it counts the lists, streamed or plain,
// and the plain watches that reach it. Each watch, streamed or plain,
// sends one bookmark once it has begun, unless quiet is set: a watch
// that sent nothing and is cut within a second is, to client-go, a very
// short watch.
type fakeServer struct {
	mu                            sync.Mutex
	streamed, listed, watched, rv int
	quiet                         bool
	// noWatchList refuses streamed lists, as an API server with
	// WatchList off does: the reflector lists plainly.
	noWatchList bool
}

func (f *fakeServer) counts() (streamed, listed, watched int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.streamed, f.listed, f.watched
}

func (f *fakeServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	watch, _ := strconv.ParseBool(q.Get("watch"))
	initial, _ := strconv.ParseBool(q.Get("sendInitialEvents"))
	f.mu.Lock()
	f.rv++
	rv, quiet := strconv.Itoa(f.rv), f.quiet
	switch {
	case !watch:
		f.listed++
	case initial:
		f.streamed++
	default:
		f.watched++
	}
	noWatchList := f.noWatchList
	f.mu.Unlock()
	rw.Header().Set("Content-Type", runtime.ContentTypeJSON)
	if initial && noWatchList {
		rw.WriteHeader(http.StatusUnprocessableEntity)
		_ = json.NewEncoder(rw).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonInvalid, Code: http.StatusUnprocessableEntity})
		return
	}
	if !watch {
		_ = json.NewEncoder(rw).Encode(corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: rv}})
		return
	}
	flush := func() { _ = http.NewResponseController(rw).Flush() }
	bookmark := func(annotations map[string]string) {
		o := corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv, Annotations: annotations}}
		raw, _ := json.Marshal(o)
		_ = json.NewEncoder(rw).Encode(metav1.WatchEvent{Type: "BOOKMARK", Object: runtime.RawExtension{Raw: raw}})
		flush()
	}
	rw.WriteHeader(http.StatusOK)
	flush()
	if initial {
		bookmark(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	if !quiet {
		bookmark(nil)
	}
	<-r.Context().Done()
}

// sniffer counts the responses that answer a watch as expired.
type sniffer struct {
	http.ResponseWriter
	expired *atomic.Int32
}

func (s sniffer) Write(p []byte) (int, error) {
	if strings.Contains(string(p), `"reason":"Expired"`) {
		s.expired.Add(1)
	}
	return s.ResponseWriter.Write(p)
}

func (s sniffer) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// informerThrough starts a client-go informer of ConfigMaps, with the
// content types of loam's clients (kube/client.go), through the
// proxy's handler, and waits for its first list. It returns the count
// of the proxy's answers as expired.
func informerThrough(t *testing.T, w *writes, f *fakeServer) *atomic.Int32 {
	t.Helper()
	expired := new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.serve(sniffer{rw, expired}, r, f)
	}))
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: runtime.ContentTypeProtobuf, AcceptContentTypes: runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON}})
	require.NoError(t, err)
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("ns"))
	informer := factory.Core().V1().ConfigMaps().Informer()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	factory.Start(stop)
	require.True(t, cache.WaitForCacheSync(stop, informer.HasSynced))
	return expired
}

// Each cut, with a real client-go reflector: the watch cut is watched
// again from its resourceVersion, the proxy answers that as expired
// (the plain watch never reaches the API server), and the reflector
// lists again, which the proxy lets through; then nothing is awaited,
// and no later watch is expired.
func TestLost_reflector_relists_after_each_cut(t *testing.T) {
	for _, noWatchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("noWatchList=%v", noWatchList), func(t *testing.T) {
			relistsAfterEachCut(t, noWatchList)
		})
	}
}

func relistsAfterEachCut(t *testing.T, noWatchList bool) {
	w := lostWrites()
	f := &fakeServer{noWatchList: noWatchList}
	served := informerThrough(t, w, f)
	streamed, listed, watched := f.counts()
	if noWatchList {
		require.Equal(t, 1, listed, "the first list, after the refused streamed one")
	} else {
		require.Equal(t, 1, streamed, "the first list")
	}
	if !noWatchList {
		require.Zero(t, watched, "a streamed list is its reflector's watch")
	}
	for cut := 1; cut <= 2; cut++ {
		w.arm(Step{LoseFrom: 1})
		w.saw(write())
		require.Equal(t, 1, w.takeCuts(), "cut %d", cut)
		require.True(t, awaiting(w), "cut %d", cut)
		require.Eventually(t, func() bool { return !awaiting(w) }, 10*time.Second, 20*time.Millisecond, "cut %d: the relist", cut)
		// The proxy sees the relist before it hands it on to the fake
		// server, which counts it then: wait for that count too (CI:
		// "cut 2: one relist", 2 where 3, read in between).
		require.Eventually(t, func() bool {
			s, l, _ := f.counts()
			return noWatchList && l >= 1+cut || !noWatchList && s >= 1+cut
		}, 10*time.Second, 20*time.Millisecond, "cut %d: the relist reaches the API server", cut)
		s, l, wa := f.counts()
		if noWatchList {
			require.Equal(t, 1+cut, l, "cut %d: one relist", cut)
		} else {
			require.Equal(t, 1+cut, s, "cut %d: one relist", cut)
		}
		// The watch again from the cut's resourceVersion never reaches
		// the API server: only a plain list's watch does, one a list.
		if noWatchList {
			require.LessOrEqual(t, wa, 1+cut, "cut %d", cut)
		} else {
			require.Zero(t, wa, "cut %d", cut)
		}
		require.EqualValues(t, cut, served.Load(), "cut %d: the proxy answered it as expired", cut)
		w.mu.Lock()
		expired := w.expired["/api/v1/namespaces/ns/configmaps"]
		w.mu.Unlock()
		require.Zero(t, expired, "cut %d: the expiry was served", cut)
	}
	s, l, _ := f.counts()
	t.Logf("lists: %d streamed, %d plain", s, l)
}

// A cut of a watch that had sent nothing, within a second of its
// start: the reflector lists again with no watch again, and its expiry,
// unserved, must not expire a later watch that no cut ended.
func TestLost_reflector_very_short_watch(t *testing.T) {
	w := lostWrites()
	f := &fakeServer{quiet: true}
	served := informerThrough(t, w, f)
	w.arm(Step{LoseFrom: 1})
	w.saw(write())
	require.Eventually(t, func() bool { return !awaiting(w) }, 10*time.Second, 20*time.Millisecond, "the relist")
	_, _, watched := f.counts()
	require.Zero(t, watched)
	require.Zero(t, served.Load(), "no watch again to answer as expired")
	// A later plain watch of the collection, from a resourceVersion, as
	// after a watch ended by its timeout.
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=99", nil)
	require.False(t, w.expire(r), "a watch no cut ended is not expired")
}
