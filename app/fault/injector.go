package fault

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/log"

	"github.com/loam-dev/loam/app/fault/fit"
)

// maxCountedScenarios bounds how many scenarios' Counts an Injector keeps.
const maxCountedScenarios = 1024

// Settings configures an Injector.
type Settings struct {
	// Decoder reads the scenario from a context's baggage, and names the
	// members that carry it. It is required.
	Decoder fit.Decoder

	// Rand returns a number in [0, 1), for rules with a Percent. It is
	// called with the Injector's lock held, so it need not be safe for
	// concurrent use. Nil means a source the Injector owns, seeded afresh
	// for each Injector; never a process-wide one.
	Rand func() float64

	// Now returns the time, which a scenario's end is compared with. Nil
	// means the real clock.
	Now func() time.Time

	// RequireEnd refuses every scenario without an end (fit.Scenario.Ends),
	// as a production cluster that allows only time-boxed experiments
	// does: such a scenario is read as one that doesn't decode, an error
	// wrapping ErrNoEnd, so it fails nothing.
	RequireEnd bool

	// Logger, when not nil, receives an INFO record of each abort and
	// delay a point meets, in the context of its call, so that an
	// unsampled trace still leaves one: app.Run sets the App's own.
	Logger log.Logger

	// Switch, when not "", is the path of the kill switch's file on the
	// App's Host: app.Run reads it before Init and every SwitchPeriod
	// after, and failure injection is on only while the file holds "on"
	// (SetOn). Anything else, or a file that can't be read, is off, with a
	// record saying why. "" leaves failure injection on.
	Switch string
}

// SwitchPeriod is how often app.Run reads the kill switch's file: a switch
// turned on or off takes effect within this long, well inside 5 seconds,
// at the cost of reading a small file once a second.
const SwitchPeriod = time.Second

// ErrNoEnd is what a scenario without an end decodes to when the Settings
// have RequireEnd.
var ErrNoEnd = errors.New("the scenario has no end, and fault.Settings.RequireEnd refuses every scenario without one")

// Injector evaluates injection points against the scenario a context
// carries, and carries out the faults it finds. It is safe for concurrent
// use. A nil *Injector is inert, as Inert's is.
type Injector struct {
	decoder    fit.Decoder
	members    []string
	now        func() time.Time
	requireEnd bool
	logger     log.Logger
	switchFile string

	// off is the kill switch: while it is set, every point evaluates as
	// if no scenario were present.
	off atomic.Bool
	// lifted is closed when the switch turns off, and replaced by an open
	// one when it turns on again: a delay in progress waits on the one of
	// its start, so it ends as the switch turns off.
	lifted atomic.Pointer[chan struct{}]
	// watchers are told of each change of off; see OnChange.
	watchers watchers

	mu     sync.Mutex // guards rand and counts
	rand   func() float64
	counts *countCache
}

