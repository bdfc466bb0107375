package controller_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/controller"
	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
)

// passHandler keeps the Pass of each reconcile's context.
type passHandler struct {
	mu     sync.Mutex
	passes []reconcile.Pass
}

func (h *passHandler) Reconcile(ctx context.Context, _ ports.Object) (ports.Result, error) {
	p, _ := reconcile.PassOf(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.passes = append(h.passes, p)
	return ports.Result{}, nil
}

func (*passHandler) Finalize(context.Context, ports.Object) error { return nil }

// Resource.Apply's default field manager and its refusal of the
// reconciled object under Settings.Name both read the Pass's Controller,
// which only domain/controller's loop passes to reconcile.Config.Name:
// without it, every pass would be anonymous and Apply unbound.
func TestController_s_reconciles_carry_its_name(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &passHandler{}
		r := newRig(t, 1, func(c *controller.Config) { c.Handler = h })
		ctx, stop := context.WithCancel(t.Context())
		r.lead(ctx)
		r.change("m")
		synctest.Wait()
		stop()
		require.NoError(t, <-r.served)
		h.mu.Lock()
		defer h.mu.Unlock()
		require.Len(t, h.passes, 1)
		require.Equal(t, "memcached-controller", h.passes[0].Controller)
		require.Equal(t, ports.Key{Namespace: "ns", Name: "m"}, h.passes[0].Key)
	})
}
