package informer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// ConfigMapStale is how long WatchConfigMap trusts what it last read of
// its ConfigMap without a list or a watch of it succeeding again: past
// it, the ConfigMap is reported unreadable, as when RBAC no longer grants
// it or the watch is broken.
const ConfigMapStale = 30 * time.Second

// ConfigMapWatchTimeout is the timeout of each watch of WatchConfigMap's:
// the API server ends the watch then, and the next one, which RBAC
// checks afresh, confirms the ConfigMap is still readable, well inside
// ConfigMapStale. client-go's own, 5 to 10 minutes, would leave a watch
// that RBAC no longer grants running that long.
const ConfigMapWatchTimeout = 10 * time.Second

// errNoAnswer is why a ConfigMap is unreadable when no list or watch
// failed, but none succeeded either: a watch that hangs.
var errNoAnswer = errors.New("no list or watch answered")

// WatchConfigMap watches the one ConfigMap namespace/name, with a list
// and a watch narrowed to its name (which RBAC's resourceNames can
// grant), until ctx ends, and calls changed with its data after each
// change: found is false once the list shows there is none, or it is
// deleted. It fails closed: once no list or watch has succeeded for
// ConfigMapStale, changed is called with found false and an error that
// says why, and with nothing else until a list or a watch succeeds
// again, when the ConfigMap's data is reported afresh, as that list or
// watch found it. changed is called from one goroutine at a time, in
// order, and never twice in a row with the same data. WatchConfigMap returns nil when
// ctx ends; client-go retries a list or a watch that fails meanwhile, as
// for every informer.
func WatchConfigMap(ctx context.Context, client kubernetes.Interface, namespace, name string, changed func(data map[string]string, found bool, err error)) error {
	byName := fields.OneTermEqualSelector(metav1.ObjectNameField, name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			return client.CoreV1().ConfigMaps(namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return client.CoreV1().ConfigMaps(namespace).Watch(ctx, o)
		},
	}
	return watchConfigMap(ctx, lw, namespace+"/"+name, changed)
}

// watchConfigMap is WatchConfigMap over lw, which lists and watches the
// ConfigMap what names.
func watchConfigMap(ctx context.Context, lw cache.ListerWatcher, what string, changed func(data map[string]string, found bool, err error)) error {
	return (&configMapWatch{changed: changed}).run(ctx, lw, what)
}

// run is watchConfigMap with w, whose changed is set.
func (w *configMapWatch) run(ctx context.Context, lw cache.ListerWatcher, what string) error {
	w.answered = make(chan struct{}, 1)
	w.inf = cache.NewSharedIndexInformer(&answering{lw: lw, w: w}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	seen := func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			w.call(cm.Data, true)
		}
	}
	// Logged through the context's logger, as client-go's default does,
	// but without its process-wide error backoff, which would hold the
	// reflector's retries up.
	if err := w.inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
		klog.FromContext(ctx).Error(err, "Failed to list or watch the ConfigMap", "configmap", what)
	}); err != nil {
		return fmt.Errorf("informer of ConfigMap %s: %w", what, err)
	}
	if _, err := w.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
		DeleteFunc: func(any) { w.call(nil, false) },
	}); err != nil {
		return fmt.Errorf("informer of ConfigMap %s: %w", what, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { w.inf.RunWithContext(ctx) })
	wg.Go(func() { w.watchdog(ctx, what) })
	if cache.WaitForCacheSync(ctx.Done(), w.inf.HasSynced) {
		w.mu.Lock()
		// Checked under the lock: a ConfigMap the store holds by now has
		// been, or is about to be, reported by its handler.
		if len(w.inf.GetStore().List()) == 0 && !w.stale {
			w.tell(nil, false)
		}
		w.mu.Unlock()
	}
	<-ctx.Done()
	cancel()
	wg.Wait()
	return nil
}

// configMapWatch is the state of one WatchConfigMap.
type configMapWatch struct {
	inf     cache.SharedIndexInformer
	changed func(data map[string]string, found bool, err error)
	// answered has a value after each list or watch that succeeded, for
	// the watchdog.
	answered chan struct{}
	// answeredSeen, when not nil, is called by the watchdog as it takes a
	// value of answered: a test delays it.
	answeredSeen func()

	// mu orders the calls of changed, and guards the rest.
	mu sync.Mutex
	// stale is set once the ConfigMap was reported unreadable, until a
	// list or a watch succeeds again: the handlers report nothing
	// meanwhile.
	stale bool
	// failed is the error of the latest list or watch that failed, nil
	// once one succeeds.
	failed error
	// said is what changed was last told, when it was told of data: a
	// handler that reports again what recovered just did says nothing.
	said *said
}

