package informer

import (
	"context"
	"errors"
	"fmt"
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
// again, when the ConfigMap's data is reported afresh. changed is called
// from one goroutine at a time, in order. WatchConfigMap returns nil when
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
	w := &configMapWatch{changed: changed, answered: make(chan bool, 1)}
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
			changed(nil, false, nil)
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
	// answered has a value after each list (true) or watch (false) that
	// succeeded, for the watchdog.
	answered chan bool

	// mu orders the calls of changed, and guards the rest.
	mu sync.Mutex
	// stale is set once the ConfigMap was reported unreadable, until a
	// list or a watch succeeds again: the handlers report nothing
	// meanwhile.
	stale bool
	// failed is the error of the latest list or watch that failed, nil
	// once one succeeds.
	failed error
}

// call reports the ConfigMap's data, unless it was reported unreadable.
func (w *configMapWatch) call(data map[string]string, found bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stale {
		w.changed(data, found, nil)
	}
}

// answer records the outcome of a list (list true) or a watch.
func (w *configMapWatch) answer(list bool, err error) {
	w.mu.Lock()
	w.failed = err
	w.mu.Unlock()
	if err != nil {
		return
	}
	// The watchdog needs the latest success only: a full buffer already
	// holds one, and a list's value wins over a watch's.
	select {
	case w.answered <- list:
	default:
		if list {
			select {
			case <-w.answered:
			default:
			}
			select {
			case w.answered <- list:
			default:
			}
		}
	}
}

// watchdog reports the ConfigMap unreadable once no list or watch has
// succeeded for ConfigMapStale, and reports it afresh when one does
// again, until ctx ends.
func (w *configMapWatch) watchdog(ctx context.Context, what string) {
	timer := time.NewTimer(ConfigMapStale)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case list := <-w.answered:
			timer.Reset(ConfigMapStale)
			w.recovered(list)
		case <-timer.C:
			w.mu.Lock()
			if !w.stale {
				w.stale = true
				why := w.failed
				if why == nil {
					why = errNoAnswer
				}
				w.changed(nil, false, fmt.Errorf("configmap %s: not read for %s: %w", what, ConfigMapStale, why))
			}
			w.mu.Unlock()
		}
	}
}

// recovered ends a stale spell after a list (list true) or a watch that
// succeeded. After a list, the informer reports every object it found,
// and a ConfigMap it no longer finds as deleted; a watch started from
// the last version read lists nothing, so the store, which holds what
// the handlers last saw, is reported here.
func (w *configMapWatch) recovered(list bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stale {
		return
	}
	w.stale = false
	if list {
		return
	}
	objs := w.inf.GetStore().List()
	if len(objs) == 0 {
		w.changed(nil, false, nil)
		return
	}
	if cm, ok := objs[0].(*corev1.ConfigMap); ok {
		w.changed(cm.Data, true, nil)
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
	a.w.answer(true, err)
	return obj, err
}

func (a *answering) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return a.WatchWithContext(context.Background(), o)
}

func (a *answering) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	timeout := int64(ConfigMapWatchTimeout / time.Second)
	o.TimeoutSeconds = &timeout
	wi, err := cache.ToListerWatcherWithContext(a.lw).WatchWithContext(ctx, o)
	// A watch that sends the initial events is client-go's list: the
	// informer reports what it finds, as after a list.
	a.w.answer(o.SendInitialEvents != nil && *o.SendInitialEvents, err)
	return wi, err
}
