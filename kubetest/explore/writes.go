package explore

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// writes records the operator's writes, as its proxy sees them: when the
// last one was, and each object it wrote, by name. It crashes the
// operator, and holds back its watches, when a step's faults say so.
type writes struct {
	mu      sync.Mutex
	last    time.Time
	objects map[string]object
	// explored is the explored resource, whose watch is never held back.
	explored schema.GroupResource
	// step counts the writes of the current step; crashAfter, staleFrom,
	// loseFrom and restartAfter are its faults.
	step, crashAfter, staleFrom, loseFrom, restartAfter int
	// restart begins a restart of the API server.
	restart func()
	// seenKinds are the kinds of the objects the operator wrote, as the
	// checks have read them.
	seenKinds map[schema.GroupKind]bool
	// streams are the running replica's watches a stale view holds back,
	// and holding is set while it does.
	streams map[*stream]struct{}
	holding bool
	// expired counts, by collection, the watches lost events cut whose
	// watch again is still to be answered as expired, and relisting
	// those whose relist is still to come (lost.go); cuts counts the
	// cuts, cutAt is when the last was, and relistedAt when the last
	// relist came.
	expired, relisting map[string]int
	cuts               int
	cutAt, relistedAt  time.Time
	// oldFrom is the step's write its lists are served old from, oldAt
	// the resourceVersion noted right before it, "" until then, and
	// olds counts the lists served old or refused (old.go). A fresh
	// replica keeps oldAt: its first lists are what it bites.
	oldFrom int
	oldAt   string
	olds    int
	// crash is the running replica's network, which a crash cuts; crashed
	// is set once it has, and refuses whatever the replica still sends.
	crash   func()
	crashed bool
	// keepFaults is set when the replica crashed before a step's change
	// (down.go): the fresh one keeps the step's faults.
	keepFaults bool
}

// arm sets the faults of the step about to be made, counting its writes
// from none.
func (w *writes) arm(s Step) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.step, w.crashAfter, w.staleFrom, w.loseFrom, w.restartAfter = 0, s.CrashAfter, s.StaleFrom, s.LoseFrom, s.RestartAfter
	w.oldFrom, w.oldAt = s.OldListsFrom, ""
}

// replica sets the network of a new replica, which a crash cuts. The
// new replica's view isn't stale, and it has lost no event; the crashed
// one's watches are gone with it. It doesn't crash at the step's crash,
// which came, unless its predecessor crashed before the step's change
// (down): then the step's faults are still to come, and its writes count
// from none.
func (w *writes) replica(cut func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.crash, w.crashed = cut, false
	if w.keepFaults {
		w.keepFaults, w.step = false, 0
	} else {
		w.crashAfter = 0
	}
	w.holding, w.streams = false, map[*stream]struct{}{}
	w.expired, w.relisting = map[string]int{}, map[string]int{}
}

// hasCrashed reports whether the running replica has crashed.
func (w *writes) hasCrashed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.crashed
}

// object names one object the API serves.
type object struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

func (o object) String() string {
	if o.namespace == "" {
		return o.gvr.Resource + " " + o.name
	}
	return o.gvr.Resource + " " + o.namespace + "/" + o.name
}

// objectAt parses the API path of one object, of its status, or of a
// collection, which a create is sent to: /api/v1/namespaces/ns/configmaps,
// /apis/group/version/resource/name and the like. A collection's object
// has no name. It reports false for any other path.
func objectAt(path string) (object, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var o object
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		o.gvr.Version, parts = parts[1], parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		o.gvr.Group, o.gvr.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return object{}, false
	}
	if len(parts) > 2 && parts[len(parts)-1] == "status" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		o.namespace, parts = parts[1], parts[2:]
	}
	switch len(parts) {
	case 1:
		o.gvr.Resource = parts[0]
	case 2:
		o.gvr.Resource, o.name = parts[0], parts[1]
	default:
		return object{}, false
	}
	return o, true
}

