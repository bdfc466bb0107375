package explore

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OldListsProxy is the explorer's proxy, for the cluster test of old
// lists in package explore_test (old_cluster_test.go): its writes serve
// the lists of a replica served old from its From-th write.
type OldListsProxy struct{ w *writes }

// NewOldListsProxy returns the proxy of a replay's first replica, its
// lists served old from its from-th write.
func NewOldListsProxy(from int) *OldListsProxy {
	w := &writes{objects: map[string]object{}, explored: schema.GroupResource{Group: "explore.loam.dev", Resource: "memcacheds"}}
	w.replica(func() {})
	w.arm(Step{OldListsFrom: from})
	return &OldListsProxy{w: w}
}

// Serve is the proxy's inspect.
func (p *OldListsProxy) Serve(rw http.ResponseWriter, r *http.Request, next http.Handler) {
	p.w.serve(rw, r, next)
}

// Over ends the step: nothing is served old from then on.
func (p *OldListsProxy) Over() { p.w.arm(Step{}) }

// Old returns how many lists were served old, or refused as streamed.
func (p *OldListsProxy) Old() int { return p.w.takeOld() }

// Release lets the watches held back go, as the explorer does once the
// operator has been quiet, and reports whether any was held.
func (p *OldListsProxy) Release() bool { return p.w.release() }
