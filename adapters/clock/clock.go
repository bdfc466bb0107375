// Package clock is the controller's ports.Clock on package time, which a
// testing/synctest bubble fakes, so the same clock serves production and
// tests of time.
package clock

import (
	"time"

	"github.com/loam-dev/loam/ports"
)

// Real is package time's clock.
type Real struct{}

var _ ports.Clock = Real{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc calls f in a goroutine of its own once d has passed, as
// time.AfterFunc does, and returns the timer's Stop.
func (Real) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
