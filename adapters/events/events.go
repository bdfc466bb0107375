// Package events is loam's writer of Kubernetes Events, after client-go's
// tools/events, which can't be used as it is: it reads os.Hostname for the
// reporting instance, starts retry goroutines nobody owns, and writes a
// series' count only every 30 minutes.
//
// A Writer sends events.k8s.io/v1 Events through the client it is given,
// on the Client's transport. The first occurrence of an event creates an
// Event; its repeats within Window count in the same Event's series,
// patched every FlushInterval and once more at Close. A series is keyed,
// as client-go's tools/events keys it, by the regarding and related
// objects (never their resourceVersion, which every status write
// changes), the type, reason and action — never the note, so errors whose
// text varies (request IDs, durations) combine in one series, which keeps
// the latest note. Each object may have DefaultBurst Events created, then
// one every five minutes, as client-go's recorder allows. Every write has
// a deadline, a failed one is retried at the next flush, and what is
// dropped is counted by reason in loam.kube.controller.events.dropped.
// Record never blocks.
package events

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/metric"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"

	"github.com/loam-dev/loam/domain/eventlimit"
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
	// DefaultWriteTimeout bounds each create and patch, so an API server
	// that never answers holds the writer no longer.
	DefaultWriteTimeout = 5 * time.Second
	// DefaultMaxAttempts is how many times a series' write is tried before
	// its unwritten occurrences are dropped, client-go's maxTriesPerEvent.
	DefaultMaxAttempts = 12
)

// Regarding is an object an event is about, or related to.
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
	// Related is a second object the event concerns, such as the child a
	// controller failed to create; nil for none.
	Related *Regarding
	// Type is "Normal" or "Warning".
	Type string
	// Reason and Action are CamelCase, at most 128 characters.
	Reason, Action string
	// Note is cut to NoteLimit bytes, at a character's boundary.
	Note string
}

// key is what tells series apart: an Event without its note and without
// its objects' resourceVersions, as client-go's tools/events keys them.
type key struct {
	regarding, related Regarding
	hasRelated         bool
	typ, reason        string
	action             string
}

func seriesKey(e Event) key {
	k := key{regarding: e.Regarding, typ: e.Type, reason: e.Reason, action: e.Action}
	k.regarding.ResourceVersion = ""
	if e.Related != nil {
		k.related, k.hasRelated = *e.Related, true
		k.related.ResourceVersion = ""
	}
	return k
}

// bucketKey is what the rate limit counts Events by: the regarding object
// and the type, as client-go's spam filter keys them.
type bucketKey struct {
	regarding Regarding
	typ       string
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
	// Meter makes loam.kube.controller.events.dropped; nil records nothing.
	Meter metric.Meter
	// Now is the Writer's clock; nil is time.Now.
	Now func() time.Time
	// Window, FlushInterval, WriteTimeout, Buffer and MaxAttempts default,
	// when zero, to the Default constants.
	Window, FlushInterval, WriteTimeout time.Duration
	Buffer, MaxAttempts                 int
	// Burst and Every are each object's token bucket of Events created:
	// Burst at once, then one every Every; zero is eventlimit's defaults.
	Burst int
	Every time.Duration
}

// Writer records Events. Start runs its goroutine; Close stops it.
type Writer struct {
	c       Config
	in      chan Event
	dropped *droppedCounter
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
	mu      sync.Mutex // guards series, buckets and the writes
	series  map[key]*series
	buckets *eventlimit.Buckets[bucketKey]
}

// New returns a Writer as c says. It fails, naming every mistake, when c
// has no Client, Controller or Instance, when a duration or a count is
// negative, or when the meter refuses the dropped-events counter.
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
	for name, d := range map[string]time.Duration{"Window": c.Window, "FlushInterval": c.FlushInterval, "WriteTimeout": c.WriteTimeout, "Every": c.Every} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("events: Config.%s is %s, below 0", name, d))
		}
	}
	for name, n := range map[string]int{"Buffer": c.Buffer, "MaxAttempts": c.MaxAttempts, "Burst": c.Burst} {
		if n < 0 {
			errs = append(errs, fmt.Errorf("events: Config.%s is %d, below 0", name, n))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c = withDefaults(c)
	buckets, err := eventlimit.New[bucketKey](c.Burst, c.Every)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	dropped, err := newDroppedCounter(c.Meter, c.Controller)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Writer{
		c: c, in: make(chan Event, c.Buffer), stop: make(chan struct{}), done: make(chan struct{}),
		ctx: ctx, cancel: cancel, dropped: dropped,
		series: map[key]*series{}, buckets: buckets,
	}, nil
}

func withDefaults(c Config) Config {
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.Buffer == 0 {
		c.Buffer = DefaultBuffer
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Burst == 0 {
		c.Burst = eventlimit.DefaultBurst
	}
	if c.Every == 0 {
		c.Every = eventlimit.DefaultEvery
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Record queues e without blocking; a full buffer, or a closed Writer,
// drops it and counts it in Dropped.
func (w *Writer) Record(e Event) {
	e.Note = CutNote(e.Note)
	select {
	case <-w.stop:
		w.dropped.add(context.Background(), DropClosed, 1)
		return
	default:
	}
	select {
	case w.in <- e:
	default:
		w.dropped.add(context.Background(), DropQueueFull, 1)
	}
}

// Dropped returns how many events were dropped, for every reason.
func (w *Writer) Dropped() int64 { return w.dropped.total.Load() }

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
// What it could not write is counted as dropped.
func (w *Writer) Close(ctx context.Context) error {
	w.once.Do(func() { close(w.stop) })
	if w.started.Load() {
		select {
		case <-w.done:
		case <-ctx.Done():
			w.cancel()
			<-w.done
			w.abandon()
			return fmt.Errorf("events: closing: %w", ctx.Err())
		}
	}
	w.drain(ctx)
	w.flush(ctx)
	w.abandon()
	return ctx.Err()
}

func (w *Writer) run() {
	defer close(w.done)
	defer w.cancel()
	t := time.NewTicker(w.c.FlushInterval)
	defer t.Stop()
	ctx := w.ctx
	for {
		// Once Close has stopped it, the goroutine takes no more work.
		// The select below picks at random among its ready cases, so a
		// tick or an event ready beside the stop would be taken half the
		// time, each holding Close for another write's deadline when the
		// API server hangs: four in a row outlived an App's 20 s grace
		// period in CI.
		select {
		case <-w.stop:
			return
		default:
		}
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
