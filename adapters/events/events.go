// Package events is loam's writer of Kubernetes Events, after client-go's
// tools/events, which can't be used as it is: it reads os.Hostname for the
// reporting instance, starts retry goroutines nobody owns, and writes a
// series' count only every 30 minutes.
//
// A Writer sends events.k8s.io/v1 Events through the client it is given,
// on the Client's transport. The first occurrence of an event creates an
// Event; its repeats within Window, keyed by the object's UID, kind,
// namespace and name, the type, reason, action and note — never the
// resourceVersion, which every status write changes — count in the same
// Event's series, patched every FlushInterval and once more at Close.
// Record never blocks: a full buffer drops the event and counts it.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
)

// NoteLimit is the API server's bound on an Event's note, in bytes.
const NoteLimit = 1024

const (
	// DefaultWindow is how long a series lasts after its last occurrence,
	// as in client-go's tools/events.
	DefaultWindow = 6 * time.Minute
	// DefaultFlushInterval is how often a series' count is patched.
	DefaultFlushInterval = time.Second
	// DefaultBuffer is how many events wait for the writer's goroutine.
	DefaultBuffer = 1024
)

// Regarding is the object an event is about.
type Regarding struct {
	APIVersion, Kind, Namespace, Name string
	UID                               types.UID
	// ResourceVersion is the version of the object the event was
	// recorded on. The Event created for a series names the first
	// occurrence's; its repeats, on later versions, count in the same
	// series all the same.
	ResourceVersion string
}

// Event is one occurrence to record.
type Event struct {
	Regarding Regarding
	// Type is "Normal" or "Warning".
	Type string
	// Reason and Action are CamelCase, at most 128 characters.
	Reason, Action string
	// Note is cut to NoteLimit bytes, at a character's boundary.
	Note string
}

// seriesKey is what tells e's series apart: e without the object's
// resourceVersion, which every status write changes.
func seriesKey(e Event) Event {
	e.Regarding.ResourceVersion = ""
	return e
}

// CutNote returns note cut to at most NoteLimit bytes, at the boundary of
// a UTF-8 character, so the cut leaves no partial character that an
// encoder would replace with a longer one.
func CutNote(note string) string {
	if len(note) <= NoteLimit {
		return note
	}
	cut := NoteLimit
	// A continuation byte is 10xxxxxx: back up to the start of its
	// character, which then falls past the limit.
	for cut > 0 && note[cut]&0xC0 == 0x80 {
		cut--
	}
	return note[:cut]
}

// Config is what a Writer writes with.
type Config struct {
	// Client creates and patches Events.
	Client eventsv1client.EventsGetter
	// Controller is the reportingController: the controller's name.
	Controller string
	// Instance is the reportingInstance: the replica's Lease identity.
	Instance string
	// Logger is where write failures are logged.
	Logger logr.Logger
	// Window, FlushInterval and Buffer default, when zero, to the
	// Default constants.
	Window, FlushInterval time.Duration
	Buffer                int
}

// Writer records Events. Start runs its goroutine; Close stops it.
type Writer struct {
	c       Config
	in      chan Event
	dropped atomic.Int64
	logged  int64 // the dropped events logged so far, under mu
	seq     int64 // tells apart the names of Events created at one instant, under mu
	stop    chan struct{}
	done    chan struct{}
	// ctx is the goroutine's requests' context, which cancel ends when a
	// Close's context ends first, so no request outlives Close.
	ctx     context.Context
	cancel  context.CancelFunc
	once    sync.Once
	started atomic.Bool
	mu      sync.Mutex // guards series and the flush
	series  map[Event]*series
}

type series struct {
	namespace, name string
	count           int32
	last            time.Time
	dirty           bool
}

