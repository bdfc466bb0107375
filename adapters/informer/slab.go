package informer

import (
	"encoding/binary"
	"fmt"
	"iter"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The sizes of a slab's chunks: room for chunkRecords records of the one
// that starts it (but no more than half what the slab ever placed), or a
// quarter of the bytes the store's records may take before the next
// compaction, whichever is more, rounded up to a power of two, between
// minChunk and maxChunk: so that a store of a few objects costs little,
// the tail of a chunk too short for the next record wastes a small share
// of it, and the allocator's size classes and pages hold a chunk with no
// bytes to spare. A record over maxChunk/4 gets an allocation of its
// own, so that no chunk's tail is wasted on it; the collector frees it
// once dropped, and no compaction moves it or counts it.
const (
	minChunk = 1 << 10
	maxChunk = 64 << 10
	// chunkRecords is how many records of its first's size a chunk
	// holds, at least, once the slab has placed that much.
	chunkRecords = 32
	// slabSlack is the garbage a slab may hold whatever its live bytes,
	// so that a store of few objects doesn't compact on every change.
	slabSlack = 16 << 10
	// recordHead is the bytes of a record's length, which begin it.
	recordHead = 4
)

// slab holds records, each a run of bytes that starts with its own
// length, in large chunks of memory that hold no pointer, so that the
// garbage collector marks one chunk where it would scan an object's
// every field, and a record in a chunk costs no allocation of its own.
//
// A record is never written once a ref points to it: a reader loads the
// ref once and reads bytes nothing changes, with no lock, and the
// slices and strings it was handed stay valid for as long as it holds
// them, the collector keeping their chunk alive. A record replaced or
// dropped is garbage inside a live chunk, so once the garbage passes a
// quarter of the bytes the last compaction moved (plus slabSlack), the
// slab compacts: it copies the records of every ref its refs yields —
// the store's — into new chunks and points each ref there, and the old
// chunks are freed once nothing reads them. Records put since that no
// store yet holds stay in the old chunks until the next compaction. A
// slice a reader holds keeps its whole chunk alive, up to maxChunk.
//
// A compaction runs in the informer's transform, under its queue's lock,
// but the store may be written meanwhile (client-go's queue releases the
// lock while its objects are stored, under UnlockWhileProcessingFIFO):
// a record the store has just dropped is moved for nothing, and one it
// has just taken stays where it is, the same bytes either way.
type slab struct {
	mu sync.Mutex
	// chunk is the chunk records are appended to: its length is the
	// part in use.
	chunk []byte
	// scratch is where put builds a record before copying it in.
	scratch []byte
	// appended is the bytes of the records placed in chunks since the
	// last compaction, the ones it moved included, and live the bytes
	// it moved.
	appended, live int
	// placed is the bytes of every record the slab ever placed.
	placed int
	// compactions counts the compactions, for the tests.
	compactions int
	// refs yields every ref whose record is in use; a compaction moves
	// those. Set before the first put.
	refs iter.Seq[*ref]
}

// ref is where a record is: a pointer to its first byte, which a
// compaction moves to a copy of the record. The zero ref holds none.
type ref struct{ p atomic.Pointer[byte] }

// record returns the bytes of r's record, or nil when r holds none. No
// one writes them: the slice is capped, so an append copies.
func (r *ref) record() []byte {
	p := r.p.Load()
	if p == nil {
		return nil
	}
	n := binary.LittleEndian.Uint32(unsafe.Slice(p, recordHead))
	return unsafe.Slice(p, n)
}

// put builds a record with build, which appends its bytes to dst, and
// points r at it: r must be a ref no reader has seen. It fails, putting
// nothing, for a record of 4 GiB or more.
func (s *slab) put(r *ref, build func(dst []byte) []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := build(append(s.scratch[:0], make([]byte, recordHead)...))
	if cap(rec) <= maxChunk {
		s.scratch = rec[:0]
	} else {
		// One large record mustn't stay allocated for the next.
		s.scratch = nil
	}
	if len(rec) > math.MaxUint32 {
		return fmt.Errorf("a record of %d bytes: a slab holds records under 4 GiB", len(rec))
	}
	binary.LittleEndian.PutUint32(rec, uint32(len(rec)))
	if !ownAllocation(len(rec)) && s.appended+len(rec)-s.live > s.live/4+slabSlack {
		s.compact()
	}
	r.p.Store(s.place(rec))
	return nil
}

// place copies rec into the slab and returns where its copy starts.
func (s *slab) place(rec []byte) *byte {
	n := len(rec)
	s.placed += n
	if ownAllocation(n) {
		// Not the slab's garbage once dropped: the collector frees it.
		own := make([]byte, n)
		copy(own, rec)
		return &own[0]
	}
	s.appended += n
	if cap(s.chunk)-len(s.chunk) < n {
		want := max((s.live+slabSlack)/4, min(chunkRecords*n, s.placed/2), minChunk, n)
		size := min(1<<bits.Len(uint(want-1)), maxChunk)
		s.chunk = make([]byte, 0, size)
	}
	at := len(s.chunk)
	s.chunk = append(s.chunk, rec...)
	return &s.chunk[at]
}

// compact copies the record of every ref refs yields into new chunks and
// points the ref at its copy, so that the old chunks hold only what
// readers still read, and the records that no store held yet. The chunk
// being filled is filled on: the garbage in it is less than a chunk.
func (s *slab) compact() {
	s.compactions++
	s.appended = 0
	if s.refs == nil {
		return
	}
	for r := range s.refs {
		rec := r.record()
		// A record in an allocation of its own is in no chunk: moving it
		// would free nothing, and copy it at every compaction.
		if rec == nil || ownAllocation(len(rec)) {
			continue
		}
		r.p.Store(s.place(rec))
	}
	s.live = s.appended
}

// ownAllocation reports whether a record of n bytes gets an allocation of
// its own, no chunk's.
func ownAllocation(n int) bool { return n > maxChunk/4 }

// footprint returns the bytes placed since the last compaction, the
// ones it moved included, and the bytes it moved, for the tests: the
// chunks a store's records are in hold no more than the first and the
// chunk being filled.
func (s *slab) footprint() (appended, live int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appended, s.live
}
