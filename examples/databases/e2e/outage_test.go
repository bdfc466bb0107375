package e2e

import (
	"io"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/examples/databases"
	"github.com/loam-dev/loam/kubetest/wait"
)

// proxy stands between the controller and PostgreSQL: stopping it is
// PostgreSQL going away for the controller, without stopping the real
// server that other tests use.
type proxy struct {
	t    *testing.T
	port int

	mu      sync.Mutex
	ln      net.Listener
	conns   []net.Conn
	stopped bool
	wg      sync.WaitGroup
}

// newProxy starts a proxy to 127.0.0.1:5432 on a free port, and stops it
// when the test ends.
func newProxy(t *testing.T) *proxy {
	t.Helper()
	p := &proxy{t: t}
	p.listen("127.0.0.1:0")
	t.Cleanup(p.stop)
	return p
}

// listen starts accepting at address.
func (p *proxy) listen(address string) {
	p.t.Helper()
	ln, err := net.Listen("tcp", address)
	require.NoError(p.t, err)
	p.mu.Lock()
	p.ln, p.stopped = ln, false
	p.port = ln.Addr().(*net.TCPAddr).Port
	p.mu.Unlock()
	p.wg.Add(1)
	go p.accept(ln)
}

// accept pipes each connection ln accepts to PostgreSQL, until ln closes.
func (p *proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", "127.0.0.1:5432")
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			_, _ = c.Close(), up.Close()
			continue
		}
		p.conns = append(p.conns, c, up)
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// pipe copies from src to dst until either closes, then closes both.
func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_, _ = dst.Close(), src.Close()
}

// stop closes the listener and every connection, and waits for the
// proxy's goroutines: PostgreSQL is gone for whoever dials the proxy.
func (p *proxy) stop() {
	p.mu.Lock()
	if !p.stopped {
		p.stopped = true
		_ = p.ln.Close()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// restart listens again on the same port.
func (p *proxy) restart() {
	p.t.Helper()
	p.listen(net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)))
}

func TestDatabase_reports_PostgreSQL_unavailable_and_recovers_when_it_is_back(t *testing.T) {
	pg := newProxy(t)
	r := startWith(t, map[string]string{"POSTGRES_PORT": strconv.Itoa(pg.port)})

	r.create(t, "before", nil)
	wait.For(t, patience, func() bool {
		d, _ := r.get(t, "before")
		c := ready(d)
		return c != nil && c.Status == metav1.ConditionTrue
	}, "the first Database never became Ready", r)

	pg.stop()
	database := r.create(t, "during", nil)
	wait.For(t, patience, func() bool {
		d, _ := r.get(t, "during")
		c := ready(d)
		return c != nil && c.Reason == databases.ReasonPostgresUnavailable
	}, "the Database never reported PostgreSQL unavailable", r)
	d, _ := r.get(t, "during")
	require.Equal(t, metav1.ConditionFalse, ready(d).Status)
	require.False(t, exists(t, database))

	// Retried with backoff, it is provisioned once PostgreSQL is back.
	pg.restart()
	wait.For(t, patience, func() bool {
		d, _ := r.get(t, "during")
		c := ready(d)
		return c != nil && c.Status == metav1.ConditionTrue
	}, "the Database never recovered", r)
	require.True(t, exists(t, database))
}
