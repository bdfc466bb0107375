package explore

import (
	"bytes"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
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

// stream is one watch response the operator's replica reads through the
// proxy. While it is held, what the API server sends on it is kept, in
// order, and written when it is let go.
type stream struct {
	rw http.ResponseWriter
	mu sync.Mutex
	// held is set while the stream is held back; kept is what came
	// meanwhile.
	held bool
	kept bytes.Buffer
	// ended is set once the proxy's handler has returned, after which rw
	// must not be written.
	ended bool
}

// Header returns the response's header.
func (s *stream) Header() http.Header { return s.rw.Header() }

// WriteHeader writes the response's status: a watch's status says
// nothing about the objects, so it is never held back.
func (s *stream) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rw.WriteHeader(code)
}

// Write writes p to the client, or keeps it while the stream is held.
func (s *stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		return s.kept.Write(p)
	}
	return s.rw.Write(p)
}

// Flush sends what was written, unless the stream is held: the proxy
// flushes after every event of a watch.
func (s *stream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held {
		_ = http.NewResponseController(s.rw).Flush()
	}
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
// registered with w, when r is a watch a stale view holds back: of any
// resource but the explored one. It returns nil for any other request.
func (w *writes) watching(rw http.ResponseWriter, r *http.Request) *stream {
	if r.Method != http.MethodGet {
		return nil
	}
	if watch, _ := strconv.ParseBool(r.URL.Query().Get("watch")); !watch {
		return nil
	}
	o, ok := objectAt(r.URL.Path)
	if !ok || o.gvr.GroupResource() == w.explored {
		return nil
	}
	s := &stream{rw: rw}
	w.mu.Lock()
	defer w.mu.Unlock()
	s.held = w.holding
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
		s.hold()
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
