package explore

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loam-dev/loam/kubetest/internal/generate"
)

// lostWrites returns writes as a replay's first replica has them.
func lostWrites() *writes {
	w := &writes{objects: map[string]object{}, explored: schema.GroupResource{Group: "cache.example.com", Resource: "memcacheds"}}
	w.replica(func() {})
	return w
}

// write returns the operator's write of a Deployment, as the proxy sees
// it.
func write() *http.Request {
	return httptest.NewRequest(http.MethodPost, "/apis/apps/v1/namespaces/ns/deployments", nil)
}

// awaiting reports whether w awaits a relist.
func awaiting(w *writes) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.awaitingLocked()
}

// A cut ends every watch that has sent its list, the explored resource's
// included, before the write it comes at goes on: what the watch kept or
// is sent later is dropped, its request to the API server is cancelled,
// and the first watch again of each, from a resourceVersion, is expired.
func TestLost_cut(t *testing.T) {
	w := lostWrites()
	watch := func(url string) (*stream, *httptest.ResponseRecorder, *bool) {
		t.Helper()
		rec := httptest.NewRecorder()
		s := w.watching(rec, httptest.NewRequest(http.MethodGet, url, nil))
		require.NotNil(t, s)
		cancelled := new(bool)
		s.cancel = func() { *cancelled = true }
		return s, rec, cancelled
	}
	deployments, drec, dcancelled := watch("/apis/apps/v1/namespaces/ns/deployments?watch=true&resourceVersion=7")
	explored, _, ecancelled := watch("/apis/cache.example.com/v1/namespaces/ns/memcacheds?watch=true&resourceVersion=7")
	listing, lrec, lcancelled := watch("/api/v1/namespaces/ns/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
	deployments.WriteHeader(http.StatusOK)
	_, err := deployments.Write([]byte("a"))
	require.NoError(t, err)

	w.arm(Step{LoseFrom: 2})
	pass, _, _, _ := w.saw(write())
	require.True(t, pass)
	require.False(t, *dcancelled, "nothing is cut before the write it comes at")
	pass, _, _, _ = w.saw(write())
	require.True(t, pass)
	require.True(t, *dcancelled, "the watch's request to the API server ends")
	require.True(t, *ecancelled, "the explored resource's watch is cut too")
	require.False(t, *lcancelled, "a watch still sending its list is left alone")
	require.Equal(t, 1, w.takeCuts())
	require.Zero(t, w.takeCuts())

	for _, p := range []string{"b", "c"} {
		n, err := deployments.Write([]byte(p))
		require.NoError(t, err)
		require.Equal(t, 1, n)
		deployments.Flush()
	}
	require.Equal(t, "a", drec.Body.String(), "what comes after the cut is dropped")
	require.False(t, deployments.unanswered(), "its status went before the cut")
	_, err = listing.Write([]byte("d"))
	require.NoError(t, err)
	require.Equal(t, "d", lrec.Body.String())
	require.True(t, explored.unanswered(), "cut before its status went: the proxy answers it as expired")

	require.Zero(t, w.since(), "no quiet while a relist is still to come")
	require.True(t, awaiting(w))
	path := "/apis/apps/v1/namespaces/ns/deployments"
	for _, tc := range []struct {
		query  string
		expire bool
	}{
		{"?watch=true&resourceVersion=", false},
		{"?watch=true&resourceVersion=0", false},
		{"?watch=true&resourceVersion=7", true},
		{"?watch=true&resourceVersion=7", false},
	} {
		require.Equal(t, tc.expire, w.expire(httptest.NewRequest(http.MethodGet, path+tc.query, nil)), tc.query)
	}
	require.True(t, w.expire(httptest.NewRequest(http.MethodGet, "/apis/cache.example.com/v1/namespaces/ns/memcacheds?watch=1&resourceVersion=9", nil)))
	require.True(t, awaiting(w), "the relists are still to come")
	require.False(t, w.expire(httptest.NewRequest(http.MethodGet, path+"?watch=true&sendInitialEvents=true&resourceVersion=7&resourceVersionMatch=NotOlderThan", nil)), "a streamed list goes through")
	require.True(t, awaiting(w), "the explored resource's relist is still to come")
	require.False(t, w.expire(httptest.NewRequest(http.MethodGet, "/apis/cache.example.com/v1/namespaces/ns/memcacheds?resourceVersion=9", nil)), "a list goes through")
	require.False(t, awaiting(w), "every relist came")

	// A fresh replica has lost nothing.
	watch(path + "?watch=true&resourceVersion=8")
	w.arm(Step{LoseFrom: 1})
	w.saw(write())
	require.True(t, awaiting(w))
	w.replica(func() {})
	require.False(t, awaiting(w))
	require.False(t, w.expire(httptest.NewRequest(http.MethodGet, path+"?watch=true&resourceVersion=8", nil)))
}

// The watch again after a cut is answered as the API server answers a
// watch from a resourceVersion compacted away: a 200 and one ERROR event
// whose Status client-go's reflector takes for expired, and lists again.
func TestWriteExpired(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments?watch=true&resourceVersion=7", nil)
	r.Header.Set("Accept", "application/vnd.kubernetes.protobuf, application/json")
	rec := httptest.NewRecorder()
	writeExpired(rec, r)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var event metav1.WatchEvent
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &event))
	require.Equal(t, "ERROR", event.Type)
	var status metav1.Status
	require.NoError(t, json.Unmarshal(event.Object.Raw, &status))
	err := &apierrors.StatusError{ErrStatus: status}
	require.True(t, apierrors.IsResourceExpired(err), "%v", err)
	require.Equal(t, "too old resource version: 7", err.Error())

	r.Header.Set("Accept", "application/vnd.kubernetes.protobuf")
	rec = httptest.NewRecorder()
	writeExpired(rec, r)
	require.Equal(t, http.StatusGone, rec.Code, "a client that takes no JSON is answered with a 410")

	require.True(t, acceptsJSON(nil))
	require.True(t, acceptsJSON([]string{"*/*"}))
	require.True(t, acceptsJSON([]string{"application/json;as=Table;v=v1;g=meta.k8s.io"}))
	require.False(t, acceptsJSON([]string{"application/vnd.kubernetes.protobuf;stream=watch"}))
}

