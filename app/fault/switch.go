package fault

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
)

// MaxSwitchLength is the most bytes a kill switch's text may hold: it
// holds a word, on or off.
const MaxSwitchLength = 64

// ErrSwitchWord is what a kill switch whose text is neither on nor off
// reads as.
var ErrSwitchWord = errors.New("it holds neither on nor off")

// SwitchKey (string) names the kill switch on a Switch's records: the
// path of app.Run's file, or the ConfigMap and key of a kube FaultSwitch.
const SwitchKey = attribute.Key("loam.fit.switch")

// The bodies of the records a Switch writes when its state changes.
const (
	SwitchOnBody     = "failure injection is on"
	SwitchOffBody    = "failure injection is off"
	SwitchUnreadBody = "failure injection is off: its switch can't be read"
)

// SwitchWord reads a kill switch's text: true for "on" and false for
// "off", either with any surrounding whitespace, and, for anything else,
// false with an error wrapping ErrSwitchWord, or saying the text is over
// MaxSwitchLength bytes.
func SwitchWord(text string) (bool, error) {
	if len(text) > MaxSwitchLength {
		return false, fmt.Errorf("longer than %d bytes: it holds on or off", MaxSwitchLength)
	}
	switch word := strings.TrimSpace(text); word {
	case "on":
		return true, nil
	case "off":
		return false, nil
	default:
		return false, fmt.Errorf("%w: %q", ErrSwitchWord, word)
	}
}

// A Switch turns an Injector on and off as a kill switch says, wherever
// the switch is kept — a file app.Run reads, or a ConfigMap a kube
// FaultSwitch watches — and records each change of its state, or of why
// it is off, through a Logger. Set may be called from several
// goroutines.
type Switch struct {
	faults *Injector
	logger log.Logger
	attrs  []attribute.KeyValue

	mu sync.Mutex
	// last is what the previous Set found, so that only changes are
	// recorded.
	last string
}

// NewSwitch returns a Switch of faults whose records go to logger, with
// attrs, such as SwitchKey naming where the switch is kept.
func NewSwitch(faults *Injector, logger log.Logger, attrs ...attribute.KeyValue) *Switch {
	return &Switch{faults: faults, logger: logger, attrs: attrs}
}

// Set turns the Injector on when err is nil and text says on (see
// SwitchWord), and off otherwise: err is why the switch couldn't be read.
// A change of state is a record: INFO SwitchOnBody or SwitchOffBody, or
// WARN SwitchUnreadBody with the error, for a switch that can't be read
// or says neither on nor off.
func (s *Switch) Set(ctx context.Context, text string, err error) {
	on := false
	if err == nil {
		on, err = SwitchWord(text)
	}
	now := "on"
	if err != nil {
		now = "off: " + err.Error()
	} else if !on {
		now = "off"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.SetOn(on)
	if now == s.last {
		return
	}
	s.last = now
	switch {
	case err != nil:
		s.emit(ctx, log.SeverityWarn, SwitchUnreadBody, err)
	case on:
		s.emit(ctx, log.SeverityInfo, SwitchOnBody, nil)
	default:
		s.emit(ctx, log.SeverityInfo, SwitchOffBody, nil)
	}
}

// emit writes one record of the Switch's.
func (s *Switch) emit(ctx context.Context, sev log.Severity, body string, err error) {
	if s.logger == nil {
		return
	}
	var r log.Record
	r.SetTimestamp(time.Now())
	r.SetSeverity(sev)
	r.SetSeverityText(sev.String())
	r.SetBody(attribute.StringValue(body))
	if err != nil {
		r.SetErr(err)
		r.AddAttributes(attribute.String("exception.message", err.Error()))
	}
	r.AddAttributes(s.attrs...)
	s.logger.Emit(ctx, r)
}
