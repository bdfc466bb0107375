package informer

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loam-dev/loam/domain/owners"
	"github.com/loam-dev/loam/ports"
)

// WatchConfig is what NewWatch watches.
type WatchConfig struct {
	// Dynamic lists and watches the reconciled resource.
	Dynamic dynamic.Interface
	// Metadata lists and watches the owned resources.
	Metadata metadata.Interface
	// Resource is the reconciled resource, and Owner its objects' kind,
	// which owned objects name in their controller owner reference.
	Resource schema.GroupVersionResource
	Owner    owners.Owner
	// LabelSelector and FieldSelector narrow the reconciled resource's
	// list and watch, and Filters its updates; see Config.
	LabelSelector, FieldSelector string
	Filters                      []Filter
	// Owns is the owned resources.
	Owns []OwnedConfig
	// Namespaces limits the reconciled and the owned resources' informers
	// to a set of namespaces, each watched on its own: the API server
	// lists and watches one namespace or all, so a set costs an informer,
	// a list and a watch per namespace and resource. nil, or empty,
	// watches every namespace with one informer of each. Related
	// resources have sets of their own: RelatedConfig.Namespaces.
	Namespaces []string
	// Resync is the reconciled resource's resync period; 0 never resyncs.
	// Owned resources never resync: the reconciled resource's own resync
	// reconciles every owner already.
	Resync time.Duration
	// Related is the related resources, which never resync either.
	Related []RelatedConfig
	// Indexes is the indexes kept over the reconciled resource's objects.
	Indexes []Index
	// Recorder records the panics of the end user's mappings, indexes and
	// transforms, which the informers recover.
	Recorder ports.Recorder
	// Logger receives client-go's records of the informers.
	Logger logr.Logger
}

// OwnedConfig is one owned resource a controller watches.
type OwnedConfig struct {
	// Resource is the owned resource.
	Resource schema.GroupVersionResource
	// LabelSelector and FieldSelector narrow its list and watch, and
	// Filters its updates; see Config.
	LabelSelector, FieldSelector string
	Filters                      []Filter
}

// Watch is a controller's informers, a ports.Watch: those of the
// reconciled resource, whose cache it reads objects from, of each owned
// resource, and of each related one; one of each per namespace of its set.
type Watch struct {
	c         WatchConfig
	primary   *PrimaryCache
	related   []*RelatedCache
	informers []cache.SharedIndexInformer
	// notify is set by Start, before any informer runs, and called by
	// their handlers.
	notify  func(ports.Event)
	running *Running
}

var _ ports.Watch = (*Watch)(nil)

// NewWatch returns the informers c describes, not yet running. It fails
// only when client-go refuses an informer's transform or handler.
func NewWatch(c WatchConfig) (*Watch, error) {
	w := &Watch{c: c}
	cfg := Config{Resync: c.Resync, Notify: w.tell, Logger: c.Logger, Recorder: c.Recorder}
	indexes := make([]Index, len(c.Indexes))
	for i, ix := range c.Indexes {
		indexes[i] = Index{Name: ix.Name, Keys: ix.Keys, Panicked: panicked(c.Recorder, c.Resource, ix.Name)}
	}
	primary := cfg
	primary.LabelSelector, primary.FieldSelector, primary.Filters = c.LabelSelector, c.FieldSelector, c.Filters
	var err error
	if w.primary, err = newPrimaryCache(c.Dynamic, c.Resource, c.Namespaces, primary, indexes...); err != nil {
		return nil, err
	}
	w.informers = append(w.informers, w.primary.Informers()...)
	cfg.Resync = 0
	for _, oc := range c.Owns {
		owned := cfg
		owned.LabelSelector, owned.FieldSelector, owned.Filters = oc.LabelSelector, oc.FieldSelector, oc.Filters
		for _, ns := range watched(c.Namespaces) {
			owned.Namespace = ns
			o, err := NewOwned(c.Metadata, oc.Resource, c.Owner, owned)
			if err != nil {
				return nil, err
			}
			w.informers = append(w.informers, o.Informer())
		}
	}
	src := relatedSource{dynamic: c.Dynamic, metadata: c.Metadata, primary: w.primary, recorder: c.Recorder, config: cfg}
	for _, rc := range c.Related {
		r, err := newRelatedCache(src, rc)
		if err != nil {
			return nil, err
		}
		w.related = append(w.related, r)
		w.informers = append(w.informers, r.Informers()...)
	}
	return w, nil
}

// panicked returns the recorder of a panic in the end user's index
// name over gvr's objects.
func panicked(rec ports.Recorder, gvr schema.GroupVersionResource, name string) func(ports.Key, *ports.Panic) {
	what := fmt.Sprintf("index %q", name)
	return func(key ports.Key, p *ports.Panic) {
		rec.MappingPanicked(context.Background(), what, ports.Cause{Resource: gvr.GroupResource().String(), Key: key}, p)
	}
}

// Primary returns the cache of the reconciled resource, whose indexes
// the end user reads.
func (w *Watch) Primary() *PrimaryCache { return w.primary }

// Related returns the caches of the related resources, in the order of
// WatchConfig.Related.
func (w *Watch) Related() []*RelatedCache { return w.related }

func (w *Watch) tell(ev ports.Event) { w.notify(ev) }

// Get returns the cached object key names, as Primary's Get does, from
// the informer of its namespace.
func (w *Watch) Get(key ports.Key) (ports.Object, bool, error) { return w.primary.Get(key) }

// Check lists the reconciled resource and each owned one once, with a
// limit of 1 and the selectors the informers will list with, so one the
// API server doesn't serve, such as a CRD that isn't installed, or a field
// selector it doesn't support for the resource, fails at once with an
// error that names it.
func (w *Watch) Check(ctx context.Context) error {
	opts := metav1.ListOptions{Limit: 1, LabelSelector: w.c.LabelSelector, FieldSelector: w.c.FieldSelector}
	for _, ns := range watched(w.c.Namespaces) {
		if _, err := w.c.Dynamic.Resource(w.c.Resource).Namespace(ns).List(ctx, opts); err != nil {
			return listError(w.c.Resource, w.c.Namespaces, ns, err)
		}
	}
	for _, oc := range w.c.Owns {
		opts := metav1.ListOptions{Limit: 1, LabelSelector: oc.LabelSelector, FieldSelector: oc.FieldSelector}
		for _, ns := range watched(w.c.Namespaces) {
			if _, err := w.c.Metadata.Resource(oc.Resource).Namespace(ns).List(ctx, opts); err != nil {
				return listError(oc.Resource, w.c.Namespaces, ns, err)
			}
		}
	}
	src := relatedSource{dynamic: w.c.Dynamic, metadata: w.c.Metadata}
	for _, r := range w.related {
		if err := r.check(ctx, src); err != nil {
			return err
		}
	}
	return nil
}

// Start runs every informer until ctx is done or Stop is called, telling
// notify of each event. client-go's reflectors log through the Logger.
func (w *Watch) Start(ctx context.Context, notify func(ports.Event)) {
	w.notify = notify
	w.running = Start(klog.NewContext(ctx, w.c.Logger), w.informers...)
}

// WaitForSync waits until every informer's cache holds what its first
// list returned, and reports whether they did before ctx was done.
func (w *Watch) WaitForSync(ctx context.Context) bool { return w.running.WaitForSync(ctx) }

// Stop stops every informer and waits for their goroutines to return. It
// does nothing before Start.
func (w *Watch) Stop() {
	if w.running != nil {
		w.running.Stop()
	}
}
