package transport

import (
	"context"
	"net"
	"sync"
)

// conns keeps every connection a transport has dialed and not yet closed,
// so that they can all be closed at shutdown, in use or not.
//
// http.Transport can only close the connections it knows to be idle. A
// watch stopped just before shutdown keeps its HTTP/2 connection busy
// until the stream's reset has been read, so it isn't idle yet when the
// App stops, and its read loop would live on for IdleConnTimeout.
type conns struct {
	mu   sync.Mutex
	open map[*conn]struct{}
}

// dial wraps d so that every connection it returns is kept in c until it
// is closed.
func (c *conns) dial(d func(ctx context.Context, network, address string) (net.Conn, error)) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		nc, err := d(ctx, network, address)
		if err != nil {
			return nil, err
		}
		tc := &conn{Conn: nc, owner: c}
		c.mu.Lock()
		if c.open == nil {
			c.open = make(map[*conn]struct{})
		}
		c.open[tc] = struct{}{}
		c.mu.Unlock()
		return tc, nil
	}
}

// closeAll closes every connection still open.
func (c *conns) closeAll() {
	c.mu.Lock()
	open := make([]*conn, 0, len(c.open))
	for tc := range c.open {
		open = append(open, tc)
	}
	c.mu.Unlock()
	for _, tc := range open {
		_ = tc.Close()
	}
}

func (c *conns) forget(tc *conn) {
	c.mu.Lock()
	delete(c.open, tc)
	c.mu.Unlock()
}

// conn is a dialed connection that leaves its owner's set when closed.
type conn struct {
	net.Conn
	owner *conns
	once  sync.Once
}

func (tc *conn) Close() error {
	tc.once.Do(func() { tc.owner.forget(tc) })
	return tc.Conn.Close()
}
