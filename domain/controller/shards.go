package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/domain/shard"
	"github.com/loam-dev/loam/ports"
)

// ErrShardCount is what Serve returns when replicas of one controller run
// with different numbers of shards: their shards' ranges overlap, so two
// of them could reconcile one object at once. Every replica must stop
// before Settings.Shards changes.
var ErrShardCount = errors.New("the controller's replicas run with different numbers of shards (Settings.Shards)")

// ErrSharedIdentity is what Serve returns when a sharded replica can't
// announce itself because another running process holds its membership
// Lease: two replicas were given one identity.
var ErrSharedIdentity = errors.New("another running replica has this replica's identity (Settings.LeaderElection.Identity)")

// sharded is one Serve's run of a sharded controller: its membership, its
// shards' campaigns, and the gate that admits only their objects' passes.
type sharded struct {
	c      *Controller
	leases ports.ShardLeases
	gate   *shardGate
	loop   *reconcile.Loop
	w      *crew
	// background outlives the stop, for the Leases to be released.
	background context.Context

	// events carries what the campaigns' goroutines tell the run; quit
	// is closed once the run no longer reads it.
	events chan shardEvent
	quit   chan struct{}
	// campaigns are the shards the replica campaigns for or holds.
	campaigns map[int]*campaign
	tracker   shard.Tracker
	// seen is the latest Observation, which the campaigns' Electors read
	// from their own goroutines.
	seenMu sync.Mutex
	seen   shard.Observation
	// ended counts the campaigns' goroutines still running.
	ended sync.WaitGroup
}

// campaign is one shard's Elector run. It stays among the run's
// campaigns until its goroutine has returned, and the Lease is released,
// so a shard is never campaigned for twice at once: a shard taken back
// while it drains is campaigned for again once the drain is over.
type campaign struct {
	// handOff asks the campaign to end: a held shard hands its Lease off
	// (handoff.go) before the Elector releases it.
	handOff context.CancelFunc
	// held is set once the run is told the shard was acquired; ending
	// once handOff was called.
	held, ending bool
}

// shardEvent is a campaign's news: its shard acquired or lost, or, with
// ended, its goroutine about to return.
type shardEvent struct {
	shard  int
	change ports.ShardChange
	ended  bool
}

// shard runs w's workers on the shards this replica holds, until stop
// ends or a Lease is lost. It first announces the replica through its
// membership Lease, and is ready once it has; it then campaigns for free
// shards up to its quota and gives up those above it, as shard.Plan says,
// whenever the Leases change or one may have expired.
func (c *Controller) shard(stop, background context.Context, w *crew, gate *shardGate, loop *reconcile.Loop) error {
	r := &sharded{
		c: c, leases: c.c.ShardLeases, gate: gate, loop: loop, w: w, background: background,
		events: make(chan shardEvent), quit: make(chan struct{}), campaigns: map[int]*campaign{},
	}
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	r.leases.Start(background, poke)
	defer r.leases.Stop()
	if !r.leases.WaitForSync(stop) {
		return nil
	}

	member, stopMember := context.WithCancel(background)
	announced, memberDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(memberDone)
		r.leases.Member().Run(member, func(leading context.Context) {
			close(announced)
			<-leading.Done()
		}, func() {})
	}()
	// The membership goes last: until the shards are released, the others
	// must count this replica.
	defer func() {
		stopMember()
		<-memberDone
	}()
	if err := r.announce(stop, announced, memberDone); err != nil || stop.Err() != nil {
		return err
	}
	c.c.Ready.MarkHealthy()
	if !w.start(c.c.Workers) {
		return nil
	}

	starting := true
	stopTimer := func() bool { return false }
	defer func() { stopTimer() }()
	ticked := make(chan struct{}, 1)
	for {
		now := c.c.Clock.Now()
		obs := r.tracker.Observe(r.leases.Records(), c.c.Shards, now)
		r.seenMu.Lock()
		r.seen = obs
		r.seenMu.Unlock()
		if starting {
			ok, err := r.started(obs)
			if err != nil {
				r.end(true)
				return err
			}
			starting = !ok
		}
		if !starting {
			r.act(shard.Plan(r.view(obs)))
		}
		stopTimer()
		next := c.c.Lease.RetryPeriod
		if !obs.Next.IsZero() {
			next = min(next, obs.Next.Sub(now))
		}
		stopTimer = c.c.Clock.AfterFunc(max(next, 0), func() {
			select {
			case ticked <- struct{}{}:
			default:
			}
		})
		select {
		case <-stop.Done():
			r.end(false)
			return nil
		case <-memberDone:
			r.end(true)
			return fmt.Errorf("controller %s: its membership Lease: %w", c.c.Name, ErrLostLeadership)
		case e := <-r.events:
			if e.ended {
				delete(r.campaigns, e.shard)
				break
			}
			if e.change == ports.ShardLost {
				r.end(true)
				return fmt.Errorf("controller %s: shard %d of %d: %w", c.c.Name, e.shard, c.c.Shards, ErrLostLeadership)
			}
			if p, ok := r.campaigns[e.shard]; ok {
				p.held = true
			}
		case <-changed:
		case <-ticked:
		}
	}
}