// New returns an Injector configured by settings. It reports every mistake
// in settings together: a nil Decoder, or one that owns no member, or a
// member name that isn't a W3C Baggage key.
func New(settings Settings) (*Injector, error) {
	if settings.Decoder == nil {
		return nil, errors.New("fault: Settings.Decoder is nil: name the codec that reads scenarios, such as jsonscenario's")
	}
	members := append([]string(nil), settings.Decoder.Members()...)
	var errs []error
	if len(members) == 0 {
		errs = append(errs, errors.New("fault: Settings.Decoder owns no baggage member"))
	}
	seen := make(map[string]bool, len(members))
	for _, name := range members {
		if !validKey(name) {
			errs = append(errs, fmt.Errorf("fault: Settings.Decoder's member %q is not a W3C Baggage key", name))
		}
		if seen[name] {
			errs = append(errs, fmt.Errorf("fault: Settings.Decoder names member %q twice", name))
		}
		seen[name] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r := settings.Rand
	if r == nil {
		var seed [32]byte
		_, _ = crand.Read(seed[:]) // never fails: crypto/rand.Read crashes the program instead
		r = rand.New(rand.NewChaCha8(seed)).Float64
	}
	now := settings.Now
	if now == nil {
		now = time.Now
	}
	i := &Injector{
		decoder:    settings.Decoder,
		members:    members,
		now:        now,
		requireEnd: settings.RequireEnd,
		switchFile: settings.Switch,
		logger:     settings.Logger,
		rand:       r,
		counts:     newCountCache(maxCountedScenarios),
	}
	lifted := make(chan struct{})
	i.lifted.Store(&lifted)
	return i, nil
}

// Inert returns an Injector that evaluates every point to the zero Fault,
// decodes nothing, strips nothing and records nothing: an App's injector
// when failure injection is off.
func Inert() *Injector {
	return &Injector{}
}

// Enabled reports whether i injects failures: whether New built it.
func (i *Injector) Enabled() bool {
	return i != nil && i.decoder != nil
}

// SetOn turns failure injection on or off while the App runs: off, every
// point evaluates to the zero Fault as if no scenario were present, and
// records nothing, at the cost of a context without one, and a delay in
// progress ends at once, its call going on unfaulted. Scenarios are
// still stripped where they must not go. An Injector New builds starts
// on; an inert one ignores it. A change is told to every OnChange
// function, in the caller's goroutine, before SetOn returns.
func (i *Injector) SetOn(on bool) {
	if !i.Enabled() {
		return
	}
	// Serialized, so the functions hear the changes in the order they
	// were made.
	i.watchers.mu.Lock()
	defer i.watchers.mu.Unlock()
	if i.off.Load() == !on {
		return
	}
	// Each Inject reads off, then lifted: turning on stores the open
	// channel before clearing off, so an Inject that reads it on never
	// loads the closed channel of the spell that ended; turning off sets
	// off before closing the channel, which an Inject that read it on
	// may hold, and so is lifted at once.
	if on {
		lifted := make(chan struct{})
		i.lifted.Store(&lifted)
		i.off.Store(false)
	} else {
		i.off.Store(true)
		close(*i.lifted.Load())
	}
	for _, f := range i.watchers.fs {
		f(on)
	}
}

// OnChange has f called with the new state each time SetOn turns i on or
// off, until the returned stop is called: a Kubernetes controller reconciles
// at once the objects whose reconciles failed under a scenario when
// failure injection is turned off. f runs in SetOn's caller and must not
// block, nor call SetOn or OnChange. An inert i never calls it.
func (i *Injector) OnChange(f func(on bool)) (stop func()) {
	if !i.Enabled() {
		return func() {}
	}
	i.watchers.mu.Lock()
	defer i.watchers.mu.Unlock()
	i.watchers.next++
	id := i.watchers.next
	if i.watchers.fs == nil {
		i.watchers.fs = map[uint64]func(bool){}
	}
	i.watchers.fs[id] = f
	return func() {
		i.watchers.mu.Lock()
		defer i.watchers.mu.Unlock()
		delete(i.watchers.fs, id)
	}
}

// watchers are the functions OnChange registered, by a number of their
// own.
type watchers struct {
	mu   sync.Mutex
	next uint64
	fs   map[uint64]func(on bool)
}

// SwitchFile returns the path of the kill switch's file its Settings
// named, which app.Run reads, or "" when they named none or i is inert.
func (i *Injector) SwitchFile() string {
	if i == nil {
		return ""
	}
	return i.switchFile
}

// On reports whether i injects failures now: whether it is Enabled and
// its switch is on.
func (i *Injector) On() bool { return i.Enabled() && !i.off.Load() }

// Decoder returns the Decoder i reads scenarios with, or nil when i is
// inert.
func (i *Injector) Decoder() fit.Decoder {
	if !i.Enabled() {
		return nil
	}
	return i.decoder
}

// Carries reports whether ctx's baggage holds any of the Decoder's members
// while failure injection is on: whether evaluating a point in ctx
// consults a scenario, and whether a child applied in ctx gets it. It is
// false for an inert Injector, and while the switch is off (SetOn), when
// no scenario is read or carried on; Strip still strips one.
func (i *Injector) Carries(ctx context.Context) bool {
	return i.On() && i.holds(baggage.FromContext(ctx))
}

// holds reports whether b has any of i's members.
func (i *Injector) holds(b baggage.Baggage) bool {
	if b.Len() == 0 {
		return false
	}
	for _, name := range i.members {
		if b.Member(name).Key() != "" {
			return true
		}
	}
	return false
}

// validKey reports whether name is a W3C Baggage key: an RFC 7230 token.
func validKey(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '!', c == '#', c == '$', c == '%', c == '&', c == '\'', c == '*',
			c == '+', c == '-', c == '.', c == '^', c == '_', c == '`', c == '|', c == '~':
		default:
			return false
		}
	}
	return true
}
