package kube

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/adapters/informer"
)

// UpdateFilter decides whether an update of a watched object queues a
// reconcile: FilterUpdates filters the Controller's own objects, Owns an
// owned resource's and Watches a related one's. Only updates that are
// changes, with a new resourceVersion, are filtered: an object's addition,
// its deletion and the resync always queue it, and an update a filter
// skips leaves the object's pending After or retry in place, so a
// filtered object is still reconciled by its timers and the resync. Every
// filter of a watch must keep an update for it to queue. A watch without
// filters queues every update.
//
// SkipStatusOnly and FilterFunc make one. The zero UpdateFilter is a
// mistake.
type UpdateFilter struct {
	name string
	keep func(old, new metav1.Object) bool
	// kind tells SkipStatusOnly and FilterFunc apart, for String, and
	// either from the zero UpdateFilter.
	kind filterKind
}

type filterKind int

const (
	filterNone filterKind = iota
	filterFunc
	filterStatusOnly
)

// FilterFunc is the filter keep, named name in errors and in the record of
// its panics: keep is handed the object's metadata before and after an
// update, and returns whether the update queues a reconcile. It runs on
// the informer's goroutine for every update of the watched resource, so it
// must be quick and must not block; the objects are the cache's, and it
// must not modify them. A panic in it queues the update, as if it had
// kept it, and is recorded, as a mapping's panic is. NewController
// reports an empty name and a nil keep.
func FilterFunc(name string, keep func(old, new metav1.Object) bool) UpdateFilter {
	return UpdateFilter{name: name, keep: keep, kind: filterFunc}
}

// SkipStatusOnly keeps an update that changes the object's generation,
// labels, annotations, finalizers or deletion timestamp, and skips the
// rest: on a resource whose generation counts its spec's changes, as
// every resource with a status subresource does, those are the writes of
// its status alone, the Controller's own status applies included. An
// object whose generation is 0 before and after, as a ConfigMap's or a
// Secret's always is, keeps every update: its data may have changed, and
// its metadata can't tell.
func SkipStatusOnly() UpdateFilter {
	return UpdateFilter{name: "SkipStatusOnly", keep: changedBeyondStatus, kind: filterStatusOnly}
}

// changedBeyondStatus is SkipStatusOnly's filter.
func changedBeyondStatus(old, new metav1.Object) bool {
	return old.GetGeneration() == 0 && new.GetGeneration() == 0 ||
		old.GetGeneration() != new.GetGeneration() ||
		!maps.Equal(old.GetLabels(), new.GetLabels()) ||
		!maps.Equal(old.GetAnnotations(), new.GetAnnotations()) ||
		!slices.Equal(old.GetFinalizers(), new.GetFinalizers()) ||
		!old.GetDeletionTimestamp().Equal(new.GetDeletionTimestamp())
}

// String describes the filter as the end user wrote it, for errors.
func (f UpdateFilter) String() string {
	switch f.kind {
	case filterStatusOnly:
		return "SkipStatusOnly()"
	case filterFunc:
		if f.keep == nil {
			return fmt.Sprintf("FilterFunc(%q, nil)", f.name)
		}
		return fmt.Sprintf("FilterFunc(%q, ...)", f.name)
	}
	return "UpdateFilter{}"
}

func (UpdateFilter) ownsOption() {}

// mistakes returns what is wrong with f.
func (f UpdateFilter) mistakes() []string {
	if f.kind == filterNone {
		return []string{"the zero UpdateFilter: make one with kube.SkipStatusOnly or kube.FilterFunc"}
	}
	var mistakes []string
	if f.name == "" {
		mistakes = append(mistakes, "the FilterFunc has no name, which its records would name it by")
	}
	if f.keep == nil {
		mistakes = append(mistakes, fmt.Sprintf("the function of FilterFunc(%q) is nil", f.name))
	}
	return mistakes
}

// FilterUpdates filters the updates of the Controller's own objects: an
// update queues a reconcile only when every one of filters keeps it (see
// UpdateFilter). With SkipStatusOnly, an object whose status the
// Controller applies is reconciled once, not twice. Their metadata is
// decoded from the cached JSON for the filters on each update, which a
// Controller without FilterUpdates never does. A Controller takes one
// FilterUpdates, of at least one filter.
func FilterUpdates(filters ...UpdateFilter) Part {
	return Part{kind: partFilterUpdates, filters: filters}
}

// filterMistakes returns what is wrong with filters, one watch's, each
// named by where it is in its Part's arguments: each filter's own
// mistakes, and two of one name, which their records couldn't tell
// apart.
func filterMistakes(filters []UpdateFilter, place func(i int) string) []string {
	var mistakes []string
	for i, f := range filters {
		for _, m := range f.mistakes() {
			mistakes = append(mistakes, fmt.Sprintf("%s, %v: %s", place(i), f, m))
		}
		if f.name == "" {
			continue
		}
		if j := slices.IndexFunc(filters[:i], func(g UpdateFilter) bool { return g.name == f.name }); j >= 0 {
			mistakes = append(mistakes, fmt.Sprintf("%s, %v: %s is named %q too: each of a watch's filters has a name of its own", place(i), f, place(j), f.name))
		}
	}
	return mistakes
}

// filterPlace names filter i of a FilterUpdates or a Watches.
func filterPlace(i int) string { return fmt.Sprintf("filter %d", i) }

// filterList describes filters as the end user wrote them, after a
// Part's other arguments.
func filterList(filters []UpdateFilter) string {
	var b strings.Builder
	for _, f := range filters {
		b.WriteString(", ")
		b.WriteString(f.String())
	}
	return b.String()
}

// informerFilters returns the informer's filters of filters, which have
// no mistake.
func informerFilters(filters []UpdateFilter) []informer.Filter {
	if len(filters) == 0 {
		return nil
	}
	out := make([]informer.Filter, len(filters))
	for i, f := range filters {
		out[i] = informer.Filter{Name: f.name, Keep: f.keep}
	}
	return out
}
