package reconcile

import (
	"hash/maphash"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/ports"
)

// stored remembers, for each key whose status the API server stored
// otherwise than the controller asked for it, what it asked and what the
// server answered. A status schema's default, a field the schema prunes, a
// number or a time the server writes its own way: such a status never
// compares equal to the Reconciler's, and without the memory every pass
// of the object would apply it again, for nothing.
//
// Each key holds one hash, of the status asked for, the object's uid and
// the status the answer held, each in canonical form: 16 bytes a key, and
// the map's slots and control bytes besides, which about double that;
// only for the keys that need it, since a key whose answer held what it
// asked for is dropped. The key itself is held as a hash too, so the
// memory holds no string of the cache's. Two keys with the same hash only
// share a place: an entry holds for a pass only when the pass asks for
// the same status of an object with the same uid and status, and the
// hashes are seeded per Loop, so no object can be made to collide on
// purpose. What a collision of the second hash would cost is a status not
// applied, until what is asked or stored changes or the process restarts
// with a new seed; it takes a pass whose status differs from the one
// stored, with a chance of 2⁻⁶⁴ each, which no cluster's lifetime of
// passes comes near.
type stored struct {
	seed  maphash.Seed
	mu    sync.Mutex
	byKey map[uint64]uint64
}

func newStored() *stored {
	return &stored{seed: maphash.MakeSeed(), byKey: map[uint64]uint64{}}
}

// keyOf returns key's hash.
func (s *stored) keyOf(key ports.Key) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	_, _ = h.WriteString(key.Namespace)
	// No name or namespace holds a NUL, so the two can't run together.
	_ = h.WriteByte(0)
	_, _ = h.WriteString(key.Name)
	return h.Sum64()
}

// sum returns the hash of asked, uid and answered, canonical forms of
// statuses, which JSON never lets hold a NUL: the separators keep the
// three apart.
func (s *stored) sum(asked []byte, uid types.UID, answered []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	_, _ = h.Write(asked)
	_ = h.WriteByte(0)
	_, _ = h.WriteString(string(uid))
	_ = h.WriteByte(0)
	_, _ = h.Write(answered)
	return h.Sum64()
}

// holds reports whether the latest apply of key's status asked for asked,
// and the server answered with current, of the object uid: applying asked
// again would change nothing.
func (s *stored) holds(key ports.Key, asked []byte, uid types.UID, current []byte) bool {
	k, want := s.keyOf(key), s.sum(asked, uid, current)
	s.mu.Lock()
	got, ok := s.byKey[k]
	s.mu.Unlock()
	return ok && got == want
}

// learn remembers that the server answered the apply of asked to key's
// object uid with answered, in place of what key's previous apply left.
func (s *stored) learn(key ports.Key, asked []byte, uid types.UID, answered []byte) {
	k, sum := s.keyOf(key), s.sum(asked, uid, answered)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byKey[k] = sum
}

// forget drops what key's latest apply left, if anything: the object is
// gone, another replica's, or its latest apply failed.
func (s *stored) forget(key ports.Key) {
	k := s.keyOf(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byKey, k)
}

// len returns how many keys are remembered.
func (s *stored) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byKey)
}
