package explore

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/kubetest/internal/generate"
)

// The resourceVersion each list is answered at once a state older than
// now, at, is to be served: only as far back as the list lets the API
// server go.
func TestOlderAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, rv string
		match    metav1.ResourceVersionMatch
		// paged is set for a list with a limit.
		paged bool
		want  string // "" goes through as it is
	}{
		{name: "a consistent list is fresh", rv: ""},
		{name: "a consistent list, NotOlderThan, is fresh", rv: "", match: metav1.ResourceVersionMatchNotOlderThan},
		{name: "any state for 0", rv: "0", want: "40"},
		{name: "any state for 0, NotOlderThan", rv: "0", match: metav1.ResourceVersionMatchNotOlderThan, want: "40"},
		{name: "an older relist from the older state", rv: "7", want: "40"},
		{name: "an older relist, NotOlderThan, from the older state", rv: "7", match: metav1.ResourceVersionMatchNotOlderThan, want: "40"},
		{name: "a newer relist never behind its own", rv: "55", want: "55"},
		{name: "a newer relist, NotOlderThan, never behind its own", rv: "55", match: metav1.ResourceVersionMatchNotOlderThan, want: "55"},
		{name: "an exact list as it asks", rv: "7", match: metav1.ResourceVersionMatchExact},
		{name: "a match it doesn't know as it asks", rv: "7", match: "Newest"},
		{name: "a resourceVersion that isn't one as it asks", rv: "x7"},
		// A paged list from X with no match is an exact one, the
		// API server's legacy semantics (apiserver's
		// delegator.ShouldDelegateList): never newer than X either.
		{name: "a paged relist, no match, is exact", rv: "7", paged: true},
		{name: "a newer paged relist, no match, is exact", rv: "55", paged: true},
		{name: "a paged relist, NotOlderThan, from the older state", rv: "7", match: metav1.ResourceVersionMatchNotOlderThan, paged: true, want: "40"},
		{name: "a paged first list from any state", rv: "0", paged: true, want: "40"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := olderAnswer(tc.rv, tc.match, tc.paged, "40")
			require.Equal(t, tc.want != "", ok)
			require.Equal(t, tc.want, got)
		})
	}
}

// apiServer stands for the API server behind the proxy: it answers the
// list that notes the cluster's resourceVersion with rv, and records
// every other request's query.
type apiServer struct {
	rv      string
	queries []string
}

func (a *apiServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.URL.Path == nowPath {
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(map[string]any{"kind": "NamespaceList", "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": a.rv}, "items": []any{}})
		return
	}
	a.queries = append(a.queries, r.URL.RawQuery)
	rw.WriteHeader(http.StatusOK)
}

// The proxy's answer to each form of list, before the write the lists
// are served old from (as they come), after it (each as far back as it
// lets the API server go, the streamed lists refused as by an API server
// without WatchList), for a fresh replica, and once the step is over.
func TestOld_serve(t *testing.T) {
	w := lostWrites()
	api := &apiServer{rv: "40"}
	const deployments = "/apis/apps/v1/namespaces/ns/deployments"
	served := func(query string) (code int, reached string) {
		t.Helper()
		api.queries = nil
		rec := httptest.NewRecorder()
		w.serve(rec, httptest.NewRequest(http.MethodGet, deployments+"?"+query, nil), api)
		if len(api.queries) == 1 {
			reached = api.queries[0]
		}
		return rec.Code, reached
	}
	type answer struct {
		query, reached string // reached "" is refused
	}
	fresh := []answer{
		{"limit=500&resourceVersion=0", "limit=500&resourceVersion=0"},
		{"resourceVersion=7", "resourceVersion=7"},
		{"allowWatchBookmarks=true&resourceVersion=7&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true",
			"allowWatchBookmarks=true&resourceVersion=7&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true"},
	}
	old := []answer{
		{"limit=500&resourceVersion=0", "limit=500&resourceVersion=40&resourceVersionMatch=Exact"},
		{"resourceVersion=7", "resourceVersion=40&resourceVersionMatch=Exact"},
		{"resourceVersion=7&resourceVersionMatch=NotOlderThan", "resourceVersion=40&resourceVersionMatch=Exact"},
		{"resourceVersion=55", "resourceVersion=55&resourceVersionMatch=Exact"},
		{"limit=500&resourceVersion=7", "limit=500&resourceVersion=7"},
		{"limit=500&resourceVersion=7&resourceVersionMatch=NotOlderThan", "limit=500&resourceVersion=40&resourceVersionMatch=Exact"},
		{"", ""},
		{"resourceVersion=7&resourceVersionMatch=Exact", "resourceVersion=7&resourceVersionMatch=Exact"},
		{"continue=abc&limit=500", "continue=abc&limit=500"},
		{"allowWatchBookmarks=true&resourceVersion=40&watch=true", "allowWatchBookmarks=true&resourceVersion=40&watch=true"},
		{"allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true", ""},
		{"allowWatchBookmarks=true&resourceVersion=7&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true", ""},
	}
	check := func(when string, answers []answer) {
		t.Helper()
		for _, a := range answers {
			code, reached := served(a.query)
			if a.reached == "" && a.query != "" {
				require.Equal(t, http.StatusUnprocessableEntity, code, "%s: %q is refused", when, a.query)
				require.Empty(t, reached, "%s: %q never reaches the API server", when, a.query)
				continue
			}
			require.Equal(t, http.StatusOK, code, "%s: %q", when, a.query)
			require.Equal(t, a.reached, reached, "%s: %q", when, a.query)
		}
	}

	w.arm(Step{OldListsFrom: 2})
	check("before the first write", fresh)
	w.serve(httptest.NewRecorder(), write(), api)
	check("before the second write", fresh)
	api.rv = "40"
	w.serve(httptest.NewRecorder(), write(), api)
	api.rv = "60" // the cluster moved on: the state noted stays
	check("after the second write", old)
	require.Equal(t, 7, w.takeOld(), "five lists served old, two streamed lists refused")
	w.replica(func() {})
	check("for a fresh replica", old)
	w.arm(Step{})
	check("once the step is over", fresh)
	require.Equal(t, 7, w.takeOld())
	require.Zero(t, w.takeOld())
}

