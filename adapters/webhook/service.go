package webhook

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	"github.com/loam-dev/loam/domain/controller"
)

// Service is a Server's life as an App's Service, kube.Webhooks' runtime:
// it serves once, reports whether it serves, and makes the Gates of the
// Controllers that wait for it to listen. NewService makes one.
type Service struct {
	server  *Server
	address string
	// served is closed once Serve has returned.
	served    chan struct{}
	serveOnce sync.Once
}

// NewService returns the Service of a Server for c. It fails as New does.
func NewService(c Config) (*Service, error) {
	server, err := New(c)
	if err != nil {
		return nil, err
	}
	return &Service{server: server, address: c.Address, served: make(chan struct{})}, nil
}

// Serve serves as the Server's Serve does, and marks the Service as no
// longer serving once it returns, however it returns.
func (s *Service) Serve(ctx context.Context) error {
	defer s.serveOnce.Do(func() { close(s.served) })
	return s.server.Serve(ctx)
}

// Shutdown stops the Server; see Server.Shutdown.
func (s *Service) Shutdown(ctx context.Context) error { return s.server.Shutdown(ctx) }

// Ready returns a channel closed once Serve listens.
func (s *Service) Ready() <-chan struct{} { return s.server.Ready() }

// Addr returns the address Serve listens on, or nil before it does.
func (s *Service) Addr() net.Addr { return s.server.Addr() }

// Healthy reports whether the Service serves: true from when it listens
// until Serve returns. It never fails.
func (s *Service) Healthy(context.Context) (bool, error) {
	select {
	case <-s.served:
		return false, nil
	default:
	}
	select {
	case <-s.server.Ready():
		return true, nil
	default:
		return false, nil
	}
}

// String names the Service by its Address, as the App's records about it
// do: kube webhooks (:9443).
func (s *Service) String() string { return "kube webhooks (" + s.address + ")" }

// The attributes of the records about a Controller waiting for a Service.
const (
	// ControllerNameKey names the Controller that waits.
	ControllerNameKey = attribute.Key("loam.kube.controller.name")
	// AddressKey is the Address of the Service it waits for.
	AddressKey = attribute.Key("loam.kube.webhooks.address")
)

// Gate returns the domain's Gate that holds the Controller named
// controllerName until s listens, for at most bound, with an INFO record
// "waiting for the webhooks to serve" through logger when it starts to
// wait and a WARN record when bound passes first, each with
// ControllerNameKey and AddressKey.
func (s *Service) Gate(logger log.Logger, controllerName string, bound time.Duration) controller.Gate {
	emit := func(sev log.Severity, body string) {
		var r log.Record
		r.SetTimestamp(time.Now())
		r.SetSeverity(sev)
		r.SetSeverityText(sev.String())
		r.SetBody(attribute.StringValue(body))
		r.AddAttributes(ControllerNameKey.String(controllerName), AddressKey.String(s.address))
		logger.Emit(context.Background(), r)
	}
	return controller.Gate{
		Name: s.String(), Open: s.Ready(), Bound: bound,
		Waiting: func() { emit(log.SeverityInfo, "waiting for the webhooks to serve") },
		Passed: func() {
			emit(log.SeverityWarn, fmt.Sprintf("the webhooks did not serve within %v: carrying on without them", bound))
		},
	}
}
