package shard

import (
	"slices"
	"time"

	"github.com/loam-dev/loam/ports"
)

// Tracker tells live Leases from expired ones as client-go's leader
// election does: by when this replica saw each Lease's holder or renewal
// change, on its own clock, never by the renewTime another replica's
// clock wrote, so clocks that disagree don't matter. A Lease is live for
// its Duration after the replica saw it change. Its zero value tracks
// nothing yet; it is not safe for concurrent use.
type Tracker struct {
	seen map[string]sighting
}

// sighting is a Lease's holder and renewal as last seen, and when.
type sighting struct {
	holder  string
	renewed time.Time
	at      time.Time
	// renewals counts the changes seen after the first sighting: a Lease
	// that changes while it is watched is held by a running replica.
	renewals int
}

// Observation is what Observe makes of the Leases: the live replicas,
// the shards they hold, and the live Leases of replicas that run with
// another number of shards.
type Observation struct {
	// Members are the holders of live membership Leases that run with
	// the Observer's count of shards, sorted.
	Members []string
	// Holders maps each shard whose Lease is live to its holder.
	Holders map[int]string
	// Mismatched are the live Leases whose holders run with another
	// number of shards.
	Mismatched []Mismatch
	// Expired are the Leases with a holder that this replica saw
	// unrenewed for their whole duration: a candidate may take them.
	Expired []ports.LeaseRecord
	// Next is when the earliest live Lease expires unless it is renewed:
	// the moment to observe again. It is zero when no Lease is live.
	Next time.Time
}

// IsExpired reports whether o counts r, a Lease as a candidate read it,
// among the Expired: the same Lease, holder and renewal.
func (o Observation) IsExpired(r ports.LeaseRecord) bool {
	for _, e := range o.Expired {
		if e.Name == r.Name && e.Holder == r.Holder && e.Renewed.Equal(r.Renewed) {
			return true
		}
	}
	return false
}

// Mismatch is a live Lease held by a replica that runs with another
// number of shards.
type Mismatch struct {
	ports.LeaseRecord
	// Renewed reports whether the Lease changed while it was watched, so
	// its holder runs: one seen only once may be a dead replica's, which
	// expires.
	Renewed bool
}

// Observe returns what records, every Lease of the controller, say at
// now, for a replica that runs with count shards.
func (t *Tracker) Observe(records []ports.LeaseRecord, count int, now time.Time) Observation {
	if t.seen == nil {
		t.seen = map[string]sighting{}
	}
	o := Observation{Holders: map[int]string{}}
	present := make(map[string]bool, len(records))
	for _, r := range records {
		present[r.Name] = true
		s, ok := t.seen[r.Name]
		switch {
		case !ok:
			s = sighting{holder: r.Holder, renewed: r.Renewed, at: now}
		case s.holder != r.Holder || !s.renewed.Equal(r.Renewed):
			s = sighting{holder: r.Holder, renewed: r.Renewed, at: now, renewals: s.renewals + 1}
		}
		t.seen[r.Name] = s
		expires := s.at.Add(r.Duration)
		if r.Holder == "" {
			continue
		}
		if !now.Before(expires) {
			o.Expired = append(o.Expired, r)
			continue
		}
		if o.Next.IsZero() || expires.Before(o.Next) {
			o.Next = expires
		}
		if r.Count != count {
			o.Mismatched = append(o.Mismatched, Mismatch{LeaseRecord: r, Renewed: s.renewals > 0})
			continue
		}
		if r.Shard < 0 {
			o.Members = append(o.Members, r.Holder)
		} else if r.Shard < count {
			o.Holders[r.Shard] = r.Holder
		}
	}
	for name := range t.seen {
		if !present[name] {
			delete(t.seen, name)
		}
	}
	slices.Sort(o.Members)
	o.Members = slices.Compact(o.Members)
	return o
}
