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
	// done ctx by ctx.Err().
	Run(ctx context.Context, onStarted func(ctx context.Context), onStopped func())
}

// Clock tells the time; k8s.io/utils/clock.RealClock implements it, and a
// test's fake moves it by hand.
type Clock interface {
	Now() time.Time
}