// announce waits until the replica holds its membership Lease, and fails
// with ErrSharedIdentity when another process keeps it for longer than a
// Lease held by a stopped one can last. It returns nil when stop ends
// first.
func (r *sharded) announce(stop context.Context, announced, memberDone <-chan struct{}) error {
	le := r.c.c.Lease
	bound := 2*le.LeaseDuration + le.RetryPeriod
	late := make(chan struct{})
	cancel := r.c.c.Clock.AfterFunc(bound, func() { close(late) })
	defer cancel()
	select {
	case <-announced:
		return nil
	case <-stop.Done():
		return nil
	case <-memberDone:
		return fmt.Errorf("controller %s: its membership Lease: %w", r.c.c.Name, ErrLostLeadership)
	case <-late:
		if held := r.sharer(); held != "" {
			return fmt.Errorf("controller %s: %w: replica %s could not take its membership Lease in %v, which %s, another running process, renews",
				r.c.c.Name, ErrSharedIdentity, r.leases.Holder(), bound, held)
		}
		return fmt.Errorf("controller %s: replica %s could not take its membership Lease in %v: its leader election's records say why, such as RBAC refusing get, create or update on leases",
			r.c.c.Name, r.leases.Holder(), bound)
	}
}

// sharer returns the holder of a membership Lease that has this
// replica's identity but another incarnation, and was renewed while the
// replica watched it, or "" when there is none.
func (r *sharded) sharer() string {
	self := r.leases.Holder()
	identity := self[:max(strings.LastIndex(self, "_"), 0)]
	obs := r.tracker.Observe(r.leases.Records(), r.c.c.Shards, r.c.c.Clock.Now())
	for _, m := range obs.Members {
		if m != self && strings.HasPrefix(m, identity+"_") {
			return m
		}
	}
	for _, m := range obs.Mismatched {
		if m.Shard < 0 && m.Holder != self && strings.HasPrefix(m.Holder, identity+"_") {
			return m.Holder
		}
	}
	return ""
}

// started reports whether the replica may campaign for shards, as obs
// says once it has announced itself: not until the watch shows its own
// announcement, since until then it may not show the replicas that
// announced before it, nor while a Lease of a replica with another number
// of shards may still be live. It fails with ErrShardCount once such a
// Lease is renewed: its replica runs.
func (r *sharded) started(obs shard.Observation) (bool, error) {
	if !slices.Contains(obs.Members, r.leases.Holder()) {
		return false, nil
	}
	if m := refused(obs); m != nil {
		return false, fmt.Errorf("controller %s: %w: Lease %s is held by %s, which runs with %d shards, and this replica runs with %d: stop every replica before changing the number",
			r.c.c.Name, ErrShardCount, m.Name, m.Holder, m.Count, r.c.c.Shards)
	}
	// A Lease seen once and not renewed yet may be a stopped replica's,
	// which expires.
	return len(obs.Mismatched) == 0, nil
}

// refused returns a live Lease that a running replica with another number
// of shards renews, or nil when there is none.
func refused(obs shard.Observation) *shard.Mismatch {
	for i := range obs.Mismatched {
		if obs.Mismatched[i].Renewed {
			return &obs.Mismatched[i]
		}
	}
	return nil
}

