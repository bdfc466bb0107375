package explore_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
)

// The annotations forgetsSkipped notes the generation it works on with,
// and announces a change of spec with.
const (
	noticed   = "explore.loam.dev/noticed-generation"
	announced = "explore.loam.dev/resizing-to"
)

// memory is forgetsSkipped's memory of the Memcacheds of one replica, by
// namespace and name: those it has reconciled, and those whose
// announcement its filter saw come. A fresh replica after a crash
// remembers nothing, and applies each Memcached's Deployment when it
// first sees it: the bug is the lost events', not a crash's.
type memory struct {
	mu      sync.Mutex
	seen    map[string]bool
	pending map[string]bool
}

func newMemory() *memory {
	return &memory{seen: map[string]bool{}, pending: map[string]bool{}}
}

func memoryKey(namespace, name string) string { return namespace + "/" + name }

// filter notes each update that brings an announcement, event by event,
// and keeps every update.
func (mem *memory) filter() kube.UpdateFilter {
	return kube.FilterFunc("notices announcements", func(old, new metav1.Object) bool {
		if old.GetAnnotations()[announced] == "" && new.GetAnnotations()[announced] != "" {
			mem.mu.Lock()
			defer mem.mu.Unlock()
			mem.pending[memoryKey(new.GetNamespace(), new.GetName())] = true
		}
		return true
	})
}

// take reports whether m's Deployment is to be applied, m new to the
// replica or an announcement of it come, and forgets the announcement:
// one that comes while the reconcile runs is kept for the next.
func (mem *memory) take(m memcached.Object) bool {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	k := memoryKey(m.Namespace, m.Name)
	apply := !mem.seen[k] || mem.pending[k]
	mem.seen[k] = true
	delete(mem.pending, k)
	return apply
}

// again keeps m's Deployment to be applied, after a reconcile that was
// to apply it failed.
func (mem *memory) again(m memcached.Object) {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	mem.pending[memoryKey(m.Namespace, m.Name)] = true
}

// announce announces a change of m's spec it hasn't noticed, in three
// writes of m: the generation noticed, the announcement, and then its
// clearing. It reports whether the Deployment is to be applied.
func (o operator) announce(ctx context.Context, m memcached.Object) (bool, error) {
	apply := o.memory.take(m)
	generation := strconv.FormatInt(m.Generation, 10)
	if m.Annotations[noticed] == generation {
		return apply, nil
	}
	objects := o.dynamic.Resource(resource.GVR()).Namespace(m.Namespace)
	for _, annotations := range []map[string]any{
		{noticed: generation},
		{announced: strconv.Itoa(int(m.Spec.Size))},
		{announced: nil},
	} {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
		if err != nil {
			return false, err
		}
		if _, err := objects.Patch(ctx, m.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			if apply {
				o.memory.again(m)
			}
			return false, err
		}
	}
	return apply, nil
}