// New returns a Writer as c says. It fails when c has no Client,
// Controller or Instance.
func New(c Config) (*Writer, error) {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("events: Config.Client is nil"))
	}
	if c.Controller == "" {
		errs = append(errs, errors.New("events: Config.Controller is empty"))
	}
	if c.Instance == "" {
		errs = append(errs, errors.New("events: Config.Instance is empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.Buffer <= 0 {
		c.Buffer = DefaultBuffer
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Writer{
		c: c, in: make(chan Event, c.Buffer), stop: make(chan struct{}), done: make(chan struct{}),
		ctx: ctx, cancel: cancel,
		series: map[Event]*series{},
	}, nil
}

// Record queues e without blocking; a full buffer, or a closed Writer,
// drops it and counts it in Dropped.
func (w *Writer) Record(e Event) {
	e.Note = CutNote(e.Note)
	select {
	case <-w.stop:
		w.dropped.Add(1)
		return
	default:
	}
	select {
	case w.in <- e:
	default:
		w.dropped.Add(1)
	}
}

// Dropped returns how many events Record dropped.
func (w *Writer) Dropped() int64 { return w.dropped.Load() }

// Start starts the Writer's goroutine, which Close stops. A second call
// does nothing.
func (w *Writer) Start() {
	if w.started.Swap(true) {
		return
	}
	go w.run()
}

// Close stops the Writer's goroutine, then writes every event queued and
// every series' count, within ctx. It may be called more than once, and
// concurrently: each call returns once everything queued before it is
// written, or returns ctx's error when ctx ends first. When ctx ends while
// the goroutine is still writing, Close cancels that request and waits
// for the goroutine to return, so nothing the Writer started outlives it.
func (w *Writer) Close(ctx context.Context) error {
	w.once.Do(func() { close(w.stop) })
	if w.started.Load() {
		select {
		case <-w.done:
		case <-ctx.Done():
			w.cancel()
			<-w.done
			return fmt.Errorf("events: closing: %w", ctx.Err())
		}
	}
	w.drain(ctx)
	w.flush(ctx)
	return ctx.Err()
}

func (w *Writer) run() {
	defer close(w.done)
	defer w.cancel()
	t := time.NewTicker(w.c.FlushInterval)
	defer t.Stop()
	ctx := w.ctx
	for {
		select {
		case <-w.stop:
			return
		case e := <-w.in:
			w.observe(ctx, e)
		case <-t.C:
			w.flush(ctx)
		}
	}
}

// drain observes every event queued.
func (w *Writer) drain(ctx context.Context) {
	for {
		select {
		case e := <-w.in:
			w.observe(ctx, e)
		default:
			return
		}
	}
}

// observe counts e in its series, creating its Event when it has none
// within the Window.
func (w *Writer) observe(ctx context.Context, e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	k := seriesKey(e)
	if s, ok := w.series[k]; ok && now.Sub(s.last) <= w.c.Window {
		s.count++
		s.last = now
		s.dirty = true
		return
	}
	ns := e.Regarding.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	w.seq++
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      e.Regarding.Name + "." + strconv.FormatInt(now.UnixNano(), 16) + strconv.FormatInt(w.seq, 16),
		},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: w.c.Controller,
		ReportingInstance:   w.c.Instance,
		Action:              e.Action,
		Reason:              e.Reason,
		Type:                e.Type,
		Note:                e.Note,
		Regarding: corev1.ObjectReference{
			APIVersion: e.Regarding.APIVersion, Kind: e.Regarding.Kind,
			Namespace: e.Regarding.Namespace, Name: e.Regarding.Name, UID: e.Regarding.UID,
			ResourceVersion: e.Regarding.ResourceVersion,
		},
	}
	if _, err := w.c.Client.Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		w.c.Logger.Error(err, "creating an event failed", "reason", e.Reason, "object", ns+"/"+e.Regarding.Name)
		delete(w.series, k)
		return
	}
	w.series[k] = &series{namespace: ns, name: ev.Name, count: 1, last: now}
}

// flush patches the count of every series that grew, and forgets those
// past the Window.
func (w *Writer) flush(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if d := w.dropped.Load(); d > w.logged {
		w.c.Logger.Info("events dropped: the buffer was full or the writer closed", "dropped", d-w.logged)
		w.logged = d
	}
	for e, s := range w.series {
		if s.dirty {
			s.dirty = false
			patch, err := json.Marshal(map[string]any{"series": eventsv1.EventSeries{Count: s.count, LastObservedTime: metav1.NewMicroTime(s.last)}})
			if err == nil {
				_, err = w.c.Client.Events(s.namespace).Patch(ctx, s.name, types.MergePatchType, patch, metav1.PatchOptions{})
			}
			if err != nil {
				w.c.Logger.Error(err, "patching an event's series failed", "event", s.namespace+"/"+s.name)
				if apierrors.IsNotFound(err) {
					delete(w.series, e)
				}
				continue
			}
		}
		if now.Sub(s.last) > w.c.Window {
			delete(w.series, e)
		}
	}
}
