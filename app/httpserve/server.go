// Package httpserve is the life of an App's HTTP Services, httphealth's,
// httpmetrics' and the webhook server's: it listens through the Setup's
// Host when Serve is called, over TLS when the Config has a TLS
// configuration, stops accepting when Serve's context ends or Shutdown is
// called, lets the requests in flight finish within Shutdown's context,
// and logs what net/http reports through the Setup's LoggerProvider, never
// the log package's global logger.
package httpserve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	"github.com/loam-dev/loam/app"
)

// attrAddress names the address in the Server's log records.
var attrAddress = attribute.Key("server.address")

// Config is what a Server serves, and where.
type Config struct {
	// Package names the Service's package in the errors Serve and
	// Shutdown return, such as "httphealth".
	Package string
	// What names what is served in the record Serve logs once it listens,
	// such as "probes": "serving probes on 127.0.0.1:8081".
	What string
	// Network is the Host's, which Serve listens through.
	Network app.Network
	// Address is where Serve listens.
	Address string
	// Handler answers every request.
	Handler http.Handler
	// Logger takes the Server's records.
	Logger log.Logger
	// ReadHeaderTimeout and IdleTimeout bound clients that misbehave.
	ReadHeaderTimeout, IdleTimeout time.Duration
	// TLS, when set, makes Serve serve HTTPS: it wraps the listener with
	// tls.NewListener and this configuration, which must hold a
	// certificate or a GetCertificate. Nil serves plain HTTP.
	TLS *tls.Config
}

// Server serves one Handler, as an app.Service's Serve and Shutdown. New
// makes one.
type Server struct {
	pkg, what string
	network   app.Network
	address   string
	server    *http.Server
	logger    log.Logger
	tls       *tls.Config
	ready     chan struct{} // closed once Serve listens

	mu       sync.Mutex
	served   bool          // Serve was called
	stopped  bool          // Shutdown was called, or Serve's context ended
	listener *onceListener // what Serve listens on, once it does
}

// New returns a Server for c. It opens nothing: Serve listens.
func New(c Config) *Server {
	s := &Server{
		pkg:     c.Package,
		what:    c.What,
		network: c.Network,
		address: c.Address,
		logger:  c.Logger,
		tls:     c.TLS,
		ready:   make(chan struct{}),
	}
	s.server = &http.Server{
		Handler:           c.Handler,
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		IdleTimeout:       c.IdleTimeout,
		ErrorLog:          s.ErrorLog(),
		TLSConfig:         c.TLS,
	}
	return s
}

// Ready returns a channel closed once Serve listens, so that a test or a
// dependent Part knows the Server answers. It stays open when Serve never
// listens.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr returns the address Serve listens on, which tells a listener on
// port 0 its port, or nil before Serve listens.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return nil
	}
	return s.listener.Addr()
}

// ErrorLog returns a logger whose every line becomes a WARN record of the
// Server's Logger, for what net/http and promhttp report, such as a
// connection that could not be accepted or a handler's panic.
func (s *Server) ErrorLog() *stdlog.Logger { return stdlog.New(warnings{s.logger}, "", 0) }

// Serve listens on the Address through the Network, over TLS when the
// Config has a TLS configuration, and answers requests until ctx ends or
// Shutdown is called, then returns nil. Connections in
// flight are left for Shutdown to finish. Serve returns an error when it
// cannot listen, when accepting fails, or when it is called a second time.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	if s.served {
		s.mu.Unlock()
		return fmt.Errorf("%s: Serve called twice", s.pkg)
	}
	s.served = true
	stopped := s.stopped
	s.mu.Unlock()
	if stopped || ctx.Err() != nil {
		return nil
	}

	l, err := s.network.Listen(ctx, "tcp", s.address)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s: listening on %s: %w", s.pkg, s.address, err)
	}
	if s.tls != nil {
		l = tls.NewListener(l, s.tls)
	}
	ol := &onceListener{Listener: l}
	s.mu.Lock()
	s.listener = ol
	// Shutdown may have run while Listen did: it found no listener to
	// close, so this one must not be served.
	stopped = s.stopped
	s.mu.Unlock()
	if stopped {
		_ = ol.Close()
		return nil
	}
	close(s.ready)
	s.Info(ctx, "serving "+s.what+" on "+l.Addr().String(), attrAddress.String(l.Addr().String()))

	stopServing := context.AfterFunc(ctx, s.stopAccepting)
	defer stopServing()
	err = s.server.Serve(ol)
	if errors.Is(err, http.ErrServerClosed) || s.isStopped() {
		return nil
	}
	return fmt.Errorf("%s: serving on %s: %w", s.pkg, l.Addr(), err)
}

// stopAccepting closes the listener, so that Serve returns, and closes
// idle connections, leaving requests in flight to finish.
func (s *Server) stopAccepting() {
	s.mu.Lock()
	s.stopped = true
	l := s.listener
	s.mu.Unlock()
	s.server.SetKeepAlivesEnabled(false)
	if l != nil {
		_ = l.Close()
	}
}

// isStopped reports whether Shutdown was called or Serve's context ended.
func (s *Server) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// Shutdown stops the Server: it stops accepting requests, so Serve
// returns nil, and waits for those in flight to be answered. When ctx ends
// first, it closes their connections and returns an error wrapping ctx's.
// A Server shut down before it is served never listens.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	if err := s.server.Shutdown(ctx); err != nil {
		_ = s.server.Close()
		return fmt.Errorf("%s: shutting down: %w", s.pkg, err)
	}
	return nil
}

// Info emits an INFO record with body and attrs.
func (s *Server) Info(ctx context.Context, body string, attrs ...attribute.KeyValue) {
	var r log.Record
	r.SetTimestamp(time.Now())
	r.SetSeverity(log.SeverityInfo)
	r.SetSeverityText(log.SeverityInfo.String())
	r.SetBody(attribute.StringValue(body))
	r.AddAttributes(attrs...)
	s.logger.Emit(ctx, r)
}

// warnings writes each line it is given as a WARN record.
type warnings struct{ logger log.Logger }

func (w warnings) Write(p []byte) (int, error) {
	var r log.Record
	r.SetTimestamp(time.Now())
	r.SetSeverity(log.SeverityWarn)
	r.SetSeverityText(log.SeverityWarn.String())
	r.SetBody(attribute.StringValue(strings.TrimSpace(string(p))))
	w.logger.Emit(context.Background(), r)
	return len(p), nil
}

// onceListener closes its Listener once: Serve's context and Shutdown may
// both close it, and http.Server reports a second Close's error.
type onceListener struct {
	net.Listener
	once sync.Once
}

// Close closes the Listener the first time, and does nothing after.
func (l *onceListener) Close() error {
	var err error
	l.once.Do(func() { err = l.Listener.Close() })
	return err
}
