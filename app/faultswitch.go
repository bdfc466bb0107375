package app

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/loam-dev/loam/app/fault"
)

// The kill switch app.Run reads is a file, read through the Host, rather
// than an endpoint or an annotation: a test, or an operator on a laptop,
// can flip it by hand, and a ConfigMap mounted into every pod turns it
// off fleet-wide, as soon as the kubelet carries the change into each
// pod. Each App reads it on its own, once a second, so one App's failure
// never leaves another's injection on. A switch that must reach every
// replica within seconds is kube.FaultSwitch, which watches the ConfigMap
// through the API server instead.

// faultSwitch reads the kill switch's file and sets the Injector's
// switch as it says.
type faultSwitch struct {
	sw   *fault.Switch
	fs   FS
	path string
}

// read reads the file once, and sets the switch as it says: on for "on",
// off for anything else, or when it can't be read.
func (s *faultSwitch) read(ctx context.Context) {
	text, err := s.text()
	s.sw.Set(ctx, text, err)
}

// text returns what the file holds, up to a byte past
// fault.MaxSwitchLength, or why it can't be read.
func (s *faultSwitch) text() (string, error) {
	if s.fs == nil {
		return "", fmt.Errorf("switch %s: the Host has no FS", s.path)
	}
	f, err := s.fs.Open(s.path)
	if err != nil {
		return "", fmt.Errorf("switch %s: %w", s.path, err)
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, fault.MaxSwitchLength+1))
	if err != nil {
		return "", fmt.Errorf("switch %s: %w", s.path, err)
	}
	return string(b), nil
}

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