// view returns what Plan decides on: obs, with this replica's own shards
// as its campaigns know them.
func (r *sharded) view(obs shard.Observation) shard.View {
	v := shard.View{Count: r.c.c.Shards, Self: r.leases.Holder(), Members: obs.Members, Holders: map[int]string{}}
	for s, holder := range obs.Holders {
		if holder != v.Self {
			v.Holders[s] = holder
		}
	}
	for s, p := range r.campaigns {
		if p.held {
			v.Held = append(v.Held, s)
		} else {
			v.Campaigns = append(v.Campaigns, s)
		}
	}
	return v
}

// act carries d out: a campaign for each shard to take, and the end of
// each campaign to abandon or shard to release. A released shard's
// campaign hands its Lease off (handoff.go): its Lease is renewed until
// its passes are done.
func (r *sharded) act(d shard.Decision) {
	for _, s := range slices.Concat(d.Abandon, d.Release) {
		if p, ok := r.campaigns[s]; ok && !p.ending {
			p.ending = true
			p.handOff()
		}
	}
	for _, s := range d.Take {
		if _, ok := r.campaigns[s]; ok {
			continue
		}
		ctx, handOff := context.WithCancel(r.background)
		r.campaigns[s] = &campaign{handOff: handOff}
		r.ended.Add(1)
		go r.campaign(ctx, s)
	}
}

// campaign runs shard s's Elector until handOff ends or its Lease is
// lost. Holding the Lease, it admits the shard's passes and has the
// Watch hold the shard, which queues its objects. Once handOff ends, it
// hands the Lease off: the shard's passes drain with the Lease renewed,
// the Watch gives the shard up, and only then does the Elector stop
// renewing and release the Lease. A Lease lost cancels the shard's
// passes at once.
func (r *sharded) campaign(handOff context.Context, s int) {
	defer r.ended.Done()
	count := r.c.c.Shards
	electing, stopElecting := context.WithCancel(r.background)
	defer stopElecting()
	// A campaign that holds nothing yet ends at once.
	var mu sync.Mutex
	leading := false
	defer context.AfterFunc(handOff, func() {
		mu.Lock()
		defer mu.Unlock()
		if !leading {
			stopElecting()
		}
	})()
	held, lost := false, false
	r.leases.Shard(s, r.expired).Run(electing, func(lead context.Context) {
		mu.Lock()
		leading = true
		mu.Unlock()
		held = true
		r.gate.hold(s)
		r.c.c.Recorder.ShardChanged(r.background, ports.ShardAcquired, s, count)
		r.send(shardEvent{shard: s, change: ports.ShardAcquired})
		r.c.c.Watch.Hold(s)
		select {
		case <-lead.Done():
		case <-handOff.Done():
		}
		lost = r.handOff(lead, electing, s)
		r.c.c.Watch.Release(s)
		stopElecting()
	}, func() {})
	switch {
	case lost:
		r.c.c.Recorder.ShardChanged(r.background, ports.ShardLost, s, count)
		r.send(shardEvent{shard: s, change: ports.ShardLost})
	case held:
		r.c.c.Recorder.ShardChanged(r.background, ports.ShardReleased, s, count)
	}
	r.send(shardEvent{shard: s, ended: true})
}

// expired reports whether the replica saw the Lease as l reads unrenewed
// for its whole duration.
func (r *sharded) expired(l ports.LeaseRecord) bool {
	r.seenMu.Lock()
	defer r.seenMu.Unlock()
	return r.seen.IsExpired(l)
}

// send tells the run e, unless the run has ended.
func (r *sharded) send(e shardEvent) {
	select {
	case r.events <- e:
	case <-r.quit:
	}
}

// end stops the run: the workers stop taking keys and the passes in
// flight finish, with the shards' Leases renewed, and are cancelled with
// ErrDrainTimeout if they still run DrainTimeout after, and reported a
// RetryPeriod beyond if they still run then (Controller.drain); when lost, they
// are cancelled with ErrLostLeadership at once. Only then are the
// shards' Leases released.
func (r *sharded) end(lost bool) {
	if lost {
		r.w.lose()
		r.w.wait()
	} else {
		r.c.drain(r.w)
	}
	close(r.quit)
	for _, p := range r.campaigns {
		p.handOff()
	}
	r.ended.Wait()
}
