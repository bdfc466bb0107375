package reconcile

import (
	"sync"

	"github.com/loam-dev/loam/ports"
)

// MaxCauses is how many distinct related objects a key's reconcile reports
// as its causes; changes beyond it are only counted. A key that many
// objects map to, such as every Pod of a selector, would otherwise hold an
// unbounded list while it waits in the queue, and a standby's keys wait
// until it leads.
const MaxCauses = 8

// causes holds, for each key, the related changes that queued it since a
// pass last took it.
type causes struct {
	mu      sync.Mutex
	byKey   map[ports.Key]caused
	stopped bool
}

// caused is one key's related changes: the distinct objects, at most
// MaxCauses of them, and how many changes beyond the bound were of objects
// not among them.
type caused struct {
	objects []ports.Cause
	dropped int
}

func newCauses() *causes {
	return &causes{byKey: map[ports.Key]caused{}}
}

// add records that c's change queued key. It does nothing once the causes
// have stopped: nothing takes them then.
func (cs *causes) add(key ports.Key, c ports.Cause) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.stopped {
		return
	}
	k := cs.byKey[key]
	for _, o := range k.objects {
		if o == c {
			return
		}
	}
	if len(k.objects) < MaxCauses {
		k.objects = append(k.objects, c)
	} else {
		k.dropped++
	}
	cs.byKey[key] = k
}

// take removes key's causes and returns them: a pass reports each change
// once.
func (cs *causes) take(key ports.Key) caused {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	k, ok := cs.byKey[key]
	if ok {
		delete(cs.byKey, key)
	}
	return k
}

// stop drops every key's causes, and every one added from then on.
func (cs *causes) stop() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.stopped = true
	clear(cs.byKey)
}
