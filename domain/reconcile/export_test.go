package reconcile

import (
	"bytes"
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/ports"
)

// DecodedChanged is StatusChanged as it was before the canonical forms:
// the same bytes are the same status, and any others are decoded and
// compared as values. The fuzz test holds StatusChanged to it.
func DecodedChanged(cached, next []byte) bool {
	return !bytes.Equal(cached, next) && decodedChanged(cached, next)
}

// InPass returns ctx marked as the context of a pass of the controller
// over the object key names, with the uid and the JSON object.
func InPass(ctx context.Context, controller string, key ports.Key, uid types.UID, object []byte) context.Context {
	return withPass(ctx, Pass{Controller: controller, Key: key, UID: uid, object: object})
}

// Remembered returns how many keys the Loop remembers the stored status
// of.
func (l *Loop) Remembered() int { return l.stored.len() }
