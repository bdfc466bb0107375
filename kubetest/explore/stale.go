package explore

import (
	"bytes"
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A stale view, Sieve's observability gap: from the operator's k-th
// write of a step on, what the API server sends on its watches of every
// resource but the explored one is held back at the proxy, while the
// explored resource's watch keeps flowing. So the operator goes on
// reconciling what it is asked to, with a view of what it wrote that
// lags behind, as a view does when one informer's watch is slower than
// another's or reconnects. The explorer lets the watches go once the
// operator has been quiet for Quiet: a correct operator then converges,
// and one that acted on what it couldn't see has done so.
//
// A watch that streams its list first (client-go's WatchList, on by
// default since 1.35: sendInitialEvents=true) is held only once its
// list has arrived, after the bookmark that ends it: a view is stale
// only once there is a view. Holding the list itself would leave the
// informer unsynced, the replica never quiet, and the hold never let
// go.

// stream is one watch response the operator's replica reads through the
// proxy. While it is held, what the API server sends on it is kept, in
// order, and written when it is let go.
type stream struct {
	rw http.ResponseWriter
	// path is the collection watched, and explored is set when it is the
	// explored resource's, which a stale view never holds back.
	path     string
	explored bool
	// cancel ends the request to the API server, when the stream is cut.
	cancel context.CancelFunc
	mu     sync.Mutex
	// held is set while the stream is held back; kept is what came
	// meanwhile.
	held bool
	kept bytes.Buffer
	// ended is set once the proxy's handler has returned, after which rw
	// must not be written.
	ended bool
	// listing is set while the stream sends its initial list, which is
	// never held back nor cut; tail is the end of what it last wrote, in
	// which the bookmark's mark may have begun.
	listing bool
	tail    []byte
	// isCut is set once lost events have cut the stream (lost.go): what
	// comes on it is dropped. headed is set once its status was written.
	isCut, headed bool
}

// initialEventsEnd is what the bookmark ending a streamed list carries
// (metav1.InitialEventsAnnotationKey), in JSON and protobuf alike.
var initialEventsEnd = []byte(metav1.InitialEventsAnnotationKey)

// Header returns the response's header.
func (s *stream) Header() http.Header { return s.rw.Header() }

// WriteHeader writes the response's status: a watch's status says
// nothing about the objects, so it is never held back.
func (s *stream) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isCut {
		// The proxy's answer to a request cut short: the stream's own
		// answer is written once its handler returns (writes.serve).
		return
	}
	s.headed = true
	s.rw.WriteHeader(code)
}

// Write writes p to the client, or keeps it while the stream is held and
// its list has arrived.
func (s *stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isCut {
		return len(p), nil
	}
	s.headed = true
	if s.listing {
		s.listed(p)
		return s.rw.Write(p)
	}
	if s.held {
		return s.kept.Write(p)
	}
	return s.rw.Write(p)
}

// listed ends the stream's listing once p, with what came before it,
// holds the mark of the bookmark that ends the list. s.mu is held.
func (s *stream) listed(p []byte) {
	seen := append(s.tail, p...)
	if bytes.Contains(seen, initialEventsEnd) {
		s.listing, s.tail = false, nil
		return
	}
	s.tail = slices.Clone(seen[max(0, len(seen)-len(initialEventsEnd)+1):])
}

// Flush sends what was written to the client: the proxy flushes after
// every event of a watch. What a held stream keeps isn't written, so it
// isn't sent.
func (s *stream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isCut {
		return
	}
	_ = http.NewResponseController(s.rw).Flush()
}

// hold holds the stream back.
func (s *stream) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = true
}

// release lets the stream go: it writes what was kept, and flushes.
// What a stream that has ended kept is dropped; its client watches again
// from the last resourceVersion it saw, and is sent it again.
func (s *stream) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = false
	if !s.ended && s.kept.Len() > 0 {
		_, _ = s.rw.Write(s.kept.Bytes())
		_ = http.NewResponseController(s.rw).Flush()
	}
	s.kept.Reset()
}

// end marks the stream's handler returned.
func (s *stream) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
}

// watching returns the stream r's response is to be written through,
// registered with w, when r is a watch: a stale view holds back those of
// every resource but the explored one, and lost events cut them all. It
// returns nil for any other request.
func (w *writes) watching(rw http.ResponseWriter, r *http.Request) *stream {
	if r.Method != http.MethodGet {
		return nil
	}
	if watch, _ := strconv.ParseBool(r.URL.Query().Get("watch")); !watch {
		return nil
	}
	o, ok := objectAt(r.URL.Path)
	if !ok {
		return nil
	}
	initial, _ := strconv.ParseBool(r.URL.Query().Get("sendInitialEvents"))
	s := &stream{rw: rw, path: r.URL.Path, explored: o.gvr.GroupResource() == w.explored, listing: initial}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.oldAt != "" && !s.explored {
		// Old lists (old.go): the cache that answers the lists old
		// sends the watches after them late too, until the operator
		// has been quiet, as a stale view does.
		w.holding = true
	}
	s.held = w.holding && !s.explored
	w.streams[s] = struct{}{}
	return s
}

// unwatch ends s, and forgets it.
func (w *writes) unwatch(s *stream) {
	s.end()
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.streams, s)
}

// holdLocked holds back every watch the stale view covers, those opened
// later included. w.mu is held.
func (w *writes) holdLocked() {
	w.holding = true
	for s := range w.streams {
		if !s.explored {
			s.hold()
		}
	}
}

// release lets every held watch go, and reports whether any was held: the
// operator then sees what it missed, and its quiet is counted again from
// now.
func (w *writes) release() bool {
	w.mu.Lock()
	if !w.holding {
		w.mu.Unlock()
		return false
	}
	w.holding = false
	w.last = time.Now()
	streams := slices.Collect(maps.Keys(w.streams))
	w.mu.Unlock()
	// Outside w.mu: a write to a slow client must not stall the proxy.
	for _, s := range streams {
		s.release()
	}
	return true
}
