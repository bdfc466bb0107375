package queue_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/adapters/queue"
	"github.com/loam-dev/loam/ports"
)

// k is the key of name.
func k(name string) ports.Key { return ports.Key{Namespace: "default", Name: name} }

// keys returns the keys of prefix0 to prefix<n-1>.
func keys(prefix string, n int) []ports.Key {
	out := make([]ports.Key, n)
	for i := range out {
		out[i] = k(fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// handOut takes n keys from q, marking each Done at once, and returns
// their names in the order q handed them out.
func handOut(t *testing.T, q *queue.Queue, n int) []string {
	t.Helper()
	var out []string
	for range n {
		key, shutdown := q.Get()
		require.False(t, shutdown)
		q.Done(key)
		out = append(out, key.Name)
	}
	return out
}

func TestQueue_hands_out_changes_ahead_of_the_background(t *testing.T) {
	for _, tc := range []struct {
		name string
		// add queues keys; want is the order they go out in.
		add  func(q *queue.Queue)
		want []string
	}{
		{
			name: "changes go first, each priority in the order it came",
			add: func(q *queue.Queue) {
				q.AddBackground(k("b0"))
				q.Add(k("c0"))
				q.AddBackground(k("b1"))
				q.Add(k("c1"))
			},
			want: []string{"c0", "c1", "b0", "b1"},
		},
		{
			name: "a waiting background key added as a change is promoted, behind the changes before it",
			add: func(q *queue.Queue) {
				q.AddBackground(k("b0"))
				q.AddBackground(k("b1"))
				q.AddBackground(k("b2"))
				q.Add(k("c0"))
				q.Add(k("b2"))
			},
			want: []string{"c0", "b2", "b0", "b1"},
		},
		{
			name: "a waiting change added in the background keeps its place",
			add: func(q *queue.Queue) {
				q.AddBackground(k("b0"))
				q.Add(k("c0"))
				q.Add(k("c1"))
				q.AddBackground(k("c0"))
			},
			want: []string{"c0", "c1", "b0"},
		},
		{
			name: "a key promoted, handed out and queued in the background again waits at its new place",
			add: func(q *queue.Queue) {
				q.AddBackground(k("b0"))
				q.AddBackground(k("b1"))
				q.Add(k("b0"))
				key, _ := q.Get() // b0, as a change
				q.Done(key)
				q.AddBackground(k("b0"))
			},
			want: []string{"b1", "b0"},
		},
		{
			name: "every add of a waiting key is one key",
			add: func(q *queue.Queue) {
				for range 3 {
					q.AddBackground(k("b0"))
					q.Add(k("c0"))
					q.Add(k("b0"))
					q.AddBackground(k("c0"))
				}
				q.AddBackground(k("b1"))
			},
			want: []string{"c0", "b0", "b1"},
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

func TestQueue_a_key_added_while_processed_goes_out_at_the_higher_priority_of_those_adds(t *testing.T) {
	for _, tc := range []struct {
		name string
		// readd adds the key being processed again.
		readd func(q *queue.Queue, key ports.Key)
		want  []string
	}{
		{
			name:  "in the background",
			readd: func(q *queue.Queue, key ports.Key) { q.AddBackground(key) },
			want:  []string{"b1", "p"},
		},
		{
			name:  "as a change",
			readd: func(q *queue.Queue, key ports.Key) { q.Add(key) },
			want:  []string{"p", "b1"},
		},
		{
			name: "as both, the change first",
			readd: func(q *queue.Queue, key ports.Key) {
				q.Add(key)
				q.AddBackground(key)
			},
			want: []string{"p", "b1"},
		},
		{
			name: "as both, the background first",
			readd: func(q *queue.Queue, key ports.Key) {
				q.AddBackground(key)
				q.Add(key)
			},
			want: []string{"p", "b1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := newQueue(t, nil)
				q.AddBackground(k("p"))
				q.AddBackground(k("b1"))
				p, _ := q.Get()
				tc.readd(q, p)
				require.Equal(t, 1, q.Len(), "not queued until Done")
				q.Done(p)
				require.Equal(t, tc.want, handOut(t, q, 2))
			})
		})
	}
}

func TestQueue_a_pass_that_began_after_a_change_answers_it(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, nil)
		q.AddBackground(k("p"))
		q.AddBackground(k("b1"))
		p, _ := q.Get()
		q.Add(p)
		q.Done(p) // queued again as a change
		again, _ := q.Get()
		require.Equal(t, p, again)
		// The pass handed out after the change answered it: an add while
		// it runs is a new one, at its own priority.
		q.AddBackground(again)
		q.Done(again)
		require.Equal(t, []string{"b1", "p"}, handOut(t, q, 2))
	})
}

// fairness is the order of ChangesPerBackground changes and then one
// background key, repeated: the fairness rule's exact bound.
func TestQueue_hands_out_a_background_key_after_every_ChangesPerBackground_changes_in_a_row(t *testing.T) {
	const n = queue.ChangesPerBackground
	for _, tc := range []struct {
		name string
		add  func(q *queue.Queue)
		want string // one letter a key: c a change, b the background
	}{
		{
			name: "with both waiting",
			add: func(q *queue.Queue) {
				for _, key := range keys("b", 3) {
					q.AddBackground(key)
				}
				for _, key := range keys("c", 3*n+2) {
					q.Add(key)
				}
			},
			want: strings.Repeat(strings.Repeat("c", n)+"b", 3) + "cc",
		},
		{
			name: "changes handed out while no background key waits don't count",
			add: func(q *queue.Queue) {
				for _, key := range keys("c", n+1) {
					q.Add(key)
				}
			},
			want: strings.Repeat("c", n+1),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := newQueue(t, nil)
				tc.add(q)
				require.Equal(t, tc.want, letters(handOut(t, q, len(tc.want))))
			})
		})
	}

	t.Run("the run starts when a background key comes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, nil)
			for _, key := range keys("c", 2*n) {
				q.Add(key)
			}
			require.Equal(t, strings.Repeat("c", 5), letters(handOut(t, q, 5)))
			q.AddBackground(k("b0"))
			require.Equal(t, strings.Repeat("c", n)+"b"+strings.Repeat("c", n-5),
				letters(handOut(t, q, 2*n-5+1)))
		})
	})

	t.Run("a stream of changes never starves the background", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, nil)
			background := keys("b", 100)
			for _, key := range background {
				q.AddBackground(key)
			}
			// Each change handed out is followed by another, so changes
			// always wait: the background gets exactly one key in n+1.
			changes := 0
			q.Add(k(fmt.Sprintf("c%d", changes)))
			var got []string
			for range (n + 1) * len(background) {
				key, _ := q.Get()
				q.Done(key)
				got = append(got, key.Name)
				if strings.HasPrefix(key.Name, "c") {
					changes++
					q.Add(k(fmt.Sprintf("c%d", changes)))
				}
			}
			require.Equal(t, strings.Repeat(strings.Repeat("c", n)+"b", len(background)), letters(got))
			require.Equal(t, 1, q.Len(), "only the last change waits")
		})
	})
}

