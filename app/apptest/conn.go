package apptest

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// pipeCapacity is how many bytes one direction of a connection holds
// before a Write waits for the reader, as a TCP socket's buffers would. It
// is large enough that TLS and HTTP/2, which write from both ends at once,
// never wait on each other, and small enough that a writer whose reader
// has stopped feels it.
const pipeCapacity = 1 << 20

// pipe is the shared state of one in-memory connection's two ends. Unlike
// net.Pipe it buffers, so both ends may write at once without either
// reading, and it can hold its bytes back to play a silent network.
//
// Every wait is on cond, which testing/synctest counts as durably
// blocking, whichever bubble created the pipe; deadlines are time.AfterFunc
// timers, which run on the bubble's fake clock.
type pipe struct {
	mu   sync.Mutex
	cond *sync.Cond
	// dirs[0] carries bytes the dialing end writes, dirs[1] bytes the
	// accepted end writes.
	dirs [2]direction
	// held keeps bytes written from reaching their reader while the
	// network is partitioned.
	held bool
	// open counts the ends not yet closed; the network forgets the pipe at
	// zero.
	open int
	// forget tells the network the pipe is gone. It runs without mu held.
	forget func(*pipe)
}

// direction is the bytes flowing one way through a pipe.
type direction struct {
	buf []byte
	// off is how much of buf the reader has taken.
	off int
	// writerClosed makes the reader see io.EOF once it has read buf.
	writerClosed bool
	// readerClosed makes the writer's Writes fail, as writing to a socket
	// the peer has closed does.
	readerClosed bool
}

func (d *direction) len() int { return len(d.buf) - d.off }

// take moves up to len(b) waiting bytes into b.
func (d *direction) take(b []byte) int {
	n := copy(b, d.buf[d.off:])
	d.off += n
	if d.off == len(d.buf) {
		d.buf, d.off = d.buf[:0], 0
	}
	return n
}

// newPipe returns the two ends of a new connection: the dialing end first.
func newPipe(dialLocal, acceptLocal net.Addr, forget func(*pipe)) (*pipeConn, *pipeConn) {
	p := &pipe{open: 2, forget: forget}
	p.cond = sync.NewCond(&p.mu)
	dialer := &pipeConn{p: p, side: 0, local: dialLocal, remote: acceptLocal}
	accepted := &pipeConn{p: p, side: 1, local: acceptLocal, remote: dialLocal}
	dialer.read.conn, dialer.write.conn = dialer, dialer
	accepted.read.conn, accepted.write.conn = accepted, accepted
	return dialer, accepted
}

// setHeld holds back or releases the pipe's bytes.
func (p *pipe) setHeld(held bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = held
	p.cond.Broadcast()
}

// pipeConn is one end of a pipe. It is a net.Conn whose Reads and Writes
// honour deadlines with os.ErrDeadlineExceeded, whose Reads return io.EOF
// once the peer has closed and its bytes are read, and whose calls after
// Close fail with net.ErrClosed.
type pipeConn struct {
	p             *pipe
	side          int
	local, remote net.Addr
	// closed is guarded by p.mu.
	closed      bool
	read, write deadline
}

var _ net.Conn = (*pipeConn)(nil)

// deadline is one of a pipeConn's deadlines. Its fields are guarded by
// the pipe's mu.
type deadline struct {
	conn    *pipeConn
	timer   *time.Timer
	expired bool
	// gen tells a timer that fires after its deadline was replaced that it
	// is stale.
	gen uint64
}

// set replaces the deadline with t. p.mu must be held.
func (d *deadline) set(t time.Time) {
	d.gen++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.expired = false
	if t.IsZero() {
		return
	}
	wait := time.Until(t)
	if wait <= 0 {
		d.expired = true
		d.conn.p.cond.Broadcast()
		return
	}
	gen := d.gen
	p := d.conn.p
	d.timer = time.AfterFunc(wait, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if d.gen == gen {
			d.expired = true
			p.cond.Broadcast()
		}
	})
}

// stop releases the deadline's timer. p.mu must be held.
func (d *deadline) stop() {
	d.gen++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

func (c *pipeConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.local.Network(), Source: c.local, Addr: c.remote, Err: err}
}

// Read reads the bytes the peer wrote, waiting for some while there are
// none, the peer is open and the deadline has not passed.
func (c *pipeConn) Read(b []byte) (int, error) {
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	in := &p.dirs[1-c.side]
	for {
		switch {
		case c.closed:
			return 0, c.opError("read", net.ErrClosed)
		case c.read.expired:
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		case len(b) == 0:
			return 0, nil
		case !p.held && in.len() > 0:
			n := in.take(b)
			p.cond.Broadcast()
			return n, nil
		case !p.held && in.writerClosed:
			return 0, io.EOF
		}
		p.cond.Wait()
	}
}

// Write writes all of b, waiting for the reader to make room while the
// pipe is full. It fails once either end is closed or the deadline has
// passed, returning how much of b was written.
func (c *pipeConn) Write(b []byte) (int, error) {
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	out := &p.dirs[c.side]
	n := 0
	for {
		switch {
		case c.closed:
			return n, c.opError("write", net.ErrClosed)
		case out.readerClosed && !p.held:
			// While the network is silent, the peer's close has not
			// reached this end yet.
			return n, c.opError("write", os.NewSyscallError("write", syscall.EPIPE))
		case c.write.expired:
			return n, c.opError("write", os.ErrDeadlineExceeded)
		case n == len(b):
			return n, nil
		}
		if room := pipeCapacity - out.len(); room > 0 {
			k := min(room, len(b)-n)
			out.buf = append(out.buf, b[n:n+k]...)
			n += k
			p.cond.Broadcast()
			continue
		}
		p.cond.Wait()
	}
}

// Close closes this end. The peer reads what was written before it, then
// io.EOF; its Writes fail. Bytes the peer wrote that this end never read
// are dropped.
func (c *pipeConn) Close() error {
	p := c.p
	p.mu.Lock()
	if c.closed {
		p.mu.Unlock()
		return c.opError("close", net.ErrClosed)
	}
	c.closed = true
	c.read.stop()
	c.write.stop()
	p.dirs[c.side].writerClosed = true
	in := &p.dirs[1-c.side]
	in.readerClosed = true
	in.buf, in.off = nil, 0
	p.open--
	gone := p.open == 0
	p.cond.Broadcast()
	p.mu.Unlock()
	if gone && p.forget != nil {
		p.forget(p)
	}
	return nil
}

func (c *pipeConn) LocalAddr() net.Addr  { return c.local }
func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets both the read and the write deadline.
func (c *pipeConn) SetDeadline(t time.Time) error {
	return c.setDeadlines(t, true, true)
}

// SetReadDeadline sets the time after which Read fails with
// os.ErrDeadlineExceeded; the zero time means never.
func (c *pipeConn) SetReadDeadline(t time.Time) error {
	return c.setDeadlines(t, true, false)
}

// SetWriteDeadline sets the time after which Write fails with
// os.ErrDeadlineExceeded; the zero time means never.
func (c *pipeConn) SetWriteDeadline(t time.Time) error {
	return c.setDeadlines(t, false, true)
}

func (c *pipeConn) setDeadlines(t time.Time, read, write bool) error {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	if c.closed {
		return c.opError("set deadline", net.ErrClosed)
	}
	if read {
		c.read.set(t)
	}
	if write {
		c.write.set(t)
	}
	return nil
}