// Through the proxy's handler: a watch cut while its response is copied
// ends cleanly, as the API server ends a watch, though the copy aborts;
// and the watch again is answered as expired.
func TestLost_serve(t *testing.T) {
	w := lostWrites()
	sent := make(chan struct{})
	// next stands for the proxy's copy of the API server's response: it
	// sends an event, and aborts, as httputil.ReverseProxy does, when its
	// request is cancelled.
	next := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.WriteHeader(http.StatusOK)
		_, _ = rw.Write([]byte(`{"type":"ADDED"}` + "\n"))
		http.NewResponseController(rw).Flush()
		close(sent)
		<-r.Context().Done()
		_, _ = rw.Write([]byte(`{"type":"MODIFIED"}` + "\n"))
		panic(http.ErrAbortHandler)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { w.serve(rw, r, next) }))
	defer srv.Close()
	url := srv.URL + "/apis/apps/v1/namespaces/ns/deployments?watch=true&resourceVersion=7"

	res, err := srv.Client().Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, `{"type":"ADDED"}`+"\n", line)
	<-sent
	w.arm(Step{LoseFrom: 1})
	w.saw(write())
	rest, err := io.ReadAll(res.Body)
	require.NoError(t, err, "the watch ends cleanly")
	require.Empty(t, rest, "what came after the cut is dropped")

	again, err := srv.Client().Get(url)
	require.NoError(t, err)
	defer again.Body.Close()
	body, err := io.ReadAll(again.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, again.StatusCode)
	require.Contains(t, string(body), `"type":"ERROR"`)
	require.Contains(t, string(body), `"reason":"Expired"`)
}

// Lost events come from a stream of their own: turning them on leaves
// every other fault of every step where it was.
func TestSchedule_lost_events_leave_the_other_faults(t *testing.T) {
	changes := make([]generate.Step, 40)
	for i := range changes {
		changes[i] = generate.Step{Op: generate.Delete, Name: "explore-0"}
	}
	off := Faults{ScenarioAnnotation: "a", Restarts: true}
	on := off
	on.LostEvents = true
	without, with := schedule(7, 3, changes, off), schedule(7, 3, changes, on)
	lost := 0
	for i := range with {
		if with[i].LoseFrom > 0 {
			lost++
		}
		require.Zero(t, without[i].LoseFrom)
		with[i].LoseFrom = 0
	}
	require.Equal(t, without, with)
	require.NotZero(t, lost, "some steps lose events")
}

