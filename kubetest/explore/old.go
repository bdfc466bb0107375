package explore

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Old lists (issue #47): the operator's lists answered from an older
// resourceVersion, as far as the request lets the API server do so, as
// a lagging watch cache answers them, or an API server of an HA
// control plane that is behind the others. From the operator's k-th
// write of a step on (Step.OldListsFrom), the proxy has noted the
// cluster's resourceVersion R right before that write went on, and for
// the rest of the step answers the replica's lists, and a fresh
// replica's after a crash, as follows:
//
//   - a list from resourceVersion "0" ("Any": a client-go reflector's
//     first list) is answered from the state at R;
//   - a list from resourceVersion X, with resourceVersionMatch unset or
//     NotOlderThan (a reflector's relist), from the state at X or R,
//     whichever is newer: never older than X;
//   - a list from no resourceVersion (a consistent read), one with
//     Exact, one from X with a limit and no resourceVersionMatch (an
//     exact one, the API server's legacy semantics: a reflector's
//     relist once its first list came in pages), or one that continues
//     another, goes through as it is;
//   - a streamed list (watch with sendInitialEvents) is refused, as an
//     API server without WatchList refuses it, with a 422, so that the
//     reflector lists instead (client-go falls back to a list when its
//     streamed list fails).
//
// The proxy answers an older state by asking the API server for the list
// at exactly that resourceVersion (resourceVersionMatch=Exact). The
// reflector then watches on from the list's resourceVersion, and is sent
// every event since; as a lagging cache sends them late, the watches of
// every resource but the explored one opened from then on are held back
// until the operator has been quiet, as a stale view's are (stale.go).
// So the operator acts on an old view, then catches up. A correct
// operator converges; one that trusts the first view of a fresh replica,
// and makes what it thinks missing, makes it twice.
//
// What it models: a reflector's lists served old within the guarantees
// of the API: a fresh replica's first lists go back to R, a relist never
// behind its own resourceVersion. Lists happen in a step only where
// something else starts them: a crash's fresh replica, a step made while
// the operator is down, lost events' relists, a restart. What it doesn't:
// a streamed list served old (it is refused, and the list after it
// served old, which is what the reflector then sees; the API server
// answers a streamed list of resourceVersion X from its watch cache at X
// or newer too, but the proxy would have to rebuild its stream of
// events); a watch served old (a watch from X is sent every event after
// X, however far behind the cache is); and reads of one object (a GET
// with no resourceVersion is a consistent read, and one from X or "0"
// goes through as it is).

// oldStream draws the old lists from a stream of their own, so that
// adding them left every seed's other faults as they were.
const oldStream = 0x4f6c64

// oldKind is the kind of the old lists.
func oldKind() faultKind {
	return faultKind{
		name: "oldListsFrom", stream: oldStream, shown: 4,
		draw: func(rng *rand.Rand, s *Step, on Faults) {
			if s.OldListsFrom = drawWrite(rng, faultOdds); !on.OldLists {
				s.OldListsFrom = 0
			}
		},
		has:   func(s Step) bool { return s.OldListsFrom != 0 },
		clear: func(s *Step) { s.OldListsFrom = 0 },
		say: func(s Step) string {
			if s.OldListsFrom <= 0 {
				return ""
			}
			return fmt.Sprintf("the operator's lists served old from its write %d", s.OldListsFrom)
		},
		keep: func(s Step, k *keptStep) { k.OldListsFrom = s.OldListsFrom },
		read: func(k keptStep, s *Step) []string {
			s.OldListsFrom = k.OldListsFrom
			return negative("oldListsFrom", k.OldListsFrom)
		},
	}
}

// nowPath is what the proxy lists to learn the cluster's resourceVersion:
// a consistent list, of one item at most, whose resourceVersion is the
// newest.
const nowPath = "/api/v1/namespaces"

// noteOld notes the cluster's resourceVersion, asking next for it with
// r's credentials, as the state the rest of the step's lists are
// answered from. When it can't learn it, it notes nothing, and the
// step's lists go through as they are.
func (w *writes) noteOld(r *http.Request, next http.Handler) {
	now := r.Clone(r.Context())
	now.Method, now.Body, now.ContentLength = http.MethodGet, http.NoBody, 0
	now.URL.Path, now.URL.RawPath, now.URL.RawQuery = nowPath, "", "limit=1"
	now.RequestURI = ""
	now.Header.Set("Accept", runtime.ContentTypeJSON)
	now.Header.Del("Content-Type")
	now.Header.Del("Content-Length")
	now.Header.Del("Accept-Encoding") // a body this proxy can read
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, now)
	var list struct {
		metav1.ListMeta `json:"metadata"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &list) != nil {
		return
	}
	if _, err := strconv.ParseUint(list.ResourceVersion, 10, 64); err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.oldAt = list.ResourceVersion
}

// old returns r as the API server answers it from an older state, and
// whether the proxy should refuse it as a streamed list: see the top of
// this file. It returns r itself when r goes through as it is, or when
// no state was noted.
func (w *writes) old(r *http.Request) (_ *http.Request, refuse bool) {
	if r.Method != http.MethodGet {
		return r, false
	}
	w.mu.Lock()
	at := w.oldAt
	w.mu.Unlock()
	if at == "" {
		return r, false
	}
	q := r.URL.Query()
	watch, _ := strconv.ParseBool(q.Get("watch"))
	if initial, _ := strconv.ParseBool(q.Get("sendInitialEvents")); watch && initial {
		w.countOld()
		return r, true
	}
	if o, ok := objectAt(r.URL.Path); !ok || o.name != "" || watch || q.Get("continue") != "" {
		// Reads of one object are never served old: see the top of
		// this file.
		return r, false
	}
	rv, ok := olderAnswer(q.Get("resourceVersion"), metav1.ResourceVersionMatch(q.Get("resourceVersionMatch")), q.Get("limit") != "", at)
	if !ok {
		return r, false
	}
	q.Set("resourceVersion", rv)
	q.Set("resourceVersionMatch", string(metav1.ResourceVersionMatchExact))
	old := r.Clone(r.Context())
	old.URL.RawQuery = q.Encode()
	old.RequestURI = ""
	w.countOld()
	return old, false
}

// olderAnswer returns the resourceVersion a list from rv, with match,
// paged when it has a limit, is answered at when the state at, older
// than now, is to be served: at, for "0"; at or rv, whichever is newer,
// for a list not older than rv; and false for a list that must be
// answered as it asks, a consistent or an exact one, or one whose
// resourceVersion isn't one. A paged list from rv with no match is an
// exact one: the API server's legacy semantics (apiserver's
// delegator.ShouldDelegateList), which a reflector's relist gets once
// its first list came in pages.
func olderAnswer(rv string, match metav1.ResourceVersionMatch, paged bool, at string) (string, bool) {
	switch {
	case rv == "" || match == metav1.ResourceVersionMatchExact:
		return "", false
	case rv == "0":
		return at, true
	case match == "" && paged:
		return "", false
	case match != "" && match != metav1.ResourceVersionMatchNotOlderThan:
		return "", false
	}
	x, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return "", false
	}
	a, err := strconv.ParseUint(at, 10, 64)
	if err != nil || x > a {
		return rv, true
	}
	return at, true
}

// countOld counts a list answered from an older state, or refused.
func (w *writes) countOld() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.olds++
}

// takeOld returns how many lists were answered from an older state, or
// refused, since it was last called.
func (w *writes) takeOld() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.olds
	w.olds = 0
	return n
}

// writeNoWatchList answers r, a streamed list, as an API server without
// WatchList does: a 422, which client-go's reflector answers with a
// list.
func writeNoWatchList(rw http.ResponseWriter) {
	raw := statusJSON(metav1.StatusReasonInvalid, http.StatusUnprocessableEntity,
		"sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled")
	rw.Header().Set("Content-Type", runtime.ContentTypeJSON)
	rw.WriteHeader(http.StatusUnprocessableEntity)
	_, _ = rw.Write(raw)
}
