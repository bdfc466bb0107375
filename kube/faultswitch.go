package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/log"
	lognoop "go.opentelemetry.io/otel/log/noop"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/adapters/faultswitch"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/ports"
)

// FaultSwitchSettings name the ConfigMap a FaultSwitch reads.
type FaultSwitchSettings struct {
	// Namespace is the ConfigMap's namespace. Required.
	Namespace string
	// Name is the ConfigMap's name. Required.
	Name string
	// Key is the key of the ConfigMap's data that holds on or off; ""
	// means DefaultFaultSwitchKey.
	Key string
}

// DefaultFaultSwitchKey is the key a FaultSwitch reads when its Settings
// name none.
const DefaultFaultSwitchKey = "switch"

// FaultSwitch is the kill switch of an App's failure injection, kept in
// a ConfigMap and read through the API server: an app.Service that
// watches the one ConfigMap its Settings name and turns s.Faults on while
// its key holds "on", and off while it holds "off" — either with any
// surrounding whitespace — as soon as the change's watch event reaches
// it, in every App that watches the same ConfigMap. Anything else, a
// missing key, a ConfigMap that doesn't exist or is deleted, is off, with
// a WARN record, "failure injection is off: its switch can't be read",
// saying why. Until its first list is in, failure injection is off. Each
// change is a record, as the file switch's are (see fault.Switch), with
// loam.fit.switch naming the ConfigMap and key.
//
// Off, every point evaluates as if no scenario were present, and a delay
// already running ends at once, its request going on unfaulted; no
// scenario is decoded or carried on to children; scenarios are still
// stripped wherever they must not go; and each Controller that
// takes scenarios reconciles at once the objects whose latest reconcile
// failed under one, rather than at their retry. In an App without
// failure injection a FaultSwitch watches nothing and serves until it is
// stopped.
//
// It needs list and watch of configmaps in Namespace, which RBAC can
// narrow to the one name (resourceNames), since its list and watch ask
// for that name alone. A list or watch that fails, one RBAC refuses
// included, is retried as an informer's is, and logged through the
// Setup's LoggerProvider. It fails closed: each watch lasts 10 seconds
// at most, so RBAC is checked again by the next, and once no list or
// watch has read the ConfigMap for 30 seconds — RBAC revoked, a watch
// that hangs, the API server out of reach — failure injection is off,
// with the WARN record above naming the last error, until a list or a
// watch reads it again.
type FaultSwitch struct {
	s *faultswitch.Switch
}

// NewFaultSwitch returns the FaultSwitch of s's failure injection, which
// reads the ConfigMap settings name through client. It turns failure
// injection off until the ConfigMap's first read. It reports every
// mistake together: a nil Setup or Client, a Namespace, Name or Key that
// isn't valid, and an App whose fault.Settings.Switch names a file
// already — an App has one kill switch.
func NewFaultSwitch(s *app.Setup, client *Client, settings FaultSwitchSettings) (*FaultSwitch, error) {
	var errs []error
	if s == nil {
		errs = append(errs, errors.New("kube: NewFaultSwitch: the Setup is nil: pass the one Init is given"))
	}
	if client == nil {
		errs = append(errs, errors.New("kube: NewFaultSwitch: the Client is nil"))
	}
	key := cmp.Or(settings.Key, DefaultFaultSwitchKey)
	for _, m := range validation.IsDNS1123Subdomain(settings.Namespace) {
		errs = append(errs, fmt.Errorf("kube: FaultSwitchSettings.Namespace %q: %s", settings.Namespace, m))
	}
	for _, m := range validation.IsDNS1123Subdomain(settings.Name) {
		errs = append(errs, fmt.Errorf("kube: FaultSwitchSettings.Name %q: %s", settings.Name, m))
	}
	for _, m := range validation.IsConfigMapKey(key) {
		errs = append(errs, fmt.Errorf("kube: FaultSwitchSettings.Key %q: %s", key, m))
	}
	var faults *fault.Injector
	if s != nil {
		faults = s.Faults
		if file := faults.SwitchFile(); file != "" {
			errs = append(errs, fmt.Errorf("kube: NewFaultSwitch: fault.Settings.Switch names the file %s already: an App has one kill switch", file))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(client.Config())
	if err != nil {
		return nil, fmt.Errorf("kube: NewFaultSwitch: %w", err)
	}
	return &FaultSwitch{s: faultswitch.New(faultswitch.Config{
		Faults: faults, Client: kc,
		Namespace: settings.Namespace, Name: settings.Name, Key: key,
		Logger: cmp.Or[log.LoggerProvider](s.Telemetry.LoggerProvider, lognoop.NewLoggerProvider()).Logger(ports.ScopeName),
	})}, nil
}

// Serve watches the ConfigMap and sets the switch as it says, until ctx
// ends or Shutdown is called; then it returns nil.
func (f *FaultSwitch) Serve(ctx context.Context) error { return f.s.Serve(ctx) }

// Shutdown stops Serve, and returns once it has returned, or with an
// error wrapping ctx's when ctx ends first.
func (f *FaultSwitch) Shutdown(ctx context.Context) error {
	if err := f.s.Shutdown(ctx); err != nil {
		return fmt.Errorf("kube: FaultSwitch: %w", err)
	}
	return nil
}
