package kube

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/domain/names"
)

// parts is what a Controller's Parts add up to, for objects of type T.
type parts[T any] struct {
	commonParts
	finalize func(context.Context, T) error
}

// commonParts is what Parts add up to whatever the objects' type.
type commonParts struct {
	owns      []ownsPart
	finalizer string
	// filters are the FilterUpdates', nil without one.
	filters []UpdateFilter
	// trust is the TrustScenario's, nil without one.
	trust *scenarioTrust
	// related is the Watches', and indexes the Indexes'.
	related []relatedPart
	indexes []indexHandle
	// awaits are the AwaitWebhooks'.
	awaits []*Webhooks
}

// relatedPart is one Watches: its Cache, its Mapping and its filters.
type relatedPart struct {
	cache   cacheHandle
	mapping Mapping
	filters []UpdateFilter
}

// ownsPart is one Owns: its resource, its Selector and its filters.
type ownsPart struct {
	gvr      schema.GroupVersionResource
	selector Selector
	filters  []UpdateFilter
}

// ownedConfigs returns the informers' configs of c's Owns.
func (c commonParts) ownedConfigs() []informer.OwnedConfig {
	out := make([]informer.OwnedConfig, len(c.owns))
	for i, o := range c.owns {
		out[i] = informer.OwnedConfig{
			Resource:      o.gvr,
			LabelSelector: o.selector.Labels, FieldSelector: o.selector.Fields,
			Filters: informerFilters(o.filters),
		}
	}
	return out
}

// partsOf checks ps for a Controller of T's objects and returns what they
// add up to, with one error naming every mistake.
func partsOf[T any](ps []Part) (parts[T], error) {
	var (
		out  parts[T]
		errs []error
		// finalizes, trusts and filters count the Finalizes,
		// TrustScenarios and FilterUpdates, so a second one is named.
		finalizes, trusts, filters int
	)
	for i, p := range ps {
		var mistakes []string
		switch p.kind {
		case partOwns:
			mistakes = out.addOwns(p)
		case partFilterUpdates:
			filters++
			mistakes = out.addFilterUpdates(p, filters)
		case partFinalize:
			finalizes++
			mistakes = addFinalize(&out, p, finalizes)
		case partTrustScenario:
			trusts++
			mistakes = out.addTrust(p, trusts)
		case partWatches:
			mistakes = out.addWatches(p)
		case partIndexes:
			mistakes = addIndexes[T](&out.commonParts, p)
		case partAwaitWebhooks:
			mistakes = out.addAwait(p)
		default:
			mistakes = []string{"the zero Part: make Parts with Owns, Watches, Indexes, FilterUpdates, Finalize, TrustScenario or AwaitWebhooks"}
		}
		for _, m := range mistakes {
			errs = append(errs, fmt.Errorf("kube: Part %d, %v: %s", i, p, m))
		}
	}
	// A ByIndex may come before the Indexes that keeps its index.
	kept := func(x indexHandle) bool {
		return slices.ContainsFunc(ps, func(p Part) bool { return p.kind == partIndexes && p.index == x })
	}
	for i, p := range ps {
		if p.kind != partWatches || p.mapping.index == nil || kept(p.mapping.index) {
			continue
		}
		errs = append(errs, fmt.Errorf("kube: Part %d, %v: the Controller keeps no %v: pass kube.Indexes with it too", i, p, p.mapping.index))
	}
	errs = append(errs, out.bindOwners(ps)...)
	return out, errors.Join(errs...)
}

// bindOwners gives a TrustOwnerScenario among ps, which reads the owners
// the Controller's Watches keep, the mapping of that Watches, which may
// come after it, and returns an error for each that has none.
func (c *commonParts) bindOwners(ps []Part) []error {
	var errs []error
	for i, p := range ps {
		if p.kind != partTrustScenario || p.cache == nil {
			continue
		}
		w := slices.IndexFunc(ps, func(w Part) bool { return w.kind == partWatches && w.cache == p.cache })
		if w < 0 {
			errs = append(errs, fmt.Errorf("kube: Part %d, %v: the Controller doesn't Watch %s, which the owners are read from: pass kube.Watches(owners, …) with it too", i, p, p.cache.String()))
			continue
		}
		// The Watches' mapping names each owner's children; only the
		// first TrustScenario is taken.
		if c.trust != nil && p.owners != nil && i == slices.IndexFunc(ps, func(t Part) bool { return t.kind == partTrustScenario }) {
			c.trust.trust = p.owners(ps[w].mapping)
		}
	}
	return errs
}

// addWatches adds p, a Watches, and returns what is wrong with it.
func (c *commonParts) addWatches(p Part) []string {
	var mistakes []string
	if p.cache == nil {
		mistakes = append(mistakes, "the Cache is nil")
	} else {
		for _, err := range p.cache.cacheMistakes() {
			mistakes = append(mistakes, err.Error())
		}
		if b := p.cache.binding(); b != nil {
			mistakes = append(mistakes, fmt.Sprintf("the Cache is watched by Controller %s already: a Cache is watched by one Controller", b.controller))
		}
		if slices.ContainsFunc(c.related, func(r relatedPart) bool { return r.cache == p.cache }) {
			mistakes = append(mistakes, "the Cache is watched twice")
		}
	}
	mistakes = append(mistakes, p.mapping.mistakes()...)
	mistakes = append(mistakes, filterMistakes(p.filters, filterPlace)...)
	if len(mistakes) == 0 {
		c.related = append(c.related, relatedPart{cache: p.cache, mapping: p.mapping, filters: p.filters})
	}
	return mistakes
}

