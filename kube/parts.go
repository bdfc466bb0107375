package kube

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// TrustOwnerScenario, whose owners are cache, and ownerTrust their
	// own controller's rule; owners makes its trust from the mapping of
	// the Watches of cache.
	annotation string
	trust      func(metav1.Object) bool
	byOwner    bool
	ownerTrust func(metav1.Object) bool
	owners     func(Mapping) func(metav1.Object) bool
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
