package reconcile

import (
	"time"

	"github.com/loam-dev/loam/ports"
)

// settle sets or drops key's timer as s ended its pass: at the retry's
// backoff or the After, or sooner when what the pass's Prepare carried
// stops applying sooner.
func (l *Loop) settle(key ports.Key, s settlement) {
	var ends time.Duration
	if !s.until.IsZero() && s.report.Outcome != ports.OutcomePanic {
		ends = s.until.Sub(l.c.Clock.Now())
	}
	sooner := func(d time.Duration) time.Duration {
		if ends > 0 && (d <= 0 || ends < d) {
			return ends
		}
		return d
	}
	if s.report.Outcome == ports.OutcomeError || s.report.Outcome == ports.OutcomeTimeout {
		l.markCarried(key, s.carried)
		l.timers.set(key, sooner(l.limiter.When(key)))
		return
	}
	l.markCarried(key, false)
	// A success and a panic both end the key's backoff; a panic is never
	// retried, since it would only panic again.
	if d := sooner(s.after); d > 0 {
		l.limiter.Forget(key)
		l.timers.set(key, d)
		return
	}
	l.forget(key)
}

// forget ends key's backoff and drops its timer: nothing queues it again
// but a change or the resync.
func (l *Loop) forget(key ports.Key) {
	l.limiter.Forget(key)
	l.timers.drop(key)
	l.markCarried(key, false)
}

// markCarried keeps key in the set Lift queues again when carried, and drops
// it otherwise. A Loop whose passes carry nothing (no Config.Carried)
// never fills the set, so it takes no lock for it.
func (l *Loop) markCarried(key ports.Key, carried bool) {
	if l.c.Carried != nil {
		l.carried.set(key, carried)
	}
}
