// Package lease elects which of a controller's replicas reconciles, with
// client-go's leader election on a coordination.k8s.io Lease. It
// implements ports.Elector.
//
// On top of client-go's LeaderElector, it guarantees that nothing the
// Lease guards runs once another replica may hold it: when leadership
// ends, the context handed to the leader's function is cancelled, and the
// Lease is released only after that function has returned. The leader
// also fences itself: a RetryPeriod before a standby could first take the
// Lease, counted from the start of its last renewal the server accepted
// (settings.FenceAfter), with none accepted since, it cancels that context
// on its own clock, whatever client-go's requests are doing, so a leader
// cut off by an API server that hangs stops before a standby can take the
// Lease. A slow API server that accepts every renewal doesn't fence it:
// with renewals answered in d, it leads on while 2d + RetryPeriod is
// under FenceAfter.
package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/loam-dev/loam/domain/settings"
	"github.com/loam-dev/loam/ports"
)

// Config is the Lease an Elector campaigns for, and how.
type Config struct {
	// Client reaches the API server's Leases.
	Client coordinationv1client.LeasesGetter
	// Name and Namespace name the Lease.
	Name, Namespace string
	// Identity is this candidate's name in the Lease.
	Identity string
	// LeaseDuration is how long a candidate waits, from the last renewal
	// it saw, before it takes the Lease.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew the
	// Lease before it gives leadership up.
	RenewDeadline time.Duration
	// RetryPeriod is how long a candidate waits between tries.
	RetryPeriod time.Duration
	// Labels, when not nil, are set on the Lease each time the candidate
	// creates, takes or renews it.
	Labels map[string]string
	// Expired, when not nil, says whether the Lease as a Get reads it has
	// already been seen unrenewed for its whole duration, by an observer
	// that watched it longer than this Elector: client-go's elector then
	// takes it at once, instead of watching it for another LeaseDuration
	// from its first Get. The take is still an update conditional on the
	// Lease's resourceVersion, so a holder that renewed meanwhile keeps it.
	Expired func(ports.LeaseRecord) bool
	// MeterProvider, when not nil, records leader_election_master_status
	// {name}, as controller-runtime exports client-go's: 1 while this
	// candidate leads, from when it takes the Lease until its term ends,
	// and 0 otherwise, from the start of Run.
	MeterProvider metric.MeterProvider
}

// LeaderStatusName is controller-runtime's gauge of a candidate's
// leadership.
const LeaderStatusName = "leader_election_master_status"

// Elector campaigns for one Lease. It implements ports.Elector.
type Elector struct {
	c      Config
	status metric.Int64Gauge
	name   metric.RecordOption
}

var _ ports.Elector = (*Elector)(nil)

// New returns an Elector of c. It fails, naming every mistake, when c has
// no Client, Name, Namespace or Identity, when client-go's leader election
// refuses its durations, or when they leave a leader no time to lead before
// its fence (settings.FenceAfter is not positive).
func New(c Config) (*Elector, error) {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("lease: Config.Client is nil"))
	}
	for _, f := range []struct{ name, value string }{
		{"Name", c.Name}, {"Namespace", c.Namespace}, {"Identity", c.Identity},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("lease: Config.%s is empty", f.name))
		}
	}
	// client-go checks the durations; a throwaway elector asks it.
	noop := leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}}
	if _, err := leaderelection.NewLeaderElector(config(c, &resourcelock.LeaseLock{LockConfig: resourcelock.ResourceLockConfig{Identity: "check"}}, noop)); err != nil {
		errs = append(errs, fmt.Errorf("lease: %w", err))
	}
	if after := settings.FenceAfter(c.LeaseDuration, c.RetryPeriod); after <= 0 {
		errs = append(errs, fmt.Errorf("lease: a LeaseDuration of %v and a RetryPeriod of %v leave a leader no time to lead: a standby may take the Lease %v after a renewal, a RetryPeriod before which the leader fences itself",
			c.LeaseDuration, c.RetryPeriod, after+c.RetryPeriod))
	}
	e := &Elector{c: c}
	if c.MeterProvider != nil {
		var err error
		if e.status, err = newLeaderStatus(c.MeterProvider); err != nil {
			errs = append(errs, err)
		}
		e.name = metric.WithAttributeSet(attribute.NewSet(attribute.String("name", c.Name)))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return e, nil
}

