package queue_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/adapters/queue"
)

func TestQueue_hands_out_requeues_behind_the_changes_and_ahead_of_the_background(t *testing.T) {
	for _, tc := range []struct {
		name string
		// add queues keys; want is the order they go out in.
		add  func(q *queue.Queue)
		want []string
	}{
		{
			name: "changes, then requeues, then the background, each in the order it came",
			add: func(q *queue.Queue) {
				q.AddBackground(k("b0"))
				q.AddRequeue(k("r0"))
				q.Add(k("c0"))
				q.AddBackground(k("b1"))
				q.AddRequeue(k("r1"))
				q.Add(k("c1"))
			},
			want: []string{"c0", "c1", "r0", "r1", "b0", "b1"},
		},
		{
			name: "a waiting background key requeued moves to the end of the requeues",
			add: func(q *queue.Queue) {
				q.AddBackground(k("b0"))
				q.AddBackground(k("b1"))
				q.AddRequeue(k("r0"))
				q.AddRequeue(k("b1"))
			},
			want: []string{"r0", "b1", "b0"},
		},
		{
			name: "a waiting requeue added as a change moves to the end of the changes",
			add: func(q *queue.Queue) {
				q.AddRequeue(k("r0"))
				q.AddRequeue(k("r1"))
				q.Add(k("c0"))
				q.Add(k("r1"))
			},
			want: []string{"c0", "r1", "r0"},
		},
		{
			name: "a waiting requeue added in the background keeps its place",
			add: func(q *queue.Queue) {
				q.AddRequeue(k("r0"))
				q.AddRequeue(k("r1"))
				q.AddBackground(k("r0"))
				q.AddBackground(k("b0"))
			},
			want: []string{"r0", "r1", "b0"},
		},
		{
			name: "a waiting change requeued keeps its place",
			add: func(q *queue.Queue) {
				q.Add(k("c0"))
				q.Add(k("c1"))
				q.AddRequeue(k("c0"))
				q.AddRequeue(k("r0"))
			},
			want: []string{"c0", "c1", "r0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := newQueue(t, nil)
				tc.add(q)
				require.Equal(t, len(tc.want), q.Len())
				require.Equal(t, tc.want, handOut(t, q, len(tc.want)))
				require.Zero(t, q.Len())
			})
		})
	}
}

func TestQueue_a_requeue_added_while_processed_goes_out_as_a_requeue_at_Done(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, nil)
		q.AddBackground(k("p"))
		q.AddBackground(k("b1"))
		p, _ := q.Get()
		q.AddRequeue(p)
		q.AddBackground(p)
		require.Equal(t, 1, q.Len(), "not queued until Done")
		q.Done(p)
		require.Equal(t, []string{"p", "b1"}, handOut(t, q, 2))
	})
}

// stream hands out total keys from q, marking each Done, and after each
// key of a class in streaming adds a new key of that class, so those
// classes always wait. It returns one letter a key: c a change, r a
// requeue, b the background.
func stream(t *testing.T, q *queue.Queue, total int, streaming string) string {
	t.Helper()
	next := map[byte]int{}
	add := func(class byte) {
		key := k(fmt.Sprintf("%c%d", class, next[class]))
		next[class]++
		switch class {
		case 'c':
			q.Add(key)
		case 'r':
			q.AddRequeue(key)
		}
	}
	for i := range len(streaming) {
		add(streaming[i])
	}
	var got []string
	for range total {
		key, shutdown := q.Get()
		require.False(t, shutdown)
		q.Done(key)
		got = append(got, key.Name)
		if strings.IndexByte(streaming, key.Name[0]) >= 0 {
			add(key.Name[0])
		}
	}
	return letters(got)
}

func TestQueue_keeps_every_class_draining(t *testing.T) {
	const (
		c = queue.ChangesPerBackground
		r = queue.RequeuesPerBackground
	)
	for _, tc := range []struct {
		name      string
		streaming string
		want      string
	}{
		{
			name:      "a stream of requeues hands out a background key after every RequeuesPerBackground",
			streaming: "r",
			want:      strings.Repeat(strings.Repeat("r", r)+"b", 10),
		},
		{
			name:      "a stream of changes hands out a requeue or a background key after every ChangesPerBackground, requeues first",
			streaming: "c",
			want: strings.Repeat(strings.Repeat("c", c)+"r", 3) +
				strings.Repeat(strings.Repeat("c", c)+"b", 7),
		},
		{
			name:      "streams of changes and requeues still leave the background its share",
			streaming: "cr",
			want: strings.Repeat(
				strings.Repeat(strings.Repeat("c", c)+"r", r)+strings.Repeat("c", c)+"b",
				3),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := newQueue(t, nil)
				for _, key := range keys("b", 100) {
					q.AddBackground(key)
				}
				if !strings.Contains(tc.streaming, "r") {
					for _, key := range keys("r", 3) {
						q.AddRequeue(key)
					}
				}
				require.Equal(t, tc.want, stream(t, q, len(tc.want), tc.streaming))
			})
		})
	}
}
