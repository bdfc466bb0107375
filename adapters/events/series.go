package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// CombinedPrefix starts the note of an Event created for a series whose
// occurrences' notes differed, as client-go's EventAggregator marks an
// event it combined.
const CombinedPrefix = "(combined from similar events): "

// series is one key's occurrences: how many were observed, how many the
// API server's Event holds, and the latest note.
type series struct {
	first     Event // the first occurrence: the Event created names it
	namespace string
	name      string // the Event's name, fixed before its create is sent
	created   bool   // whether the API server has the Event named name
	count     int32  // occurrences observed
	written   int32  // occurrences the API server's Event counts
	last      time.Time
	note      string // the latest occurrence's note
	combined  bool   // whether the occurrences' notes differed
	failures  int    // consecutive failed writes
}

// dirty reports whether s holds occurrences the API server lacks.
func (s *series) dirty() bool { return !s.created || s.written != s.count }

// observe counts e in its series, creating its Event when it has none
// within the Window and the object's bucket has a token.
func (w *Writer) observe(ctx context.Context, e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.c.Now()
	k := seriesKey(e)
	if s, ok := w.series[k]; ok {
		if now.Sub(s.last) <= w.c.Window {
			s.count++
			s.last = now
			s.combined = s.combined || s.note != e.Note
			s.note = e.Note
			return
		}
		// The series is over: what it still owes is written first, once.
		if s.dirty() {
			// A failure is logged and counted by write itself.
			_ = w.write(ctx, k, s)
		}
		if w.series[k] == s {
			delete(w.series, k)
		}
	}
	if !w.buckets.Take(bucketKey{regarding: k.regarding, typ: e.Type}, now) {
		w.dropped.add(ctx, DropRateLimited, 1)
		return
	}
	ns := e.Regarding.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	s := &series{first: e, namespace: ns, count: 1, last: now, note: e.Note}
	w.name(s, now)
	w.series[k] = s
	// A failure is logged and counted by write itself.
	_ = w.write(ctx, k, s)
}

// name gives s a new Event name: the object's name and the instant, told
// apart from another of the same instant by a sequence number.
func (w *Writer) name(s *series, now time.Time) {
	w.seq++
	s.name = s.first.Regarding.Name + "." + strconv.FormatInt(now.UnixNano(), 16) + strconv.FormatInt(w.seq, 16)
}

// flush writes every series that owes the API server occurrences, and
// forgets those past the Window that owe nothing. It stops at a write that
// ran out of time: the next would too, and holding the writer longer
// helps no one; the rest are written at the next flush.
func (w *Writer) flush(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.c.Now()
	if d := w.dropped.total.Load(); d > w.logged {
		w.c.Logger.Info("events dropped: rate-limited, the buffer was full, a write failed or the writer closed", "dropped", d-w.logged)
		w.logged = d
	}
	for k, s := range w.series {
		if s.dirty() {
			if err := w.write(ctx, k, s); err != nil && (ctx.Err() != nil || isTimeout(err)) {
				return
			}
		}
		if !s.dirty() && now.Sub(s.last) > w.c.Window {
			delete(w.series, k)
		}
	}
}

// abandon counts as dropped every occurrence a series still owes, once the
// Writer has closed and will write no more.
func (w *Writer) abandon() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, s := range w.series {
		if s.dirty() {
			w.dropped.add(context.Background(), DropWriteFailed, int64(s.count-s.written))
		}
		delete(w.series, k)
	}
}

// write sends what s owes: its Event's create, or its series' patch, each
// within WriteTimeout. It marks s written only once the API server
// answered, so a failed write is tried again at the next flush; after
// MaxAttempts failures, or one the API server will refuse again, it drops
// what s owes and forgets s. An Event gone from the API server, by its
// TTL or a deletion, is created again with the series' count.
func (w *Writer) write(ctx context.Context, k key, s *series) error {
	if err := ctx.Err(); err != nil {
		// Close gave up waiting: what s owes is counted when it abandons.
		return err
	}
	// The message names the request that failed, as before the series
	// were kept: operators' log alerts match on it.
	msg := "patching an event's series failed"
	if !s.created {
		msg = "creating an event failed"
	}
	err := w.send(ctx, s)
	if err == nil {
		s.failures = 0
		return nil
	}
	if s.created && apierrors.IsNotFound(err) {
		s.created, s.written = false, 0
		w.name(s, w.c.Now())
		if err = w.send(ctx, s); err == nil {
			s.failures = 0
			return nil
		}
	}
	s.failures++
	w.c.Logger.Error(err, msg, "event", s.namespace+"/"+s.name, "reason", s.first.Reason, "attempt", s.failures)
	if permanent(err) || s.failures >= w.c.MaxAttempts {
		w.dropped.add(ctx, DropWriteFailed, int64(s.count-s.written))
		delete(w.series, k)
	}
	return err
}

// send makes one request: the create of s's Event when the API server
// lacks it, else the patch of its series.
func (w *Writer) send(ctx context.Context, s *series) error {
	ctx, cancel := context.WithTimeout(ctx, w.c.WriteTimeout)
	defer cancel()
	events := w.c.Client.Events(s.namespace)
	if !s.created {
		_, err := events.Create(ctx, w.event(s), metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			// An earlier create of this Event timed out here but reached
			// the server: the Event is ours, counting one occurrence at
			// least, and the next patch brings its count up to date.
			s.created, s.written = true, 1
			return nil
		case err != nil:
			return fmt.Errorf("creating the event %s/%s: %w", s.namespace, s.name, err)
		}
		s.created, s.written = true, s.count
		return nil
	}
	count := s.count
	patch, err := json.Marshal(map[string]any{"series": eventsv1.EventSeries{Count: count, LastObservedTime: metav1.NewMicroTime(s.last)}})
	if err != nil {
		return fmt.Errorf("encoding the series of the event %s/%s: %w", s.namespace, s.name, err)
	}
	if _, err := events.Patch(ctx, s.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patching the series of the event %s/%s: %w", s.namespace, s.name, err)
	}
	s.written = count
	return nil
}

// event returns the Event to create for s: its first occurrence's, with
// the latest note, marked as combined when the notes differed, and the
// series' count when it is past one.
func (w *Writer) event(s *series) *eventsv1.Event {
	e := s.first
	note := s.note
	if s.combined {
		note = CutNote(CombinedPrefix + note)
	}
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: s.namespace, Name: s.name},
		EventTime:           metav1.NewMicroTime(s.last),
		ReportingController: w.c.Controller,
		ReportingInstance:   w.c.Instance,
		Action:              e.Action,
		Reason:              e.Reason,
		Type:                e.Type,
		Note:                note,
		Regarding:           reference(e.Regarding),
	}
	if e.Related != nil {
		r := reference(*e.Related)
		ev.Related = &r
	}
	if s.count > 1 {
		ev.Series = &eventsv1.EventSeries{Count: s.count, LastObservedTime: metav1.NewMicroTime(s.last)}
	}
	return ev
}

func reference(r Regarding) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID,
		ResourceVersion: r.ResourceVersion,
	}
}

// permanent reports whether the API server would refuse err's write
// again. A NotFound here is a create's: the namespace is gone.
func permanent(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) ||
		apierrors.IsUnauthorized(err) || apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err)
}

// isTimeout reports whether err is a write that ran out of its time.
func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}
