package apptest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/loam-dev/loam/app"
)

// Network is an in-memory TCP network, an app.Network whose connections
// live in the test's own process. It works inside testing/synctest
// bubbles: a Read, Write, Accept or Dial that waits is durably blocked,
// and deadlines run on the bubble's clock. Connections buffer, so TLS and
// HTTP/2 work over them as over TCP.
//
// Addresses are host:port, and a host is any name: "api.test:443" is as
// good as "127.0.0.1:8080". A listener on a wildcard host (empty, 0.0.0.0
// or ::) accepts the dials of its port to this machine's loopback names
// (localhost, 127.0.0.1, ::1) and to the wildcard itself; a dial to a
// loopback name tries a listener on that exact address first. Port 0 in
// Listen picks a free port, which the listener's Addr reports.
//
// Dial fails at once, with an error matching syscall.ECONNREFUSED, when
// nothing listens on the address or its listener is closed. Partition
// makes an address go silent and Heal brings it back.
//
// A Network's connections and listeners must be used by one bubble, or by
// none: testing/synctest forbids waking a bubble's goroutine from outside.
// The zero Network is not usable; NewNetwork returns one.
type Network struct {
	mu   sync.Mutex
	cond *sync.Cond
	// listeners holds the open listeners by their address's key.
	listeners map[hostPort]*listener
	// pipes holds the live connections by their listener's key, so
	// Partition can silence them.
	pipes map[hostPort]map[*pipe]struct{}
	// silent holds the partitioned addresses.
	silent map[hostPort]bool
	// nextPort is the next port Listen tries for port 0; nextEphemeral the
	// next local port of a dialing end.
	nextPort, nextEphemeral int
}

var _ app.Network = (*Network)(nil)

// NewNetwork returns an empty Network.
func NewNetwork() *Network {
	n := &Network{
		listeners:     map[hostPort]*listener{},
		pipes:         map[hostPort]map[*pipe]struct{}{},
		silent:        map[hostPort]bool{},
		nextPort:      firstListenPort,
		nextEphemeral: firstEphemeralPort,
	}
	n.cond = sync.NewCond(&n.mu)
	return n
}

// The ports Listen picks for port 0, and the ports of dialing ends, come
// from two ranges that never meet, so a reported address is never reused
// by the other.
const (
	firstListenPort    = 30000
	firstEphemeralPort = 49152
	lastPort           = 65535
)

// hostPort is an address's key: its host, canonical, and its port.
type hostPort struct {
	host string
	port int
}

// wildcardHost is the canonical host of "", "0.0.0.0" and "::".
const wildcardHost = ""

// loopbackHost is the canonical host of every loopback name.
const loopbackHost = "127.0.0.1"

func canonicalHost(h string) string {
	h = strings.ToLower(h)
	switch h {
	case "", "0.0.0.0", "::":
		return wildcardHost
	case "localhost", "127.0.0.1", "::1":
		return loopbackHost
	}
	return h
}

// String is the address a dial to the key reaches; a wildcard's is the
// loopback's.
func (k hostPort) String() string {
	host := k.host
	if host == wildcardHost {
		host = loopbackHost
	}
	return net.JoinHostPort(host, strconv.Itoa(k.port))
}

// addr is a net.Addr on a Network.
type addr struct {
	network, address string
}

func (a addr) Network() string { return a.network }
func (a addr) String() string  { return a.address }

// parseAddress splits address into its key. A port of 0 is kept only when
// allowZero.
func parseAddress(address string, allowZero bool) (hostPort, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return hostPort{}, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > lastPort || (port == 0 && !allowZero) {
		return hostPort{}, &net.AddrError{Err: "invalid port", Addr: address}
	}
	return hostPort{host: canonicalHost(host), port: port}, nil
}

func checkNetwork(network string) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
		return nil
	}
	return net.UnknownNetworkError(network)
}

