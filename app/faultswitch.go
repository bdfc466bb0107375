package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/log"

	"github.com/loam-dev/loam/app/fault"
)

// The kill switch is a file, read through the Host, rather than an
// endpoint or an annotation: a ConfigMap mounted into every pod of every
// App that should obey it turns failure injection off fleet-wide with one
// kubectl edit, and the kubelet carries the change into each pod within
// its sync period, with nothing to authenticate and no port to expose. A
// file is also what a test, or an operator on a laptop, can flip by hand.
// Each App reads it on its own, once a second, so one App's failure never
// leaves another's injection on.

// switchLimit is the most bytes the switch's file is read for: it holds a
// word.
const switchLimit = 64

// faultSwitch reads the kill switch's file and sets the Injector's switch.
type faultSwitch struct {
	faults *fault.Injector
	fs     FS
	path   string
	// record reports a change of the switch's state, or of why it is off.
	record func(ctx context.Context, sev log.Severity, body string, err error)

	// last is what the previous read found, so that only changes are
	// recorded.
	last string
}

// read reads the file once, and sets the switch as it says: on for "on",
// off for anything else, or when it can't be read.
func (s *faultSwitch) read(ctx context.Context) {
	on, err := s.state()
	s.faults.SetOn(on)
	now := "on"
	if err != nil {
		now = "off: " + err.Error()
	} else if !on {
		now = "off"
	}
	if now == s.last {
		return
	}
	s.last = now
	switch {
	case err != nil:
		s.record(ctx, log.SeverityWarn, "failure injection is off: its switch can't be read", err)
	case on:
		s.record(ctx, log.SeverityInfo, "failure injection is on", nil)
	default:
		s.record(ctx, log.SeverityInfo, "failure injection is off", nil)
	}
}

// state returns what the file says: true for "on", false for "off", and
// an error, for off, when it says anything else or can't be read.
func (s *faultSwitch) state() (bool, error) {
	if s.fs == nil {
		return false, fmt.Errorf("switch %s: the Host has no FS", s.path)
	}
	f, err := s.fs.Open(s.path)
	if err != nil {
		return false, fmt.Errorf("switch %s: %w", s.path, err)
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, switchLimit+1))
	if err != nil {
		return false, fmt.Errorf("switch %s: %w", s.path, err)
	}
	if len(b) > switchLimit {
		return false, fmt.Errorf("switch %s: longer than %d bytes: it holds on or off", s.path, switchLimit)
	}
	switch word := strings.TrimSpace(string(b)); word {
	case "on":
		return true, nil
	case "off":
		return false, nil
	default:
		return false, fmt.Errorf("switch %s: %w: %q", s.path, errSwitchWord, word)
	}
}

// errSwitchWord is what a switch's file that holds neither on nor off
// reads as.
var errSwitchWord = errors.New("it holds neither on nor off")

// start reads the file every fault.SwitchPeriod until the returned stop
// is called, which waits for the goroutine to return.
func (s *faultSwitch) start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(fault.SwitchPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.read(ctx)
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