// A reflector whose cut watch had sent nothing and lasted under a second
// takes it for a very short watch (client-go's VeryShortWatchError): it
// lists again at once, with no watch again from its resourceVersion. Its
// relist settles the cut: a later watch of the collection from a
// resourceVersion, after a watch that ended as watches end, isn't
// expired, or the replay would lose events at a write no step names.
func TestLost_relist_without_watch_again(t *testing.T) {
	w := lostWrites()
	path := "/apis/apps/v1/namespaces/ns/deployments"
	s := w.watching(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path+"?watch=true&resourceVersion=7", nil))
	require.NotNil(t, s)
	s.WriteHeader(http.StatusOK)
	w.arm(Step{LoseFrom: 1})
	w.saw(write())
	require.Equal(t, 1, w.takeCuts())
	w.unwatch(s)

	require.False(t, w.expire(httptest.NewRequest(http.MethodGet, path+"?watch=true&sendInitialEvents=true&resourceVersion=7&resourceVersionMatch=NotOlderThan", nil)), "the relist goes through")
	require.False(t, awaiting(w))
	require.False(t, w.expire(httptest.NewRequest(http.MethodGet, path+"?watch=true&resourceVersion=12", nil)), "a watch after the relist isn't expired")
}

// A replay's timing names the cuts losing events in the step they came
// in, taken into the replay's count or not yet.
func TestLost_timing(t *testing.T) {
	w := lostWrites()
	r := &replicas{server: &restarter{}, w: w}
	tm := r.startTiming("starting")
	w.watching(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments?watch=true&resourceVersion=7", nil))
	tm.next("step 1")
	w.arm(Step{LoseFrom: 1})
	w.saw(write())
	tm.next("step 2")
	r.n.lost += w.takeCuts()
	tm.next("")
	require.Len(t, tm.parts, 3)
	require.Regexp(t, `^starting \S+$`, tm.parts[0])
	require.Regexp(t, `^step 1 \S+ \(1 cut\)$`, tm.parts[1])
	require.Regexp(t, `^step 2 \S+$`, tm.parts[2])
}

// An operator's own list of a collection, a consistent read (no
// resourceVersion), isn't its reflector's relist, which lists from the
// resourceVersion it last saw: the quiet still waits for the relist.
func TestLost_own_list_is_no_relist(t *testing.T) {
	w := lostWrites()
	path := "/apis/apps/v1/namespaces/ns/deployments"
	s := w.watching(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path+"?watch=true&resourceVersion=7", nil))
	require.NotNil(t, s)
	w.arm(Step{LoseFrom: 1})
	w.saw(write())
	require.True(t, w.expire(httptest.NewRequest(http.MethodGet, path+"?watch=true&resourceVersion=7", nil)))
	require.False(t, w.expire(httptest.NewRequest(http.MethodGet, path+"?labelSelector=app%3Dm", nil)))
	require.True(t, awaiting(w), "the operator's own list is no relist")
	require.False(t, w.expire(httptest.NewRequest(http.MethodGet, path+"?limit=500&resourceVersion=7", nil)))
	require.False(t, awaiting(w), "the reflector's relist came")
}

// The proxy's handler recovers only the abort of a stream it cut: any
// other panic, or an abort of a watch no cut ended, goes on up.
func TestLost_serve_recovers_only_the_cut(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		cut  bool
	}{
		{"another panic, after a cut", "boom", true},
		{"an abort, no cut", http.ErrAbortHandler, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := lostWrites()
			next := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				rw.WriteHeader(http.StatusOK)
				if tc.cut {
					w.arm(Step{LoseFrom: 1})
					w.saw(write())
				}
				panic(tc.v)
			})
			r := httptest.NewRequest(http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments?watch=true&resourceVersion=7", nil)
			require.PanicsWithValue(t, tc.v, func() { w.serve(httptest.NewRecorder(), r, next) })
		})
	}
}
