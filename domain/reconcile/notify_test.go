package reconcile_test

import (
	"testing"

	"github.com/loam-dev/loam/ports"
)

func TestLoop_Notify_queues_changes_ahead_of_the_background(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ev         ports.Event
		background bool
	}{
		{name: "a change, the object's own or an owned object's", ev: change},
		{name: "a related object's change", ev: related(configMap("a"))},
		{name: "an object of the first list", ev: ports.Event{Key: key, Initial: true}, background: true},
		{name: "a related object of the first list", ev: ports.Event{Key: key, Initial: true, Cause: configMap("a")}, background: true},
		{name: "a resync", ev: resync, background: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMocks(t)
			l := m.loop(t, "", nil)
			if tc.background {
				m.queue.EXPECT().AddBackground(key)
			} else {
				m.queue.EXPECT().Add(key)
			}
			l.Notify(tc.ev)
		})
	}
}
