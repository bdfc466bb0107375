package informer

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loam-dev/loam/ports"
)

// Filter decides whether an update of a watched object notifies: Keep is
// handed the object's metadata before and after the update, and returns
// false to skip it. Name names the filter in the record of its panic.
//
// Only updates that are changes, with a new resourceVersion, are
// filtered: adds, deletions and resyncs always notify, so an object whose
// updates are skipped is still reconciled by its timers and the resync,
// and a skipped update leaves its key's pending retry or After in place.
type Filter struct {
	Name string
	Keep func(old, new metav1.Object) bool
}

// filters is one informer's Filters over a resource's objects, which it
// records the panics of.
type filters struct {
	list     []Filter
	resource string
	recorder ports.Recorder
}

// newFilters returns c's filters of gvr's objects, recorded through c's
// Recorder.
func newFilters(list []Filter, gvr schema.GroupVersionResource, rec ports.Recorder) filters {
	return filters{list: list, resource: gvr.GroupResource().String(), recorder: rec}
}

// skip reports whether a filter skips the update of the object key from
// old to new: every filter must keep an update for it to notify. A filter
// that panics lets the update through, and is recorded: a reconcile too
// many costs less than a change missed.
func (f filters) skip(key ports.Key, old, new metav1.Object) bool {
	for _, fl := range f.list {
		keep := true
		if p := protect(func() { keep = fl.Keep(old, new) }); p != nil {
			f.record(fmt.Sprintf("filter %q of %s", fl.Name, f.resource), key, p)
			return false
		}
		if !keep {
			return true
		}
	}
	return false
}

// skipJSON is skip for objects cached as JSON, whose metadata it decodes
// only when there is a filter to hand it to. An object whose metadata
// doesn't decode, which the API server never sends, notifies, and is
// recorded.
func (f filters) skipJSON(key ports.Key, old, new []byte) bool {
	if len(f.list) == 0 {
		return false
	}
	o, err := decodeMeta(old)
	if err == nil {
		var n *metav1.ObjectMeta
		if n, err = decodeMeta(new); err == nil {
			return f.skip(key, o, n)
		}
	}
	f.record(fmt.Sprintf("the filters of %s", f.resource), key, &ports.Panic{Value: fmt.Errorf("decoding the metadata: %w", err)})
	return false
}

func (f filters) record(what string, key ports.Key, p *ports.Panic) {
	if f.recorder != nil {
		f.recorder.MappingPanicked(context.Background(), what, ports.Cause{Resource: f.resource, Key: key}, p)
	}
}

// decodeMeta decodes the metadata of doc, a cached object's JSON, alone:
// the scanner finds the member, and only its bytes are decoded.
func decodeMeta(doc []byte) (*metav1.ObjectMeta, error) {
	m := &metav1.ObjectMeta{}
	s := scanner{data: doc}
	err := s.object(0, func(mb member) error {
		if !mb.key(doc, "metadata") {
			return nil
		}
		return json.Unmarshal(doc[mb.valueStart:mb.valueEnd], m)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}
