package explore

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestStream(t *testing.T) {
	rec := httptest.NewRecorder()
	s := &stream{rw: rec}
	write := func(p string) {
		t.Helper()
		n, err := s.Write([]byte(p))
		require.NoError(t, err)
		require.Equal(t, len(p), n)
		s.Flush()
	}
	write("a")
	s.hold()
	write("b")
	write("c")
	require.Equal(t, "a", rec.Body.String(), "held back")
	s.release()
	require.Equal(t, "abc", rec.Body.String(), "let go, in order")
	require.True(t, rec.Flushed)

	s.hold()
	write("d")
	s.end()
	s.release()
	require.Equal(t, "abc", rec.Body.String(), "what an ended stream kept is dropped")
}

// A streamed list is never held back, even from a hold that began before
// it: an informer whose list is held never syncs, its replica is never
// quiet, and the hold is never let go. Once the bookmark that ends the
// list has passed, even split across two writes, the hold takes.
func TestStream_passes_a_streamed_list(t *testing.T) {
	w := &writes{explored: schema.GroupResource{Group: "cache.example.com", Resource: "memcacheds"}, streams: map[*stream]struct{}{}}
	w.mu.Lock()
	w.holdLocked()
	w.mu.Unlock()
	rec := httptest.NewRecorder()
	s := w.watching(rec, httptest.NewRequest(http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", nil))
	require.NotNil(t, s)
	plain := w.watching(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments?watch=true&resourceVersion=7", nil))
	require.False(t, plain.listing, "a watch from a resourceVersion lists nothing")

	added := `{"type":"ADDED","object":{"kind":"Deployment"}}` + "\n"
	bookmark := `{"type":"BOOKMARK","object":{"kind":"Deployment","metadata":{"annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n"
	cut := len(bookmark) / 2
	for _, p := range []string{added, bookmark[:cut], bookmark[cut:]} {
		_, err := s.Write([]byte(p))
		require.NoError(t, err)
		s.Flush()
	}
	require.Equal(t, added+bookmark, rec.Body.String(), "the list and its bookmark pass a hold")
	modified := `{"type":"MODIFIED","object":{"kind":"Deployment"}}` + "\n"
	_, err := s.Write([]byte(modified))
	require.NoError(t, err)
	s.Flush()
	require.Equal(t, added+bookmark, rec.Body.String(), "what comes after the list is held back")
	require.True(t, w.release())
	require.Equal(t, added+bookmark+modified, rec.Body.String())
}

func TestWatching(t *testing.T) {
	w := &writes{explored: schema.GroupResource{Group: "cache.example.com", Resource: "memcacheds"}, streams: map[*stream]struct{}{}}
	for _, tc := range []struct {
		method, url string
		// watched is set for a watch, and explored for the explored
		// resource's, which lost events cut but a stale view never
		// holds back.
		watched, explored bool
	}{
		{http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments?watch=true", true, false},
		{http.MethodGet, "/api/v1/namespaces/ns/configmaps?watch=1&resourceVersion=5", true, false},
		{http.MethodGet, "/apis/cache.example.com/v1/namespaces/ns/memcacheds?watch=true", true, true},
		{http.MethodGet, "/apis/apps/v1/namespaces/ns/deployments", false, false},
		{http.MethodPost, "/apis/apps/v1/namespaces/ns/deployments?watch=true", false, false},
	} {
		s := w.watching(httptest.NewRecorder(), httptest.NewRequest(tc.method, tc.url, nil))
		require.Equal(t, tc.watched, s != nil, "%s %s", tc.method, tc.url)
		if s != nil {
			require.Equal(t, tc.explored, s.explored, "%s %s", tc.method, tc.url)
		}
	}
	require.Len(t, w.streams, 3)

	// A hold covers the streams open and those opened later, until the
	// release.
	w.mu.Lock()
	w.holdLocked()
	w.mu.Unlock()
	later := w.watching(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/secrets?watch=true", nil))
	for s := range w.streams {
		require.Equal(t, !s.explored, s.held, "%s", s.path)
	}
	require.True(t, w.release())
	require.False(t, later.held)
	require.False(t, w.release(), "nothing left to let go")
	w.unwatch(later)
	require.Len(t, w.streams, 3)
}
