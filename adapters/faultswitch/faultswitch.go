// Package faultswitch is the kill switch of an App's failure injection
// kept in a ConfigMap: it watches the one ConfigMap and turns a
// fault.Switch on and off as the ConfigMap's key says, as soon as each
// change's watch event reaches it. kube.FaultSwitch checks its settings
// and assembles it.
package faultswitch

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/loam-dev/loam/adapters/informer"
	reporting "github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app/fault"
)

// Config is what a Switch reads, and what it turns.
type Config struct {
	// Faults is the App's failure injection, which the Switch turns.
	Faults *fault.Injector
	// Client lists and watches the ConfigMap. It is not used when Faults
	// is inert.
	Client kubernetes.Interface
	// Namespace and Name name the ConfigMap; Key is the key of its data
	// that holds on or off.
	Namespace, Name, Key string
	// Logger is where the Switch's records go: each change, and the
	// failed lists and watches client-go logs.
	Logger log.Logger
}

// Switch turns Config.Faults as the ConfigMap says: on while its key
// holds "on", off while it holds "off", either with surrounding
// whitespace; off, with a WARN record saying why, for anything else, a
// missing key, or a ConfigMap that doesn't exist or is deleted. It fails
// closed: a ConfigMap that no list or watch has read for
// informer.ConfigMapStale (30 s), because RBAC no longer grants it or the
// watch is broken, turns it off too, with a WARN record naming the last
// error, until a list or a watch reads it again. Serve runs it; Shutdown
// stops it.
type Switch struct {
	c  Config
	sw *fault.Switch
	// where names the switch on its records: loam.fit.switch.
	where attribute.KeyValue

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	doneOnce sync.Once
}

// New returns the Switch that c describes, and turns c.Faults off until
// the ConfigMap's first read, so that no scenario applies before the
// switch is known.
func New(c Config) *Switch {
	where := fault.SwitchKey.String(fmt.Sprintf("configmap %s/%s, key %s", c.Namespace, c.Name, c.Key))
	s := &Switch{
		c: c, where: where,
		sw:   fault.NewSwitch(c.Faults, c.Logger, where),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	c.Faults.SetOn(false)
	return s
}

// Serve watches the ConfigMap and sets the switch as it says, until ctx
// ends or Shutdown is called; then it returns nil. With inert failure
// injection, it watches nothing and waits for either.
func (s *Switch) Serve(ctx context.Context) error {
	defer s.doneOnce.Do(func() { close(s.done) })
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Owned by Serve: it returns once ctx ends, which Serve's return
	// ensures.
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if !s.c.Faults.Enabled() {
		<-ctx.Done()
		return nil
	}
	// client-go's reflector logs a refused list, an RBAC mistake, through
	// the context's logger: the App's records.
	ctx = klog.NewContext(ctx, reporting.NewLogger(s.c.Logger, s.where))
	return informer.WatchConfigMap(ctx, s.c.Client, s.c.Namespace, s.c.Name, func(data map[string]string, found bool, err error) {
		s.read(ctx, data, found, err)
	})
}

// read sets the switch as the ConfigMap's data says, found or not, or
// off when err says it can't be read.
func (s *Switch) read(ctx context.Context, data map[string]string, found bool, err error) {
	switch text, ok := data[s.c.Key]; {
	case err != nil:
		s.sw.Set(ctx, "", err)
	case !found:
		s.sw.Set(ctx, "", fmt.Errorf("configmap %s/%s: not found", s.c.Namespace, s.c.Name))
	case !ok:
		s.sw.Set(ctx, "", fmt.Errorf("configmap %s/%s: no key %s", s.c.Namespace, s.c.Name, s.c.Key))
	default:
		s.sw.Set(ctx, text, nil)
	}
}

// Shutdown stops Serve, and returns once it has returned, or with ctx's
// cause when ctx ends first, which the caller names the Switch in.
func (s *Switch) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stop) })
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