// newLeaderStatus returns leader_election_master_status on mp.
func newLeaderStatus(mp metric.MeterProvider) (metric.Int64Gauge, error) {
	g, err := mp.Meter(ports.ScopeName).Int64Gauge(LeaderStatusName,
		metric.WithDescription("Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease."))
	if err != nil {
		return nil, fmt.Errorf("lease: instrument %s: %w", LeaderStatusName, err)
	}
	return g, nil
}

// leading records whether this candidate leads, when the Config has a
// MeterProvider.
func (e *Elector) leading(ctx context.Context, yes bool) {
	if e.status == nil {
		return
	}
	var v int64
	if yes {
		v = 1
	}
	e.status.Record(context.WithoutCancel(ctx), v, e.name)
}

func config(c Config, lock resourcelock.Interface, callbacks leaderelection.LeaderCallbacks) leaderelection.LeaderElectionConfig {
	return leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            c.Name,
		LeaseDuration:   c.LeaseDuration,
		RenewDeadline:   c.RenewDeadline,
		RetryPeriod:     c.RetryPeriod,
		Callbacks:       callbacks,
		ReleaseOnCancel: true,
	}
}

// Run campaigns for the Lease until it holds it or ctx is done. Once it
// holds the Lease, it calls onStarted in a goroutine of its own with a
// context that is cancelled when leadership ends: when settings.FenceAfter
// has passed since the start of the last renewal the API server accepted
// (the fence, which needs no answer from the server, so a hanging one can't
// delay it), when client-go gives up renewing, when another candidate takes
// the Lease, or when ctx is done. The fence also stops the campaign, as a
// lost Lease does. Before it releases the Lease, and before it returns, it
// waits for
// onStarted to return, so nothing onStarted runs outlives the leadership.
// It then releases the Lease, if it still holds it, calls onStopped, and
// returns. Its caller tells a lost Lease from a done ctx by ctx.Err().
//
// ctx carries the logger client-go's leader election logs through
// (klog.NewContext).
func (e *Elector) Run(ctx context.Context, onStarted func(context.Context), onStopped func()) {
	e.leading(ctx, false)
	leadCtx, cancelLead := context.WithCancel(ctx)
	defer cancelLead()
	// electCtx is client-go's: the fence ends it with leadCtx, so a fenced
	// leader stops renewing too, rather than holding a Lease it no longer
	// acts on. ctx itself lives on: the caller sees a lost Lease.
	electCtx, cancelElect := context.WithCancel(ctx)
	defer cancelElect()
	t := &term{cancel: cancelLead, done: make(chan struct{})}
	f := &fence{after: settings.FenceAfter(e.c.LeaseDuration, e.c.RetryPeriod), lapse: func() { cancelLead(); cancelElect() }}
	defer f.stop()
	lock := &guardedLock{
		Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: e.c.Name, Namespace: e.c.Namespace},
			Client:     e.c.Client,
			LockConfig: resourcelock.ResourceLockConfig{Identity: e.c.Identity},
			Labels:     e.c.Labels,
		},
		beforeRelease: t.end,
		renewed:       f.renewed,
		expired:       e.c.Expired,
		name:          e.c.Name,
	}
	le, err := leaderelection.NewLeaderElector(config(e.c, lock, leaderelection.LeaderCallbacks{
		// client-go's own context for the leader ends only once its Run
		// returns, after the release: leadCtx ends as leadership does.
		OnStartedLeading: func(context.Context) {
			if !t.begin() {
				return
			}
			defer t.finish()
			e.leading(ctx, true)
			defer e.leading(ctx, false)
			onStarted(leadCtx)
		},
		OnStoppedLeading: func() {},
	}))
	if err == nil {
		le.Run(electCtx)
	}
	// New checked the config, so err is always nil; either way the term
	// is over.
	t.end()
	onStopped()
}