// addFilterUpdates adds p, the nth FilterUpdates, when it is the first and
// has no mistake, and returns what is wrong with it.
func (c *commonParts) addFilterUpdates(p Part, n int) []string {
	var mistakes []string
	if n > 1 {
		mistakes = append(mistakes, "a Controller takes one FilterUpdates, and this is a second: pass every filter to one")
	}
	if len(p.filters) == 0 {
		mistakes = append(mistakes, "no UpdateFilter: pass kube.SkipStatusOnly or a kube.FilterFunc")
	}
	mistakes = append(mistakes, filterMistakes(p.filters, filterPlace)...)
	if n == 1 && len(mistakes) == 0 {
		c.filters = p.filters
	}
	return mistakes
}

// addIndexes adds p, an Indexes, to a Controller of T's objects, and
// returns what is wrong with it.
func addIndexes[T any](c *commonParts, p Part) []string {
	if p.index == nil {
		return []string{"the Index is nil"}
	}
	var mistakes []string
	if p.index.indexName() == "" {
		mistakes = append(mistakes, "the Index has no name")
	}
	if !p.index.hasKeys() {
		mistakes = append(mistakes, "the Index's keys function is nil")
	}
	if got, want := p.index.objectType(), reflect.TypeFor[T](); got != want {
		mistakes = append(mistakes, fmt.Sprintf("the Index is over %v, and the Controller's objects are %v", got, want))
	}
	if b := p.index.binding(); b != nil {
		mistakes = append(mistakes, fmt.Sprintf("the Index is kept by Controller %s already: an Index is kept by one Controller", b.controller))
	}
	switch {
	case slices.Contains(c.indexes, p.index):
		mistakes = append(mistakes, "the Index is kept twice")
	case slices.ContainsFunc(c.indexes, func(x indexHandle) bool { return x.indexName() == p.index.indexName() }):
		mistakes = append(mistakes, fmt.Sprintf("another Index is named %q too: each of a Controller's Indexes has a name of its own", p.index.indexName()))
	}
	if len(mistakes) == 0 {
		c.indexes = append(c.indexes, p.index)
	}
	return mistakes
}

// addOwns adds p, an Owns, and returns what is wrong with it.
func (c *commonParts) addOwns(p Part) []string {
	var mistakes []string
	gvr := p.gvr
	for _, err := range gvrMistakes(gvr) {
		mistakes = append(mistakes, err.Error())
	}
	if slices.ContainsFunc(c.owns, func(o ownsPart) bool { return o.gvr == gvr }) {
		mistakes = append(mistakes, fmt.Sprintf("%s is owned twice", gvr))
	}
	o := ownsPart{gvr: gvr}
	selectors := 0
	// at is where each filter is among the options, for its mistakes.
	var at []int
	for i, opt := range p.ownsOptions {
		switch opt := opt.(type) {
		case nil:
			mistakes = append(mistakes, fmt.Sprintf("option %d is nil", i))
		case Selector:
			selectors++
			if selectors > 1 {
				mistakes = append(mistakes, fmt.Sprintf("option %d, %v: an Owns takes one Selector, and this is a second", i, opt))
			}
			if err := CheckLabelSelector(opt.Labels); err != nil {
				mistakes = append(mistakes, fmt.Sprintf("option %d, Selector.Labels: %v", i, err))
			}
			if err := CheckFieldSelector(opt.Fields); err != nil {
				mistakes = append(mistakes, fmt.Sprintf("option %d, Selector.Fields: %v", i, err))
			}
			o.selector = opt
		case UpdateFilter:
			o.filters = append(o.filters, opt)
			at = append(at, i)
		default:
			mistakes = append(mistakes, fmt.Sprintf("option %d is a %T: pass a kube.Selector or a kube.UpdateFilter itself", i, opt))
		}
	}
	mistakes = append(mistakes, filterMistakes(o.filters, func(i int) string { return fmt.Sprintf("option %d", at[i]) })...)
	c.owns = append(c.owns, o)
	return mistakes
}

// addFinalize adds p, the nth Finalize, to out when it is the first, and
// returns what is wrong with it.
func addFinalize[T any](out *parts[T], p Part, n int) []string {
	var mistakes []string
	if n > 1 {
		mistakes = append(mistakes, "a Controller takes one Finalize, and this is a second")
	}
	if err := names.CheckFinalizer(p.finalizer); err != nil {
		mistakes = append(mistakes, "the finalizer "+err.Error())
	}
	switch f := p.fn.(type) {
	case nil:
		mistakes = append(mistakes, "the function is nil")
	case func(context.Context, T) error:
		if n == 1 {
			out.finalizer, out.finalize = p.finalizer, f
		}
	default:
		mistakes = append(mistakes, fmt.Sprintf("the function takes a %v, and the Controller's objects are %v", p.fnType, reflect.TypeFor[T]()))
	}
	return mistakes
}

// addTrust adds p, the nth TrustScenario, when it is the first and has no
// mistake, and returns what is wrong with it.
func (c *commonParts) addTrust(p Part, n int) []string {
	var mistakes []string
	if n > 1 {
		mistakes = append(mistakes, "a Controller takes one TrustScenario, and this is a second")
	}
	own := p.trustMistakes()
	if n == 1 && len(own) == 0 {
		c.trust = &scenarioTrust{annotation: p.annotation, trust: p.trust}
	}
	return append(mistakes, own...)
}

// addAwait adds p, an AwaitWebhooks, and returns what is wrong with it.
func (c *commonParts) addAwait(p Part) []string {
	switch {
	case p.webhooks == nil:
		return []string{"the Webhooks are nil"}
	case slices.Contains(c.awaits, p.webhooks):
		return []string{"the Webhooks are awaited twice"}
	}
	c.awaits = append(c.awaits, p.webhooks)
	return nil
}
