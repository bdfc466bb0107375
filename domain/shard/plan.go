package shard

import (
	"slices"
)

// View is what a replica sees of its controller's replicas and shards
// at one moment: the input of Plan.
type View struct {
	// Count is the controller's number of shards.
	Count int
	// Self is this replica's identity.
	Self string
	// Members are the identities of the live replicas, Self's among
	// them; Plan counts Self whether or not it is listed.
	Members []string
	// Held are the shards Self holds.
	Held []int
	// Campaigns are the shards Self campaigns for and doesn't hold yet.
	Campaigns []int
	// Holders maps each shard another live replica holds to its
	// identity. A shard neither in Held nor in Holders is free.
	Holders map[int]string
}

// Decision is what a replica does about its shards: campaign for those
// in Take, stop campaigning for those in Abandon, and give up those in
// Release, once their reconciles are done.
type Decision struct {
	Take, Abandon, Release []int
}

// IsZero reports whether d changes nothing.
func (d Decision) IsZero() bool {
	return len(d.Take) == 0 && len(d.Abandon) == 0 && len(d.Release) == 0
}

// members returns v's live replicas, sorted, with Self among them.
func (v View) members() []string {
	m := slices.Clone(v.Members)
	if !slices.Contains(m, v.Self) {
		m = append(m, v.Self)
	}
	slices.Sort(m)
	return slices.Compact(m)
}

// Quota returns how many of count shards the replica self holds when
// members are live: count split evenly, the replicas first in identity
// order taking one more when count doesn't divide. Every replica that
// sees the same members computes the same quotas, which add up to count,
// so none is left out and the largest share is ⌈count / members⌉.
func Quota(members []string, self string, count int) int {
	v := View{Count: count, Self: self, Members: members}
	return v.quota(v.members())
}

func (v View) quota(members []string) int {
	rank := slices.Index(members, v.Self)
	n := len(members)
	q := v.Count / n
	if rank < v.Count%n {
		q++
	}
	return q
}

// Plan returns what the replica of v does next so that, once every
// replica sees the same members, each holds exactly its Quota and every
// shard is held. It gives up shards above its quota, stops campaigning
// for shards another replica took, and campaigns for free shards up to
// its quota. Among shards it may choose, it prefers its own: shard i is
// the replica's whose rank is i modulo the members, so replicas that
// start at once campaign for different shards, and a replica gives up
// others' first. Plan is a pure function; the Leases see to it that a
// shard has one holder whatever the replicas decide.
func Plan(v View) Decision {
	members := v.members()
	rank := slices.Index(members, v.Self)
	n := len(members)
	quota := v.quota(members)
	// own orders shards by how much the replica prefers them: its own
	// first, then the others from its rank on, so two replicas' second
	// choices differ too.
	own := func(i int) int {
		if i%n == rank {
			return i - v.Count
		}
		return (i - rank + v.Count) % v.Count
	}
	byPreference := func(shards []int) []int {
		s := slices.Clone(shards)
		slices.SortFunc(s, func(a, b int) int { return own(a) - own(b) })
		return s
	}

	var d Decision
	held := byPreference(v.Held)
	if len(held) > quota {
		d.Release = held[quota:]
		slices.Sort(d.Release)
		held = held[:quota]
	}
	var campaigns []int
	for _, s := range byPreference(v.Campaigns) {
		if _, taken := v.Holders[s]; taken || len(held)+len(campaigns) >= quota {
			d.Abandon = append(d.Abandon, s)
			continue
		}
		campaigns = append(campaigns, s)
	}
	slices.Sort(d.Abandon)
	need := quota - len(held) - len(campaigns)
	if need <= 0 {
		return d
	}
	var free []int
	for s := range v.Count {
		_, taken := v.Holders[s]
		if !taken && !slices.Contains(v.Held, s) && !slices.Contains(v.Campaigns, s) {
			free = append(free, s)
		}
	}
	free = byPreference(free)
	d.Take = free[:min(need, len(free))]
	slices.Sort(d.Take)
	return d
}