// Listen announces on address, for network "tcp", "tcp4" or "tcp6". It
// fails with an error matching syscall.EADDRINUSE when a listener already
// holds the address, and with one naming a malformed address or an
// unknown network.
func (n *Network) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	fail := func(err error) error {
		return &net.OpError{Op: "listen", Net: network, Addr: addr{network, address}, Err: err}
	}
	if err := checkNetwork(network); err != nil {
		return nil, fail(err)
	}
	key, err := parseAddress(address, true)
	if err != nil {
		return nil, fail(err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fail(err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if key.port == 0 {
		if key.port, err = n.freePort(key.host); err != nil {
			return nil, fail(err)
		}
	} else if n.inUse(key) {
		return nil, fail(os.NewSyscallError("bind", syscall.EADDRINUSE))
	}
	l := &listener{net: n, key: key, addr: addr{network, key.String()}}
	l.cond = sync.NewCond(&l.mu)
	n.listeners[key] = l
	return l, nil
}

// inUse reports whether a listener holds key, or a wildcard and a
// loopback listener would share its port. n.mu must be held.
func (n *Network) inUse(key hostPort) bool {
	if _, ok := n.listeners[key]; ok {
		return true
	}
	switch key.host {
	case wildcardHost:
		_, ok := n.listeners[hostPort{loopbackHost, key.port}]
		return ok
	case loopbackHost:
		_, ok := n.listeners[hostPort{wildcardHost, key.port}]
		return ok
	}
	return false
}

// freePort returns a port no listener on host holds. n.mu must be held.
func (n *Network) freePort(host string) (int, error) {
	for range firstEphemeralPort - firstListenPort {
		port := n.nextPort
		n.nextPort++
		if n.nextPort == firstEphemeralPort {
			n.nextPort = firstListenPort
		}
		if !n.inUse(hostPort{host, port}) {
			return port, nil
		}
	}
	return 0, os.NewSyscallError("bind", syscall.EADDRINUSE)
}

// route returns the key of the listener a dial to key reaches, and that
// listener, or nil when none listens. n.mu must be held.
func (n *Network) route(key hostPort) (hostPort, *listener) {
	if l, ok := n.listeners[key]; ok {
		return key, l
	}
	if key.host == wildcardHost || key.host == loopbackHost {
		for _, host := range []string{loopbackHost, wildcardHost} {
			k := hostPort{host, key.port}
			if l, ok := n.listeners[k]; ok {
				return k, l
			}
		}
	}
	return key, nil
}

// Dial connects to address, for network "tcp", "tcp4" or "tcp6". It fails
// with an error matching syscall.ECONNREFUSED when nothing listens there.
// While the address is partitioned, Dial waits for Heal or for ctx to end,
// as a dial whose packets are dropped does, and fails with ctx's error.
func (n *Network) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	fail := func(err error) error {
		return &net.OpError{Op: "dial", Net: network, Addr: addr{network, address}, Err: err}
	}
	if err := checkNetwork(network); err != nil {
		return nil, fail(err)
	}
	key, err := parseAddress(address, false)
	if err != nil {
		return nil, fail(err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.cond.Broadcast()
	})
	defer stop()
	for {
		if err := ctx.Err(); err != nil {
			return nil, fail(err)
		}
		routed, l := n.route(key)
		if n.silent[routed] {
			n.cond.Wait()
			continue
		}
		if l == nil {
			return nil, fail(os.NewSyscallError("connect", syscall.ECONNREFUSED))
		}
		local := addr{network, net.JoinHostPort(loopbackHost, strconv.Itoa(n.ephemeralPort()))}
		remote := addr{network, address}
		dialer, accepted := newPipe(local, remote, func(p *pipe) { n.forget(routed, p) })
		accepted.local = l.addr
		if !l.enqueue(accepted) {
			return nil, fail(os.NewSyscallError("connect", syscall.ECONNREFUSED))
		}
		if n.pipes[routed] == nil {
			n.pipes[routed] = map[*pipe]struct{}{}
		}
		n.pipes[routed][dialer.p] = struct{}{}
		return dialer, nil
	}
}

// ephemeralPort returns the next local port of a dialing end. n.mu must be
// held.
func (n *Network) ephemeralPort() int {
	port := n.nextEphemeral
	n.nextEphemeral++
	if n.nextEphemeral > lastPort {
		n.nextEphemeral = firstEphemeralPort
	}
	return port
}

// forget drops a closed pipe.
func (n *Network) forget(key hostPort, p *pipe) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.pipes[key], p)
	if len(n.pipes[key]) == 0 {
		delete(n.pipes, key)
	}
}

// Partition makes address go silent, as a network that drops every packet
// does: its open connections stop delivering bytes in both directions
// without closing, so a Read waits until its deadline, and new dials to
// it wait until their context ends. Writes are buffered until a
// connection's buffer is full. address is what a client dials; it names
// the listener the dial would reach. It fails only on a malformed
// address.
func (n *Network) Partition(address string) error {
	return n.setSilent(address, true)
}

// Heal undoes Partition: the address's connections deliver what was held
// back, and dials to it proceed. It fails only on a malformed address.
func (n *Network) Heal(address string) error {
	return n.setSilent(address, false)
}

func (n *Network) setSilent(address string, silent bool) error {
	key, err := parseAddress(address, false)
	if err != nil {
		return fmt.Errorf("apptest: partition %q: %w", address, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	routed, _ := n.route(key)
	if silent {
		n.silent[routed] = true
	} else {
		delete(n.silent, routed)
	}
	for p := range n.pipes[routed] {
		p.setHeld(silent)
	}
	n.cond.Broadcast()
	return nil
}

// listener is a Network's net.Listener.
type listener struct {
	net  *Network
	key  hostPort
	addr addr

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []*pipeConn
	closed bool
}

// enqueue hands c to Accept, reporting false when the listener is closed.
func (l *listener) enqueue(c *pipeConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.queue = append(l.queue, c)
	l.cond.Broadcast()
	return true
}

// Accept waits for the next dial and returns its connection. It fails
// with net.ErrClosed once the listener is closed.
func (l *listener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if l.closed {
			return nil, &net.OpError{Op: "accept", Net: l.addr.network, Addr: l.addr, Err: net.ErrClosed}
		}
		if len(l.queue) > 0 {
			c := l.queue[0]
			l.queue[0] = nil
			l.queue = l.queue[1:]
			return c, nil
		}
		l.cond.Wait()
	}
}

// Close stops the listener: new dials to its address are refused, and
// connections it had not yet accepted are closed. Accepted connections
// stay open.
func (l *listener) Close() error {
	l.net.mu.Lock()
	if l.net.listeners[l.key] == l {
		delete(l.net.listeners, l.key)
	}
	l.net.mu.Unlock()

	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return &net.OpError{Op: "close", Net: l.addr.network, Addr: l.addr, Err: net.ErrClosed}
	}
	l.closed = true
	pending := l.queue
	l.queue = nil
	l.cond.Broadcast()
	l.mu.Unlock()

	var errs []error
	for _, c := range pending {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Addr is the address the listener holds, with the port Listen picked for
// port 0. A wildcard listener reports 127.0.0.1, so its Addr can be
// dialed.
func (l *listener) Addr() net.Addr { return l.addr }
