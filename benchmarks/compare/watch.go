package compare

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/loam-dev/loam/benchmarks/memcached"
)

// memcachedClient returns a REST client of the Memcacheds of cfg's API
// server that decodes them into memcached.Memcached: the harness's watch
// decodes typed structs, cheaper than client-go's unstructured maps.
func memcachedClient(cfg *rest.Config) (*rest.RESTClient, error) {
	scheme := runtime.NewScheme()
	if err := memcached.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &memcached.GroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	return rest.RESTClientFor(c)
}

// settledWatch is the harness's own watch of a run's namespace: it notes
// the moment every one of its n objects has been seen settled.
type settledWatch struct {
	n        int
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	stopped  chan struct{}

	mu      sync.Mutex
	settled map[string]bool
	at      time.Time // when the n-th object was seen settled
	// done is closed once every object has been seen settled.
	done chan struct{}
}

// watchSettled starts watching the Memcacheds of ns and returns once the
// watch has listed them. close stops it.
func watchSettled(ctx context.Context, client rest.Interface, ns string, n int) (*settledWatch, error) {
	lw := cache.NewListWatchFromClient(client, memcached.Plural, ns, fields.Everything())
	w := &settledWatch{
		n:        n,
		informer: cache.NewSharedIndexInformer(lw, &memcached.Memcached{}, 0, cache.Indexers{}),
		stopped:  make(chan struct{}),
		settled:  map[string]bool{},
		done:     make(chan struct{}),
	}
	// The harness reads the status only: managedFields would only fill
	// its memory.
	if err := w.informer.SetTransform(func(obj any) (any, error) {
		if m, ok := obj.(*memcached.Memcached); ok {
			m.ManagedFields = nil
		}
		return obj, nil
	}); err != nil {
		return nil, err
	}
	if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.see,
		UpdateFunc: func(_, obj any) { w.see(obj) },
	}); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.stop = cancel
	go func() {
		defer close(w.stopped)
		w.informer.RunWithContext(runCtx)
	}()
	if !cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) {
		w.close()
		return nil, fmt.Errorf("watch the Memcacheds of %s: never synced: %w", ns, context.Cause(ctx))
	}
	return w, nil
}

// see notes obj when it is settled.
func (w *settledWatch) see(obj any) {
	m, ok := obj.(*memcached.Memcached)
	if !ok || !memcached.Settled(m.Status, m.Generation) {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.settled[m.Name] {
		return
	}
	w.settled[m.Name] = true
	if len(w.settled) == w.n {
		w.at = now
		close(w.done)
	}
}

// count returns how many objects have been seen settled.
func (w *settledWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.settled)
}

// settledAt returns when the n-th object was seen settled, once done is
// closed.
func (w *settledWatch) settledAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at
}

// close stops the watch and waits until it has stopped.
func (w *settledWatch) close() {
	w.stop()
	<-w.stopped
}