// said is one report of the ConfigMap's data.
type said struct {
	data  map[string]string
	found bool
}

// tell calls changed with data and found unless it was last told just
// that. Its caller holds mu.
func (w *configMapWatch) tell(data map[string]string, found bool) {
	if w.said != nil && w.said.found == found && maps.Equal(w.said.data, data) {
		return
	}
	w.said = &said{data: data, found: found}
	w.changed(data, found, nil)
}

// call reports the ConfigMap's data, unless it was reported unreadable.
func (w *configMapWatch) call(data map[string]string, found bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stale {
		w.tell(data, found)
	}
}

// answer records the outcome of a list (list true, listed what it
// returned) or a watch. One that succeeded ends a stale spell at once,
// before the informer's handlers see what it brought (recovered): a
// handler that ran before the watchdog would otherwise find the spell
// still on and drop its report, and the ConfigMap would go unreported
// until it changed.
func (w *configMapWatch) answer(list bool, listed runtime.Object, err error) {
	w.mu.Lock()
	w.failed = err
	if err == nil {
		w.recovered(list, listed)
	}
	w.mu.Unlock()
	if err != nil {
		return
	}
	// The watchdog needs to know of the latest success only.
	select {
	case w.answered <- struct{}{}:
	default:
	}
}

// watchdog reports the ConfigMap unreadable once no list or watch has
// succeeded for ConfigMapStale, until ctx ends.
func (w *configMapWatch) watchdog(ctx context.Context, what string) {
	timer := time.NewTimer(ConfigMapStale)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.answered:
			if w.answeredSeen != nil {
				w.answeredSeen()
			}
			timer.Reset(ConfigMapStale)
		case <-timer.C:
			w.mu.Lock()
			if !w.stale {
				w.stale = true
				why := w.failed
				if why == nil {
					why = errNoAnswer
				}
				w.said = nil
				w.changed(nil, false, fmt.Errorf("configmap %s: not read for %s: %w", what, ConfigMapStale, why))
			}
			w.mu.Unlock()
		}
	}
}

// recovered ends a stale spell after a list (list true, listed what it
// returned) or a watch that succeeded, and reports the ConfigMap afresh:
// as the list found it, since the informer reports only what changed
// since its store's copy; after a watch, started from the last version
// read, as the store holds it, which is what the handlers last saw. Its
// caller holds mu.
func (w *configMapWatch) recovered(list bool, listed runtime.Object) {
	if !w.stale {
		return
	}
	w.stale = false
	if list {
		if l, ok := listed.(*corev1.ConfigMapList); ok && len(l.Items) > 0 {
			w.tell(l.Items[0].Data, true)
			return
		}
		w.tell(nil, false)
		return
	}
	objs := w.inf.GetStore().List()
	if len(objs) == 0 {
		w.tell(nil, false)
		return
	}
	if cm, ok := objs[0].(*corev1.ConfigMap); ok {
		w.tell(cm.Data, true)
	}
}

// answering is a ListerWatcher that tells its configMapWatch how each
// list and watch went, and ends each watch after ConfigMapWatchTimeout.
type answering struct {
	lw cache.ListerWatcher
	w  *configMapWatch
}

func (a *answering) List(o metav1.ListOptions) (runtime.Object, error) {
	return a.ListWithContext(context.Background(), o)
}

func (a *answering) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	obj, err := cache.ToListerWatcherWithContext(a.lw).ListWithContext(ctx, o)
	a.w.answer(true, obj, err)
	return obj, err
}

func (a *answering) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return a.WatchWithContext(context.Background(), o)
}

func (a *answering) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	timeout := int64(ConfigMapWatchTimeout / time.Second)
	o.TimeoutSeconds = &timeout
	wi, err := cache.ToListerWatcherWithContext(a.lw).WatchWithContext(ctx, o)
	a.w.answer(false, nil, err)
	return wi, err
}

// IsWatchListSemanticsUnSupported reports true: the informer lists
// plainly, so a list's answer holds the ConfigMap it found, which
// recovered reports.
func (a *answering) IsWatchListSemanticsUnSupported() bool { return true }