// letters returns the first letter of each name.
func letters(names []string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteByte(n[0])
	}
	return b.String()
}

func TestQueue_ShutDown_drops_adds_of_either_priority_and_hands_out_the_backlog_in_order(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := queue.New(queue.Config{Name: "c"})
		q.AddBackground(k("b0"))
		q.Add(k("c0"))
		p, _ := q.Get() // c0
		q.Add(p)        // added while processed, then the queue shuts down
		q.ShutDown()
		require.True(t, q.ShuttingDown())
		q.Add(k("c1"))
		q.AddBackground(k("b1"))
		q.Add(k("b0"))
		require.Equal(t, 1, q.Len())
		q.Done(p) // still queued again: it was added before the shutdown
		require.Equal(t, []string{"c0", "b0"}, handOut(t, q, 2))
		_, shutdown := q.Get()
		require.True(t, shutdown)
	})
}

func TestQueue_never_hands_one_key_to_two_workers_at_once(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, &recordingProvider{})
		all := keys("k", 20)
		var (
			mu       sync.Mutex
			inFlight = map[ports.Key]bool{}
			twice    []ports.Key
			handed   = map[ports.Key]int{}
			seq      int
		)
		var workers sync.WaitGroup
		for range 4 {
			workers.Go(func() {
				for {
					key, shutdown := q.Get()
					if shutdown {
						return
					}
					mu.Lock()
					if inFlight[key] {
						twice = append(twice, key)
					}
					inFlight[key] = true
					handed[key]++
					seq++
					other := all[seq%len(all)]
					mu.Unlock()
					// Adds of the key being processed, and of another.
					q.Add(other)
					q.AddBackground(key)
					mu.Lock()
					inFlight[key] = false
					mu.Unlock()
					q.Done(key)
				}
			})
		}
		var adders sync.WaitGroup
		for i := range 4 {
			adders.Go(func() {
				for j := range 200 {
					key := all[(i*7+j)%len(all)]
					if j%2 == 0 {
						q.Add(key)
					} else {
						q.AddBackground(key)
					}
				}
			})
		}
		adders.Wait()
		q.ShutDown()
		workers.Wait()
		require.Empty(t, twice)
		for _, key := range all {
			require.Positive(t, handed[key], "%s was never handed out", key)
		}
	})
}

func TestQueue_records_the_metrics_of_both_priorities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &recordingProvider{}
		q := newQueue(t, p)
		q.AddBackground(k("b0"))
		q.Add(k("c0"))
		q.Add(k("b0")) // a promotion is no new add
		q.AddBackground(k("c0"))
		require.Equal(t, int64(2), p.adds.Load())
		require.Equal(t, int64(2), p.depth.Load())

		key, _ := q.Get()
		require.Equal(t, int64(1), p.depth.Load())
		// Added while processed: client-go counts it waiting from the add,
		// though it is queued only at Done.
		q.AddBackground(key)
		require.Equal(t, int64(3), p.adds.Load())
		require.Equal(t, int64(2), p.depth.Load())
		q.Done(key)
		require.Equal(t, int64(2), p.depth.Load())
		handOut(t, q, 2)
		require.Zero(t, p.depth.Load())
		require.Equal(t, int64(3), p.adds.Load())
	})
}
