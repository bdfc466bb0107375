package reconcile

import "bytes"

// DecodedChanged is StatusChanged as it was before the canonical forms:
// the same bytes are the same status, and any others are decoded and
// compared as values. The fuzz test holds StatusChanged to it.
func DecodedChanged(cached, next []byte) bool {
	return !bytes.Equal(cached, next) && decodedChanged(cached, next)
}
