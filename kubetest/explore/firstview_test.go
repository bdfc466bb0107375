package explore_test

import (
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/kubetest/internal/memcached"
)

// made is trustsFirstView's memory of the Deployments one replica made,
// by the Memcached's uid: a fresh replica after a crash remembers
// nothing, and trusts what its cache shows it first.
type made struct {
	mu    sync.Mutex
	names map[types.UID]string
}

// remember notes that this replica applied m's Deployment as name; a
// nil made, another bug's, notes nothing.
func (mem *made) remember(m memcached.Object, name string) {
	if mem == nil {
		return
	}
	mem.mu.Lock()
	defer mem.mu.Unlock()
	mem.names[m.UID] = name
}

// firstViewName returns the name of the Deployment m controls in the
// cache, or the one this replica made for it, which the cache may lag
// behind, or, when neither knows of one, a new name.
func (o operator) firstViewName(m memcached.Object) (string, error) {
	if name, ok, err := o.inCache(m); err != nil || ok {
		return name, err
	}
	o.made.mu.Lock()
	defer o.made.mu.Unlock()
	if name, ok := o.made.names[m.UID]; ok {
		return name, nil
	}
	return newName(m), nil
}

// inCache returns the name of the Deployment m controls in the cache,
// and whether the cache holds one.
func (o operator) inCache(m memcached.Object) (string, bool, error) {
	list, err := o.cached.List(m.Namespace, labels.Everything())
	if err != nil {
		return "", false, err
	}
	for _, d := range list {
		if ref := metav1.GetControllerOf(&d); ref != nil && ref.UID == m.UID {
			return d.Name, true, nil
		}
	}
	return "", false, nil
}

// newName is a new name for m's Deployment.
func newName(m memcached.Object) string {
	return fmt.Sprintf("%s-%d", m.Name, time.Now().UnixNano())
}
