package apptest

import (
	"context"
	"net"
	"sync"
	"syscall"

	"github.com/loam-dev/loam/app"
)

// Switch is an app.Network in front of another, whose connections a test
// can cut, as a pod cut off from the network sees it: Cut closes every
// connection the Switch has made or its listeners have accepted, and
// refuses every dial and listen until Restore. It is how a test takes a
// replica away from the API server without stopping it, or stops one
// without letting it release anything.
//
// The zero Switch is ready to use and dials through the real network
// (app.OSHost's), for tests of an App against a real server such as
// kubetest's.
type Switch struct {
	// Network is the network the Switch passes dials and listens on to;
	// nil is the real network.
	Network app.Network

	mu  sync.Mutex
	cut bool
	// open holds what the Switch made since the last Cut, for the next
	// Cut to close.
	open []interface{ Close() error }
}

var _ app.Network = (*Switch)(nil)

func (s *Switch) next() app.Network {
	if s.Network != nil {
		return s.Network
	}
	return app.OSHost().Network
}

// Dial dials address through the Switch's Network, and fails with
// ECONNREFUSED, as a dial to a port nothing listens on does, while the
// Switch is cut.
func (s *Switch) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	refused := &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	if s.isCut() {
		return nil, refused
	}
	c, err := s.next().Dial(ctx, network, address)
	if err != nil {
		return nil, err
	}
	if !s.keep(c) {
		return nil, refused
	}
	return c, nil
}

// Listen listens on address through the Switch's Network, and fails with
// ENETDOWN while the Switch is cut.
func (s *Switch) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	down := &net.OpError{Op: "listen", Net: network, Err: syscall.ENETDOWN}
	if s.isCut() {
		return nil, down
	}
	ln, err := s.next().Listen(ctx, network, address)
	if err != nil {
		return nil, err
	}
	if !s.keep(ln) {
		return nil, down
	}
	return &switchListener{Listener: ln, s: s}, nil
}

// switchListener is a listener a Switch made: what it accepts, the next
// Cut closes too, as a pod cut off from the network loses the
// connections others made to it.
type switchListener struct {
	net.Listener
	s *Switch
}

// Accept accepts a connection, and fails with ENETDOWN, closing it, when
// a Cut came while it was accepted.
func (l *switchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if !l.s.keep(c) {
		return nil, &net.OpError{Op: "accept", Net: l.Addr().Network(), Addr: l.Addr(), Err: syscall.ENETDOWN}
	}
	return c, nil
}

func (s *Switch) isCut() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cut
}

// keep adds c to what the next Cut closes, and reports true; or, when a
// Cut came while c was being made, closes it and reports false. The dial
// or listen itself runs unlocked, so a slow one doesn't hold up Cut.
func (s *Switch) keep(c interface{ Close() error }) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut {
		_ = c.Close()
		return false
	}
	s.open = append(s.open, c)
	return true
}

// Cut closes every connection and listener the Switch has made, and every
// connection its listeners have accepted, and refuses every dial and
// listen until Restore.
func (s *Switch) Cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cut = true
	for _, c := range s.open {
		_ = c.Close()
	}
	s.open = nil
}

// Restore lets dials and listens through again. What Cut closed stays
// closed: an App dials anew, as it would after a partition heals.
func (s *Switch) Restore() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cut = false
}
