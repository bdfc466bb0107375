package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"sync"
)

// errNoHost is what the Host Run uses without WithHost returns: Run never
// reaches the real machine on its own.
var errNoHost = errors.New("app: the App's Host has no network or files: run it with app.WithHost")

// noNetwork refuses every dial and listen.
type noNetwork struct{}

func (noNetwork) Dial(_ context.Context, network, address string) (net.Conn, error) {
	return nil, fmt.Errorf("dial %s %s: %w", network, address, errNoHost)
}

func (noNetwork) Listen(_ context.Context, network, address string) (net.Listener, error) {
	return nil, fmt.Errorf("listen %s %s: %w", network, address, errNoHost)
}

// noFS refuses every open.
type noFS struct{}

func (noFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: errNoHost}
}

// emptyEnvironment has no variables.
type emptyEnvironment struct{}

func (emptyEnvironment) LookupEnv(string) (string, bool) { return "", false }

// Names returns none.
func (emptyEnvironment) Names() []string { return nil }

// completeHost fills h's missing parts with ones that refuse every call.
func completeHost(h Host) Host {
	if h.Network == nil {
		h.Network = noNetwork{}
	}
	if h.FS == nil {
		h.FS = noFS{}
	}
	return h
}

// completeProcess fills p's missing parts with empty ones, and serializes
// writes to its streams: the runtime's log records and the App's own
// writes share them.
func completeProcess(p Process) Process {
	if p.Environment == nil {
		p.Environment = emptyEnvironment{}
	}
	if p.Stdout == nil {
		p.Stdout = io.Discard
	}
	if p.Stderr == nil {
		p.Stderr = io.Discard
	}
	p.Stdout = &lockedWriter{w: p.Stdout}
	p.Stderr = &lockedWriter{w: p.Stderr}
	p.Args = append([]string(nil), p.Args...)
	return p
}

// lockedWriter lets goroutines write to one stream, one whole write at a
// time, so two log lines never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
