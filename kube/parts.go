package kube

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loam-dev/loam/domain/names"
)

// Part adds to what a Controller does: Owns watches a resource its objects
// own, Watches a related resource its objects depend on, Indexes keeps an
// index over its objects, Finalize holds each object until the end user's
// code has cleaned up after it, and TrustScenario carries the failure
// scenario an object's annotation holds into its reconciles. NewController and
// NewKindController take any number of Parts, and report every mistake in
// them. The zero Part is a mistake.
type Part struct {
	kind partKind
	// gvr is what an Owns watches.
	gvr schema.GroupVersionResource
	// finalizer and finalize are a Finalize's: fn is a
	// func(context.Context, T) error, and fnType T.
	finalizer string
	fn        any
	fnType    reflect.Type
	// annotation and trust are a TrustScenario's.
	annotation string
	trust      func(metav1.Object) bool
	// cache and mapping are a Watches's; index an Indexes's.
	cache   cacheHandle
	mapping Mapping
	index   indexHandle
}

type partKind int

const (
	partNone partKind = iota
	partOwns
	partFinalize
	partTrustScenario
	partWatches
	partIndexes
)

// Owns reconciles an object again whenever a resource it controls is
// added, changes or is deleted: a resource of gvr, such as
// appsv1.SchemeGroupVersion.WithResource("deployments"), whose owner
// reference with controller: true names the Controller's group and kind.
// The reference's version isn't compared. The Controller watches gvr
// through the metadata client, limited to Settings.Namespace, and needs
// list and watch on it.
func Owns(gvr schema.GroupVersionResource) Part {
	return Part{kind: partOwns, gvr: gvr}
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
		return fmt.Sprintf("Owns(%s)", p.gvr)
	case partFinalize:
		return fmt.Sprintf("Finalize(%q, func(context.Context, %v) error)", p.finalizer, p.fnType)
	case partTrustScenario:
		return fmt.Sprintf("TrustScenario(%q)", p.annotation)
	case partWatches:
		c := "Cache(nil)"
		if p.cache != nil {
			c = p.cache.String()
		}
		return fmt.Sprintf("Watches(%s, %v)", c, p.mapping)
	case partIndexes:
		if p.index == nil {
			return "Indexes(nil)"
		}
		return fmt.Sprintf("Indexes(%v)", p.index)
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
	owns      []schema.GroupVersionResource
	finalizer string
	// trust is the TrustScenario's, nil without one.
	trust *scenarioTrust
	// related is the Watches', and indexes the Indexes'.
	related []relatedPart
	indexes []indexHandle
}

// relatedPart is one Watches: its Cache and its Mapping.
type relatedPart struct {
	cache   cacheHandle
	mapping Mapping
}

// partsOf checks ps for a Controller of T's objects and returns what they
// add up to, with one error naming every mistake.
func partsOf[T any](ps []Part) (parts[T], error) {
	var (
		out  parts[T]
		errs []error
		// finalizes and trusts count the Finalizes and TrustScenarios,
		// so a second one is named.
		finalizes, trusts int
	)
	for i, p := range ps {
		var mistakes []string
		switch p.kind {
		case partOwns:
			mistakes = out.addOwns(p.gvr)
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
		default:
			mistakes = []string{"the zero Part: make Parts with Owns, Watches, Indexes, Finalize or TrustScenario"}
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
	if len(mistakes) == 0 {
		c.related = append(c.related, relatedPart{cache: p.cache, mapping: p.mapping})
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

// addOwns adds an Owns of gvr, and returns what is wrong with it.
func (c *commonParts) addOwns(gvr schema.GroupVersionResource) []string {
	var mistakes []string
	if gvr.Version == "" {
		mistakes = append(mistakes, "the GVR has no Version")
	}
	if gvr.Resource == "" {
		mistakes = append(mistakes, "the GVR has no Resource")
	}
	if slices.Contains(c.owns, gvr) {
		mistakes = append(mistakes, fmt.Sprintf("%s is owned twice", gvr))
	}
	c.owns = append(c.owns, gvr)
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
