package reconcile

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/ports"
)

// Reconciles reports whether the object key names, with the uid uid, of
// the group and kind gk, is the object p reconciles: it has its namespace
// and name, as the API server names an object, and its uid or its group
// and kind. A copy of the reconciled object renamed to apply a sibling
// keeps the uid, but is another object. The reconciled object's JSON is
// decoded only when the uids don't tell.
func (p Pass) Reconciles(key ports.Key, uid types.UID, gk schema.GroupKind) bool {
	if key != p.Key {
		return false
	}
	if uid != "" && uid == p.UID {
		return true
	}
	got, ok := p.GroupKind()
	return ok && got == gk
}

// FieldManager returns the field manager an apply made in ctx of the
// object key names, with the uid uid and the group and kind gk, is made
// under, given the one the caller named: in a pass of a named
// controller, an apply of another object defaults to the controller's
// name, so that its next apply of that object takes over what this one
// declared. Outside a pass, or in one with no controller name, given is
// returned as it is. It fails when given is the controller's own name and
// the object is the reconciled one: the controller's applies of its
// metadata under that name would remove what this apply declares.
func FieldManager(ctx context.Context, given string, key ports.Key, uid types.UID, gk schema.GroupKind) (string, error) {
	if ctx == nil {
		// The request reports it.
		return given, nil
	}
	pass, ok := PassOf(ctx)
	if !ok || pass.Controller == "" {
		return given, nil
	}
	own := pass.Reconciles(key, uid, gk)
	switch {
	case given == "" && !own:
		return pass.Controller, nil
	case given == pass.Controller && own:
		return given, fmt.Errorf("ApplyOptions.FieldManager is %q, the controller's own (Settings.Name), and the object is the one being reconciled: the controller's applies of its metadata under that name would remove what this apply declares, so apply it under another field manager", given)
	}
	return given, nil
}
