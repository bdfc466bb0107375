package informer

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// WatchConfigMap watches the one ConfigMap namespace/name, with a list
// and a watch narrowed to its name (which RBAC's resourceNames can
// grant), until ctx ends, and calls changed with its data after each
// change: found is false once the list shows there is none, or it is
// deleted. changed is called from one goroutine at a time, in order.
// WatchConfigMap returns nil when ctx ends; client-go retries a list or
// a watch that fails meanwhile, as for every informer.
func WatchConfigMap(ctx context.Context, client kubernetes.Interface, namespace, name string, changed func(data map[string]string, found bool)) error {
	byName := fields.OneTermEqualSelector(metav1.ObjectNameField, name).String()
	lw := cache.NewFilteredListWatchFromClient(client.CoreV1().RESTClient(), "configmaps", namespace, func(o *metav1.ListOptions) {
		o.FieldSelector = byName
	})
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	// One lock orders the handlers' calls and the report of a ConfigMap
	// the first list didn't find, which the list's own handlers can't
	// give.
	var mu sync.Mutex
	call := func(data map[string]string, found bool) {
		mu.Lock()
		defer mu.Unlock()
		changed(data, found)
	}
	seen := func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			call(cm.Data, true)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
		DeleteFunc: func(any) { call(nil, false) },
	}); err != nil {
		return fmt.Errorf("informer of ConfigMap %s/%s: %w", namespace, name, err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		mu.Lock()
		// Checked under the lock: a ConfigMap the store holds by now has
		// been, or is about to be, reported by its handler.
		if len(inf.GetStore().List()) == 0 {
			changed(nil, false)
		}
		mu.Unlock()
	}
	wg.Wait()
	return nil
}