// serve passes r on to next, unless the replica has crashed or r is a
// write past the one the replica crashes after: those never land. Once
// the write it crashes after has landed, it crashes the replica, and
// once the write the API server restarts after has, it begins the
// restart. A watch's response goes through a stream a stale view can
// hold back and lost events can cut; a watch again after a cut is
// answered as expired (lost.go). At the write the lists are served old
// from, it notes the state to serve them from before the write goes on,
// and from then on it serves them so (old.go).
func (w *writes) serve(rw http.ResponseWriter, r *http.Request, next http.Handler) {
	pass, crash, restart, old := w.saw(r)
	if !pass {
		panic(http.ErrAbortHandler)
	}
	if old {
		w.noteOld(r, next)
	}
	if w.expire(r) {
		writeExpired(rw, r)
		return
	}
	r, refuse := w.old(r)
	if refuse {
		writeNoWatchList(rw)
		return
	}
	if s := w.watching(rw, r); s != nil {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		s.setCancel(cancel)
		r = r.WithContext(ctx)
		defer w.unwatch(s)
		defer func() {
			// A stream cut while the proxy copied it is aborted by the
			// proxy; the API server would have ended it, as the
			// handler returning does.
			if v := recover(); v != nil {
				if err, ok := v.(error); !ok || !errors.Is(err, http.ErrAbortHandler) || !s.wasCut() {
					panic(v)
				}
			}
			if s.unanswered() {
				w.answered(s.path)
				writeExpired(s.rw, r)
			}
		}()
		next.ServeHTTP(s, r)
		return
	}
	next.ServeHTTP(rw, r)
	if restart {
		w.restart()
	}
	if crash {
		w.mu.Lock()
		w.crashed = true
		cut := w.crash
		w.mu.Unlock()
		cut()
	}
}

// saw records r, and reports whether it may pass, and whether it is the
// write the replica crashes after, the one the API server restarts
// after, and the one the lists are served old from. At the write the
// view goes stale
// from, it holds the watches back before the write goes on, so that
// they don't tell of its change.
func (w *writes) saw(r *http.Request) (pass, crash, restart, old bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.crashed {
		return false, false, false, false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true, false, false, false
	}
	o, parsed := objectAt(r.URL.Path)
	if parsed && (o.gvr.Resource == "leases" || o.gvr.Resource == "events") {
		// The Lease and Events are the operator's own bookkeeping, not
		// changes to what it manages.
		return true, false, false, false
	}
	w.step++
	if w.crashAfter > 0 && w.step > w.crashAfter {
		return false, false, false, false
	}
	w.last = time.Now()
	if parsed && o.name != "" {
		w.objects[o.String()] = o
	}
	if w.step == w.staleFrom {
		w.holdLocked()
	}
	if w.step == w.loseFrom {
		w.cutLocked()
	}
	return true, w.step == w.crashAfter, w.step == w.restartAfter, w.step == w.oldFrom
}

// since returns how long ago the operator last wrote, or 0 while a
// relist after lost events is still to come: until it has seen the
// newest state, its quiet says nothing.
func (w *writes) since() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.awaitingLocked() && time.Since(w.cutAt) < afterCut {
		return 0
	}
	return time.Since(w.last)
}

// kinds adds the kinds of written, objects the operator wrote, to those
// it has been seen to write in this replay, and returns them, with
// explored: the kinds whose objects, once gone, the garbage collector
// collects the dependents of. A kind stays known after its last object
// is gone, which is when its dependents are collected.
func (w *writes) kinds(explored schema.GroupKind, written map[string]*unstructured.Unstructured) map[schema.GroupKind]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seenKinds == nil {
		w.seenKinds = map[schema.GroupKind]bool{}
	}
	w.seenKinds[explored] = true
	for _, u := range written {
		w.seenKinds[u.GroupVersionKind().GroupKind()] = true
	}
	return maps.Clone(w.seenKinds)
}

func (w *writes) written() []object {
	w.mu.Lock()
	defer w.mu.Unlock()
	objects := make([]object, 0, len(w.objects))
	for _, o := range w.objects {
		objects = append(objects, o)
	}
	return objects
}
