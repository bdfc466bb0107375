package kube

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/domain/names"
)

// Part adds to what a Controller does: Owns watches a resource its objects
// own, Watches a related resource its objects depend on, Indexes keeps an
// index over its objects, FilterUpdates filters the updates of its own
// objects, Finalize holds each object until the end user's code has
// cleaned up after it, and TrustScenario carries the failure scenario an
// object's annotation holds into its reconciles, and AwaitWebhooks holds
// its start until the App's Webhooks serve. NewController and
// NewKindController take any number of Parts, and report every mistake in
// them. The zero Part is a mistake.
type Part struct {
	kind partKind
	// gvr is what an Owns watches, and ownsOptions its options.
	gvr         schema.GroupVersionResource
	ownsOptions []OwnsOption
	// filters are a FilterUpdates' or a Watches'.
	filters []UpdateFilter
	// finalizer and finalize are a Finalize's: fn is a
	// func(context.Context, T) error, and fnType T.
	finalizer string
	fn        any
	fnType    reflect.Type
	// annotation and trust are a TrustScenario's; byOwner says it is a
	// TrustOwnerScenario, whose owners are cache.
	annotation string
	trust      func(metav1.Object) bool
	byOwner    bool
	// cache and mapping are a Watches's; index an Indexes's.
	cache   cacheHandle
	mapping Mapping
	index   indexHandle
	// webhooks is an AwaitWebhooks'.
	webhooks *Webhooks
}

type partKind int

const (
	partNone partKind = iota
	partOwns
	partFinalize
	partTrustScenario
	partWatches
	partIndexes
	partFilterUpdates
	partAwaitWebhooks
)

// AwaitWebhooks holds the Controller's Serve, before its first check
// that the API server serves its resources, until w listens, and at most
// AwaitWebhooksBound: a resource whose versions convert through w's
// Conversion can't be listed until w answers, so the check would fail on
// an App's start. Serve logs an INFO record when it starts to wait, and a
// WARN one if the bound passes, and then carries on, so its check fails
// as it would have. A Controller may await several Webhooks, each once.
func AwaitWebhooks(w *Webhooks) Part {
	return Part{kind: partAwaitWebhooks, webhooks: w}
}

// Owns reconciles an object again whenever a resource it controls is
// added, changes or is deleted: a resource of gvr, such as
// appsv1.SchemeGroupVersion.WithResource("deployments"), whose owner
// reference with controller: true names the Controller's group and kind.
// The reference's version isn't compared. The Controller watches gvr
// through the metadata client, limited to Settings.Namespace, and needs
// list and watch on it.
//
// opts narrow and filter the watch: a Selector narrows what is listed and
// watched, and UpdateFilters skip updates (see UpdateFilter). An update
// that moves an object's controller reference from one owner to another
// is never filtered: it is the object's deletion for one and its addition
// for the other. With filters, each owned object is cached with its
// metadata, but for managedFields, which the filters read; without, with
// its owner's key alone.
func Owns(gvr schema.GroupVersionResource, opts ...OwnsOption) Part {
	return Part{kind: partOwns, gvr: gvr, ownsOptions: opts}
}

// OwnsOption narrows or filters an Owns: a Selector or an UpdateFilter.
type OwnsOption interface {
	ownsOption()
}

// Selector narrows what an Owns lists and watches to the objects whose
// labels and fields match, such as Labels
// "app.kubernetes.io/managed-by=memcached-operator": the API server sends
// no other, so the cache holds no other, and their changes reconcile
// nothing. "" selects every object. NewController reports a selector that
// doesn't parse; which fields a resource can be selected by is the API
// server's to say, so Serve's first list fails on one it doesn't support.
type Selector struct {
	Labels, Fields string
}

func (Selector) ownsOption() {}

// String describes the Selector as the end user wrote it, for errors.
func (s Selector) String() string {
	return fmt.Sprintf("Selector{Labels: %q, Fields: %q}", s.Labels, s.Fields)
}

// Finalize keeps each object until f has cleaned up after it, with the
// finalizer named finalizer, such as cache.example.com/finalizer: a
// qualified name with a domain. The finalizer is added before an object's
// first reconcile; once the object is being deleted, f is called, never
// the Reconciler, and the finalizer is removed when f returns nil. An
// error retries with backoff, so f must be idempotent.
//
// T is inferred from f, and NewController checks it is the Controller's
// Object[Spec, Status], or NewKindController its T. A Controller takes
// one Finalize, and needs patch on its resource to apply the finalizer.
func Finalize[T any](finalizer string, f func(ctx context.Context, obj T) error) Part {
	p := Part{kind: partFinalize, finalizer: finalizer, fnType: reflect.TypeFor[T]()}
	if f != nil {
		p.fn = f
	}
	return p
}

// String describes the Part as the end user wrote it, for errors.
func (p Part) String() string {
	switch p.kind {
	case partOwns:
		var b strings.Builder
		for _, o := range p.ownsOptions {
			fmt.Fprintf(&b, ", %v", o)
		}
		return fmt.Sprintf("Owns(%s%s)", p.gvr, b.String())
	case partFilterUpdates:
		return fmt.Sprintf("FilterUpdates(%s)", strings.TrimPrefix(filterList(p.filters), ", "))
	case partFinalize:
		return fmt.Sprintf("Finalize(%q, func(context.Context, %v) error)", p.finalizer, p.fnType)
	case partTrustScenario:
		if p.byOwner {
			c := "Cache(nil)"
			if p.cache != nil {
				c = p.cache.String()
			}
			return fmt.Sprintf("TrustOwnerScenario(%q, %s)", p.annotation, c)
		}
		return fmt.Sprintf("TrustScenario(%q)", p.annotation)
	case partWatches:
		c := "Cache(nil)"
		if p.cache != nil {
			c = p.cache.String()
		}
		return fmt.Sprintf("Watches(%s, %v%s)", c, p.mapping, filterList(p.filters))
	case partIndexes:
		if p.index == nil {
			return "Indexes(nil)"
		}
		return fmt.Sprintf("Indexes(%v)", p.index)
	case partAwaitWebhooks:
		if p.webhooks == nil {
			return "AwaitWebhooks(nil)"
		}
		return fmt.Sprintf("AwaitWebhooks(%v)", p.webhooks)
	}
	return "Part{}"
}

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
	// A TrustOwnerScenario reads the owners the Controller's Watches
	// keep, which may come after it.
	for i, p := range ps {
		if p.kind != partTrustScenario || p.cache == nil {
			continue
		}
		if !slices.ContainsFunc(ps, func(w Part) bool { return w.kind == partWatches && w.cache == p.cache }) {
			errs = append(errs, fmt.Errorf("kube: Part %d, %v: the Controller doesn't Watch %s, which the owners are read from: pass kube.Watches(owners, …) with it too", i, p, p.cache.String()))
		}
	}
	return out, errors.Join(errs...)
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
	if gvr.Version == "" {
		mistakes = append(mistakes, "the GVR has no Version")
	}
	if gvr.Resource == "" {
		mistakes = append(mistakes, "the GVR has no Resource")
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