// term is one leadership's run of onStarted.
type term struct {
	cancel context.CancelFunc
	// done is closed when onStarted has returned.
	done chan struct{}

	mu      sync.Mutex
	began   bool
	stopped bool
}

// begin reports whether onStarted may run: not once the term has ended,
// as when the Lease is released before client-go's goroutine starts.
func (t *term) begin() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	t.began = true
	return true
}

// finish records that onStarted has returned.
func (t *term) finish() { close(t.done) }

// end ends the term: it cancels onStarted's context and waits for it to
// return, if it began. It may be called more than once.
func (t *term) end() {
	t.mu.Lock()
	t.stopped = true
	began := t.began
	t.mu.Unlock()
	t.cancel()
	if began {
		<-t.done
	}
}

// fence cancels leadership after the start of the last renewal the API
// server accepted, unless another is accepted first. A standby takes the
// Lease no sooner than settings.Takeover's earliest after it saw that
// renewal written, which is after the renewal's start, in client-go's
// whole seconds: after is a RetryPeriod less (settings.FenceAfter), so the
// leader's passes have seen their context end first. It counts from the
// renewal's start, not RenewDeadline from it: client-go starts a renewal a
// RetryPeriod after the one before returned, so renewals answered in d are
// accepted 2d + RetryPeriod apart, and a slow API server that accepts each
// one in time keeps its leader. client-go's own give-up can't bound this:
// it cancels only after its release's Get, which hangs as long as the API
// server does.
type fence struct {
	after time.Duration
	lapse func()

	mu     sync.Mutex
	timer  *time.Timer
	lapsed bool
}

// renewed records a renewal the server accepted, whose request began at
// start: the fence lapses after, from start, unless renewed again.
func (f *fence) renewed(start time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lapsed {
		return
	}
	left := f.after - time.Since(start)
	if f.timer == nil {
		f.timer = time.AfterFunc(left, f.lapseNow)
		return
	}
	f.timer.Reset(left)
}

func (f *fence) lapseNow() {
	f.mu.Lock()
	f.lapsed = true
	f.mu.Unlock()
	f.lapse()
}

// stop stops the fence's timer; it lapses no more.
func (f *fence) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lapsed = true
	if f.timer != nil {
		f.timer.Stop()
	}
}

// guardedLock is the Lease lock, which ends the term before it releases
// the Lease: client-go releases a Lease by updating it with no holder. It
// tells renewed of every take or renewal the server accepts, with the time
// its request began. With expired, it reads a Lease whose holder was seen
// to let it expire as held by nobody, so client-go takes it.
type guardedLock struct {
	resourcelock.Interface
	beforeRelease func()
	renewed       func(start time.Time)
	expired       func(ports.LeaseRecord) bool
	name          string
}

func (l *guardedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := l.Interface.Create(ctx, r)
	if err == nil && r.HolderIdentity == l.Identity() {
		l.renewed(start)
	}
	return err
}

func (l *guardedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, raw, err := l.Interface.Get(ctx)
	if err != nil || l.expired == nil || r.HolderIdentity == "" || r.HolderIdentity == l.Identity() {
		return r, raw, err
	}
	if l.expired(ports.LeaseRecord{Name: l.name, Holder: r.HolderIdentity, Renewed: r.RenewTime.Time}) {
		free := *r
		free.HolderIdentity = ""
		return &free, raw, nil
	}
	return r, raw, nil
}

func (l *guardedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if r.HolderIdentity == "" {
		l.beforeRelease()
		return l.Interface.Update(ctx, r)
	}
	start := time.Now()
	err := l.Interface.Update(ctx, r)
	if err == nil && r.HolderIdentity == l.Identity() {
		l.renewed(start)
	}
	return err
}
