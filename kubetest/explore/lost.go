package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Lost events, as after a compaction (issue #47): from the operator's
// k-th write of a step on, before that write goes on, every watch of the
// operator's replica that has sent its list is cut: what the API server
// sends on it from then on is dropped, and the response ends, as the API
// server ends its watches when its watch cache starts over. client-go's
// reflector watches again from the last resourceVersion it saw, and the
// proxy answers that watch as the API server answers one from a
// resourceVersion compacted away: with a 200 and a single ERROR event,
// a Status of 410 and reason Expired ("too old resource version"), in
// JSON. The reflector then lists again, after its backoff (800 ms to
// 1.6 s the first time, doubling while it keeps happening), with a
// streamed list (sendInitialEvents) or a plain one, which the proxy lets
// through: the informer sees the newest state, as an update from what
// it had, and none of the states between. An operator that acts on a
// change only as it sees it pass by misses those.
//
// What it models: a watch cache that starts over past events a client
// hadn't been sent, each of the replica's reflectors relisting once, and
// client-go's own backoff before the relist. What it doesn't: a LIST
// from resourceVersion "0", or a relist NotOlderThan, answered from a
// lagging cache older than the newest state (the relist here is the API
// server's own, fresh: old lists, old.go, model those); an expiry that hits only some resources (every
// watch of the replica is cut); a client that accepts no JSON, which is
// answered with a 410 response rather than a 200 and an ERROR event; and
// a watch still sending its list, which is left alone, so its reflector
// may see every event.

// cut cuts the stream, unless it is still sending its list or has
// ended, and reports whether it did: what it kept and what comes on it
// later are dropped, and its request to the API server ends.
func (s *stream) cut() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listing || s.ended || s.isCut {
		return false
	}
	s.isCut, s.held = true, false
	s.kept.Reset()
	if s.cancel != nil {
		s.cancel()
	}
	return true
}

// setCancel sets what ends the stream's request to the API server, and
// ends it at once when the stream was cut already.
func (s *stream) setCancel(cancel context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancel = cancel
	if s.isCut {
		cancel()
	}
}

// unanswered reports whether the stream was cut before its status was
// written: its request was cut short, and is still to be answered.
func (s *stream) unanswered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.isCut && !s.headed
}

// wasCut reports whether the stream was cut.
func (s *stream) wasCut() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.isCut
}

// afterCut is how long after watches were cut their relists may come:
// client-go's reflector backs off up to 30 s, and its jitter may double
// that, when its watches are cut again and again.
const afterCut = time.Minute

// cutLocked cuts every watch of the running replica that has sent its
// list: see the top of this file. w.mu is held.
func (w *writes) cutLocked() {
	cut := false
	for s := range w.streams {
		if s.cut() {
			w.expired[s.path]++
			w.relisting[s.path]++
			cut = true
		}
	}
	if cut {
		w.cuts++
		w.cutAt = time.Now()
	}
}

// expire reports whether r is a watch that the API server would answer
// as one from a resourceVersion compacted away: a plain watch, from a
// resourceVersion, of a collection whose watch was cut and neither
// watched again nor listed again since. It counts that watch. A list
// from a resourceVersion or a streamed list of such a collection is a
// relist: the quiet is counted again from it.
func (w *writes) expire(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	q := r.URL.Query()
	w.mu.Lock()
	defer w.mu.Unlock()
	path := r.URL.Path
	watch, _ := strconv.ParseBool(q.Get("watch"))
	initial, _ := strconv.ParseBool(q.Get("sendInitialEvents"))
	if !watch || initial {
		// A reflector relists from the resourceVersion it last saw (or
		// "0"); a list with none is a consistent read, the operator's
		// own, which tells its informers nothing.
		if !watch && q.Get("resourceVersion") == "" {
			return false
		}
		if w.relisting[path] > 0 {
			w.relisting[path]--
			w.last, w.relistedAt = time.Now(), time.Now()
		}
		// A reflector watches again from its resourceVersion only before
		// it relists: one whose cut watch was very short (nothing sent,
		// under a second) relists at once, and its expiry, left, would
		// expire a watch of a later step that no cut ended.
		if n := w.relisting[path]; w.expired[path] > n {
			w.expired[path] = n
		}
		return false
	}
	if rv := q.Get("resourceVersion"); rv == "" || rv == "0" || w.expired[path] == 0 {
		return false
	}
	w.expired[path]--
	return true
}

// awaitingLocked reports whether a watch was cut whose relist is still
// to come. w.mu is held.
func (w *writes) awaitingLocked() bool {
	for _, n := range w.relisting {
		if n > 0 {
			return true
		}
	}
	return false
}

// deadline returns when a wait whose deadline was base is over, with
// the lost events' relists: not while one is still to come, up to
// afterCut after the cut, nor before settle after the last came.
func (w *writes) deadline(base time.Time, settle time.Duration) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.awaitingLocked() && time.Since(w.cutAt) < afterCut {
		return time.Now().Add(settle)
	}
	if t := w.relistedAt.Add(settle); t.After(base) {
		return t
	}
	return base
}

// cutCount returns how many times watches were cut since takeCuts was
// last called.
func (w *writes) cutCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cuts
}

// takeCuts returns how many times watches were cut since it was last
// called.
func (w *writes) takeCuts() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.cuts
	w.cuts = 0
	return n
}

// writeExpired answers r, a watch from a resourceVersion compacted away,
// as the API server's watch cache does: a 200 and a single ERROR event,
// a Status of 410 and reason Expired, in JSON, which every client of
// loam accepts; or, to a client that accepts no JSON, a 410 response.
func writeExpired(rw http.ResponseWriter, r *http.Request) {
	raw := statusJSON(metav1.StatusReasonExpired, http.StatusGone, fmt.Sprintf("too old resource version: %s", r.URL.Query().Get("resourceVersion")))
	rw.Header().Set("Content-Type", runtime.ContentTypeJSON)
	if !acceptsJSON(r.Header.Values("Accept")) {
		rw.WriteHeader(http.StatusGone)
		_, _ = rw.Write(raw)
		return
	}
	event, err := json.Marshal(metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: raw}})
	if err != nil {
		panic(err)
	}
	rw.WriteHeader(http.StatusOK)
	_, _ = rw.Write(append(event, '\n'))
	_ = http.NewResponseController(rw).Flush()
}

// statusJSON is a failure's Status, of reason, code and message, in
// JSON, as the API server answers it.
func statusJSON(reason metav1.StatusReason, code int32, message string) []byte {
	raw, err := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  message,
		Reason:   reason,
		Code:     code,
	})
	if err != nil {
		panic(err) // a Status always marshals
	}
	return raw
}

// acceptsJSON reports whether a client that sent accept takes JSON: it
// names it, or anything, or nothing.
func acceptsJSON(accept []string) bool {
	if len(accept) == 0 {
		return true
	}
	for _, a := range accept {
		for part := range strings.SplitSeq(a, ",") {
			media, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			switch media {
			case runtime.ContentTypeJSON, "*/*", "application/*":
				return true
			}
		}
	}
	return false
}

// answered counts a watch of path, cut before it was answered, as
// answered as expired: its reflector has no watch of path to make again.
func (w *writes) answered(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.expired[path] > 0 {
		w.expired[path]--
	}
}
