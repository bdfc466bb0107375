package queue_test

import (
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/util/workqueue"

	"github.com/loam-dev/loam/adapters/queue"
	"github.com/loam-dev/loam/ports"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var key = ports.Key{Namespace: "default", Name: "a"}

func newQueue(t *testing.T, metrics workqueue.MetricsProvider) *queue.Queue {
	t.Helper()
	q := queue.New(queue.Config{Name: "memcached-controller", Metrics: metrics})
	t.Cleanup(q.ShutDown)
	return q
}

func TestNew_holds_each_key_once(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, nil)
		q.Add(key)
		q.Add(key)
		require.Equal(t, 1, q.Len())

		got, shutdown := q.Get()
		require.False(t, shutdown)
		require.Equal(t, key, got)
		// Added while processed: handed out again only once Done.
		q.Add(key)
		require.Equal(t, 0, q.Len())
		q.Done(key)
		require.Equal(t, 1, q.Len())
	})
}

func TestNew_ShutDown_does_not_wait_for_the_backlog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := queue.New(queue.Config{Name: "c"})
		q.Add(key)
		q.Add(ports.Key{Name: "b"})
		q.ShutDown()
		require.True(t, q.ShuttingDown())
		// Adds after the shutdown are dropped.
		q.Add(ports.Key{Name: "c"})
		require.Equal(t, 2, q.Len())
	})
}

func TestNew_names_the_metrics_of_its_provider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &recordingProvider{}
		q := newQueue(t, p)
		q.Add(key)
		require.ElementsMatch(t, []string{"depth", "adds", "latency", "work_duration", "unfinished_work_seconds", "longest_running_processor_seconds"}, p.kinds())
		for _, n := range p.names() {
			require.Equal(t, "memcached-controller", n)
		}
		require.Equal(t, int64(1), p.adds.Load())
	})
}

// recordingProvider records the metrics a queue asks it for, counts adds
// and keeps the depth.
type recordingProvider struct {
	mu    sync.Mutex
	asked []struct{ kind, name string }
	adds  counter
	depth counter
}

func (p *recordingProvider) ask(kind, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, struct{ kind, name string }{kind, name})
}

func (p *recordingProvider) kinds() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, a := range p.asked {
		out = append(out, a.kind)
	}
	return out
}

func (p *recordingProvider) names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, a := range p.asked {
		out = append(out, a.name)
	}
	return out
}

func (p *recordingProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	p.ask("depth", name)
	return &p.depth
}

func (p *recordingProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	p.ask("adds", name)
	return &p.adds
}

func (p *recordingProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	p.ask("latency", name)
	return nop{}
}

func (p *recordingProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	p.ask("work_duration", name)
	return nop{}
}

func (p *recordingProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	p.ask("unfinished_work_seconds", name)
	return nop{}
}

func (p *recordingProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	p.ask("longest_running_processor_seconds", name)
	return nop{}
}

func (p *recordingProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	p.ask("retries", name)
	return nop{}
}

type nop struct{}

func (nop) Inc()            {}
func (nop) Dec()            {}
func (nop) Set(float64)     {}
func (nop) Observe(float64) {}

type counter struct {
	mu sync.Mutex
	n  int64
}

func (c *counter) Inc() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
}

func (c *counter) Dec() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
}

func (c *counter) Load() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
