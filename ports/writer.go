package ports

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Writer makes the controller's own writes: server-side applies under the
// controller's field manager, each naming the uid of the object it writes,
// so a write never needs a Get first, never conflicts with a write the
// cache has not seen yet, and never recreates a deleted object.
type Writer interface {
	// ApplyStatus applies status, a JSON object, to the status subresource
	// of the object key names, forcing, since the controller owns the
	// status whole. It returns the status as the API server stored it,
	// read from its answer: the JSON of the answer's status, which the
	// server may have defaulted or pruned, and which the caller owns; nil
	// when the Writer can't tell, or the answer has none. It returns the
	// API server's error when the apply fails, and then no status.
	ApplyStatus(ctx context.Context, key Key, uid types.UID, status []byte) (stored []byte, err error)
	// ApplyFinalizer applies the metadata of the object key names, with
	// finalizer among its finalizers when present is true and without it
	// otherwise. A finalizer that another field manager set too stays on
	// the object when the controller lets go of it: ApplyFinalizer then
	// returns a *FinalizerHeldError.
	ApplyFinalizer(ctx context.Context, key Key, uid types.UID, finalizer string, present bool) error
}

// FinalizerHeldError reports a finalizer that stayed on an object after the
// controller applied its metadata without it, because another field manager
// set it too, such as a kubectl edit that added it by hand.
type FinalizerHeldError struct {
	// Finalizer is the finalizer that stayed.
	Finalizer string
	// Managers are the field managers that still hold it, when the Writer
	// could tell.
	Managers []string
}

func (e *FinalizerHeldError) Error() string {
	switch len(e.Managers) {
	case 0:
		return fmt.Sprintf("finalizer %q is also set by another field manager, and stays until it is removed there", e.Finalizer)
	case 1:
		return fmt.Sprintf("finalizer %q is also set by field manager %q, and stays until it is removed there", e.Finalizer, e.Managers[0])
	}
	quoted := make([]string, len(e.Managers))
	for i, m := range e.Managers {
		quoted[i] = strconv.Quote(m)
	}
	return fmt.Sprintf("finalizer %q is also set by field managers %s, and stays until they remove it", e.Finalizer, strings.Join(quoted, ", "))
}
