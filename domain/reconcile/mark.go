package reconcile

import (
	"context"
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/ports"
)

// Pass is what the context of a pass says of it: which controller runs it,
// over which object. The Loop marks the context of every pass that does
// something with it, so that code the pass calls — the facade's typed
// apply — can tell the reconciled object from the others and apply under
// the controller's name.
type Pass struct {
	// Controller is the controller's name, Config.Name: the field manager
	// of the controller's own applies. It is "" when the Config has none.
	Controller string
	// Key names the reconciled object.
	Key ports.Key
	// UID is the reconciled object's uid.
	UID types.UID
	// object is the reconciled object's JSON, as the cache holds it, read
	// only when GroupKind is asked for.
	object []byte
}

// GroupKind returns the reconciled object's group and kind, as its JSON's
// apiVersion and kind say, and false when the JSON names no kind or an
// apiVersion that doesn't parse. It decodes the JSON at each call: the
// pass pays for it only when asked.
func (p Pass) GroupKind() (schema.GroupKind, bool) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if len(p.object) == 0 || json.Unmarshal(p.object, &tm) != nil || tm.Kind == "" {
		return schema.GroupKind{}, false
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil || tm.APIVersion == "" {
		return schema.GroupKind{}, false
	}
	return schema.GroupKind{Group: gv.Group, Kind: tm.Kind}, true
}

// passKey is the context key of a Pass.
type passKey struct{}

// withPass returns ctx marked as the context of the pass p.
func withPass(ctx context.Context, p Pass) context.Context {
	return context.WithValue(ctx, passKey{}, &p)
}

// PassOf returns the Pass whose context ctx is, or was made from, and
// false when ctx is no pass's.
func PassOf(ctx context.Context) (Pass, bool) {
	p, ok := ctx.Value(passKey{}).(*Pass)
	if !ok || p == nil {
		return Pass{}, false
	}
	return *p, true
}