// A read of one object is never served old, whatever its
// resourceVersion: old lists are lists' (the GET of one object has no
// resourceVersionMatch, and from X or 0 is answered from the watch cache
// at X or newer anyway), and a read rewritten would be counted as a list
// served old that wasn't.
func TestOld_one_object(t *testing.T) {
	w := lostWrites()
	api := &apiServer{rv: "40"}
	w.arm(Step{OldListsFrom: 1})
	w.serve(httptest.NewRecorder(), write(), api)
	for _, query := range []string{"resourceVersion=0", "resourceVersion=7", ""} {
		api.queries = nil
		rec := httptest.NewRecorder()
		w.serve(rec, httptest.NewRequest(http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments/d?"+query, nil), api)
		require.Equal(t, http.StatusOK, rec.Code, query)
		require.Equal(t, []string{query}, api.queries, "%q goes through as it is", query)
	}
	require.Zero(t, w.takeOld(), "no list served old")
}

// A streamed list refused reads, to client-go, as an API server without
// WatchList refuses it: Invalid, 422, in JSON.
func TestWriteNoWatchList(t *testing.T) {
	rec := httptest.NewRecorder()
	writeNoWatchList(rec)
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var status metav1.Status
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &status))
	require.True(t, apierrors.IsInvalid(&apierrors.StatusError{ErrStatus: status}))
	require.Contains(t, status.Message, "WatchList")
}

// When the cluster's resourceVersion can't be learnt, nothing is served
// old.
func TestOld_unnoted(t *testing.T) {
	w := lostWrites()
	w.arm(Step{OldListsFrom: 1})
	w.serve(httptest.NewRecorder(), write(), http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.WriteHeader(http.StatusServiceUnavailable)
	}))
	r := httptest.NewRequest(http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments?resourceVersion=0", nil)
	got, refuse := w.old(r)
	require.False(t, refuse)
	require.Same(t, r, got)
	require.Equal(t, url.Values{"resourceVersion": {"0"}}, got.URL.Query())
}

// Old lists come from a stream of their own: turning them on leaves
// every other fault of every step where it was, and every kind on.
func TestSchedule_old_lists_leave_the_other_faults(t *testing.T) {
	changes := make([]generate.Step, 40)
	for i := range changes {
		changes[i] = generate.Step{Op: generate.Delete, Name: "explore-0"}
	}
	off := Faults{ScenarioAnnotation: "a", Restarts: true, LostEvents: true, Kubelet: true, Down: true}
	on := off
	on.OldLists = true
	without, with := schedule(7, 3, changes, off), schedule(7, 3, changes, on)
	old := 0
	for i := range with {
		if with[i].OldListsFrom > 0 {
			old++
		}
		require.Zero(t, without[i].OldListsFrom)
		with[i].OldListsFrom = 0
	}
	require.Equal(t, without, with)
	require.NotZero(t, old, "some steps serve lists old")
}

// A step's old lists are kept, said, dropped when a failure doesn't
// need them, and dropped by the replay without faults.
func TestOldLists_kept_said_dropped(t *testing.T) {
	s := Step{Step: generate.Step{Op: generate.Delete, Name: "explore-0"}, OldListsFrom: 2, CrashAfter: 3}
	require.Equal(t, "delete explore-0, the operator's lists served old from its write 2, crashing the operator right after its write 3", s.String())
	raw, err := encodeSteps([]Step{s})
	require.NoError(t, err)
	require.JSONEq(t, `{"op":"delete","name":"explore-0","crashAfter":3,"oldListsFrom":2}`, string(raw[0]))
	back, err := decodeSteps(raw)
	require.NoError(t, err)
	require.Equal(t, []Step{s}, back)
	_, err = decodeSteps([]json.RawMessage{json.RawMessage(`{"op":"delete","name":"a","oldListsFrom":-1}`)})
	require.EqualError(t, err, "step 1: oldListsFrom -1: want 0 (none) or more")
	require.True(t, faulted([]Step{{OldListsFrom: 1}}), "a sequence with old lists is replayed without them")
	needsOld := func(steps []Step) bool { return steps[0].OldListsFrom == 2 }
	require.Equal(t, []Step{{Step: s.Step, OldListsFrom: 2}}, withoutFaults([]Step{s}, needsOld))
}
