package ports

import (
	"context"
	"time"
)

// Elector campaigns for the controller's Lease, as client-go's
// leaderelection.LeaderElector does with ReleaseOnCancel set.
type Elector interface {
	// Run campaigns until it holds the Lease or ctx is done. Once it holds
	// the Lease, it calls onStarted in a goroutine of its own, with a
	// context cancelled when leadership ends, and renews the Lease until a
	// renewal fails for the renew deadline, another candidate takes it, or
	// ctx is done. Then it waits for onStarted to return, so nothing the
	// Lease guards outlives the leadership, and only then releases the
	// Lease, if it still holds it. It calls onStopped as it returns,
	// whether or not it ever led. Run's caller tells a lost Lease from a
	// done ctx by ctx.Err(). The renewals go on however long onStarted
	// runs, and after it returns, until ctx is done: a caller hands the
	// Lease off by draining its work before it ends ctx.
	Run(ctx context.Context, onStarted func(ctx context.Context), onStopped func())
}

// Clock tells the time and runs timers; the clock adapter's Real
// implements it on package time, which a testing/synctest bubble fakes.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in a goroutine of its own once d has passed,
	// unless the returned stop is called first; stop reports whether it
	// kept f from being called. It never calls f before it returns.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Readiness is told whether the controller's caches are synced; app's
// health.Flag implements it, so a readiness probe reports it.
type Readiness interface {
	// MarkHealthy records that the caches have synced.
	MarkHealthy()
	// MarkUnhealthy records that they haven't, or that the controller has
	// stopped.
	MarkUnhealthy()
}
