package events_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/adapters/events"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func failure(note string) events.Event {
	return events.Event{
		Regarding: events.Regarding{APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached", Namespace: "ns", Name: "m", UID: "u1"},
		Type:      "Warning", Reason: "ReconcileFailed", Action: "Reconcile", Note: note,
	}
}

func TestSeries(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gap    time.Duration // between occurrences
		n      int
		events int
		count  int32 // the last Event's series count, 0 for none
	}{
		{name: "one", n: 1, events: 1},
		{name: "repeats in a window are one series", gap: time.Second, n: 100, events: 1, count: 100},
		{name: "past the window a new Event", gap: 7 * time.Minute, n: 2, events: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cs := fake.NewClientset()
				w, err := events.New(events.Config{Client: cs.EventsV1(), Controller: "memcached", Instance: "pod-0", Logger: logr.Discard()})
				require.NoError(t, err)
				w.Start()
				for range tc.n {
					w.Record(failure("boom"))
					synctest.Wait()
					time.Sleep(tc.gap)
				}
				require.NoError(t, w.Close(t.Context()))
				list, err := cs.EventsV1().Events("ns").List(context.Background(), metav1.ListOptions{})
				require.NoError(t, err)
				require.Len(t, list.Items, tc.events)
				last := list.Items[len(list.Items)-1]
				require.Equal(t, "memcached", last.ReportingController)
				require.Equal(t, "pod-0", last.ReportingInstance)
				if tc.count == 0 {
					require.Nil(t, last.Series)
				} else {
					require.NotNil(t, last.Series)
					require.Equal(t, tc.count, last.Series.Count)
				}
				require.Zero(t, w.Dropped())
			})
		})
	}
}

func TestNoteCutAndDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset()
		w, err := events.New(events.Config{Client: cs.EventsV1(), Controller: "c", Instance: "i", Buffer: 2})
		require.NoError(t, err)
		// Not started: the buffer of 2 fills, the third is dropped.
		w.Record(failure(strings.Repeat("x", 2000)))
		w.Record(failure("b"))
		w.Record(failure("c"))
		require.Equal(t, int64(1), w.Dropped())
		require.NoError(t, w.Close(t.Context()))
		list, err := cs.EventsV1().Events("ns").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, 1, "the notes differ, the series is one")
		require.Len(t, list.Items[0].Note, events.NoteLimit)
		require.Equal(t, int32(2), list.Items[0].Series.Count)
		w.Record(failure("after close"))
		require.Equal(t, int64(2), w.Dropped())
	})
}

func TestNewMistakes(t *testing.T) {
	_, err := events.New(events.Config{})
	require.ErrorContains(t, err, "Client is nil")
	require.ErrorContains(t, err, "Controller is empty")
	require.ErrorContains(t, err, "Instance is empty")
}

func TestSeriesIgnoresResourceVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset()
		w, err := events.New(events.Config{Client: cs.EventsV1(), Controller: "memcached", Instance: "pod-0"})
		require.NoError(t, err)
		w.Start()
		// Every failed reconcile's status write makes a new version.
		for i := range 5 {
			e := failure("boom")
			e.Regarding.ResourceVersion = strconv.Itoa(100 + i)
			w.Record(e)
			synctest.Wait()
		}
		require.NoError(t, w.Close(t.Context()))
		list, err := cs.EventsV1().Events("ns").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, 1)
		require.Equal(t, "100", list.Items[0].Regarding.ResourceVersion, "the Event names the first occurrence's version")
		require.NotNil(t, list.Items[0].Series)
		require.Equal(t, int32(5), list.Items[0].Series.Count)
	})
}

func TestCutNote(t *testing.T) {
	for _, tc := range []struct {
		name, note string
		want       int // the cut note's length
	}{
		{"short", "boom", 4},
		{"exactly the limit", strings.Repeat("x", events.NoteLimit), events.NoteLimit},
		{"one byte over", strings.Repeat("x", events.NoteLimit+1), events.NoteLimit},
		// 1023 bytes of x, then a 3-byte character across the limit.
		{"a character across the limit", strings.Repeat("x", events.NoteLimit-1) + "€€", events.NoteLimit - 1},
		{"a character ending at the limit", strings.Repeat("x", events.NoteLimit-3) + "€€", events.NoteLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := events.CutNote(tc.note)
			require.Len(t, got, tc.want)
			require.True(t, utf8.ValidString(got))
			require.True(t, strings.HasPrefix(tc.note, got))
		})
	}
}

// hangingEvents is an API server that never answers a create: each waits
// for its request's context, and counts as it ends.
type hangingEvents struct {
	eventsv1client.EventInterface
	started chan<- struct{}
	ended   *atomic.Int32
}

func (h hangingEvents) Create(ctx context.Context, _ *eventsv1.Event, _ metav1.CreateOptions) (*eventsv1.Event, error) {
	h.started <- struct{}{}
	<-ctx.Done()
	h.ended.Add(1)
	return nil, ctx.Err()
}

type hangingGetter struct{ events hangingEvents }

func (g hangingGetter) Events(string) eventsv1client.EventInterface { return g.events }

func (g hangingGetter) RESTClient() rest.Interface { return nil }

func TestCloseCancelsARequestPastItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{}, 1)
		var ended atomic.Int32
		w, err := events.New(events.Config{
			Client:     hangingGetter{hangingEvents{started: started, ended: &ended}},
			Controller: "memcached", Instance: "pod-0",
		})
		require.NoError(t, err)
		w.Start()
		w.Record(failure("boom"))
		<-started // the goroutine is inside its create

		// Close's context ends before the write's own deadline.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err = w.Close(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		// Close returned only after the goroutine's request ended: nothing
		// the Writer started is left running (goleak checks the rest).
		require.Equal(t, int32(1), ended.Load())
	})
}

// countingHang is an API server that never answers a create, and counts
// the creates it was sent.
type countingHang struct {
	eventsv1client.EventInterface
	sent *atomic.Int32
}

func (h countingHang) Create(ctx context.Context, _ *eventsv1.Event, _ metav1.CreateOptions) (*eventsv1.Event, error) {
	h.sent.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

type countingHangGetter struct{ events countingHang }

func (g countingHangGetter) Events(string) eventsv1client.EventInterface { return g.events }

func (g countingHangGetter) RESTClient() rest.Interface { return nil }

// Close, while the goroutine's write hangs and ticks queue behind it,
// waits for that write and then makes its own last one: the goroutine
// takes no tick after the stop. It took one at random half the time, each
// another WriteTimeout, so a hanging API server held an App's stop past
// its grace period. Twenty stops, so that taking ticks at random fails.
func TestCloseTakesNoMoreTicksAfterTheStop(t *testing.T) {
	for i := range 20 {
		synctest.Test(t, func(t *testing.T) {
			var sent atomic.Int32
			w, err := events.New(events.Config{
				Client:     countingHangGetter{countingHang{sent: &sent}},
				Controller: "memcached", Instance: "pod-0",
			})
			require.NoError(t, err)
			w.Start()
			w.Record(failure("boom"))
			synctest.Wait() // the goroutine is inside its create
			require.Equal(t, int32(1), sent.Load())
			time.Sleep(events.DefaultWriteTimeout - time.Millisecond) // ticks queue behind the write
			synctest.Wait()

			require.NoError(t, w.Close(t.Context()))
			require.Equal(t, int32(2), sent.Load(), "stop %d: the write in flight and Close's own, and no tick's", i)
		})
	}
}
