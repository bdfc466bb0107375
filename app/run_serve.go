package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"go.opentelemetry.io/otel/log"
)

// lifecycle is one run of an App: the state its phases share.
type lifecycle struct {
	setup  *Setup
	logger log.Logger
	grace  time.Duration

	// signals and done deliver stop requests. done is Run's ctx's, and
	// becomes nil once it has delivered its one.
	signals <-chan os.Signal
	done    <-chan struct{}
	// stopRequested records the first stop request: the next one exits at
	// once.
	stopRequested bool
	// cancel cancels init's and every Serve's context.
	cancel context.CancelFunc

	code int
}

// fail records that the App failed, keeping an earlier, more telling code
// such as Init's 78.
func (l *lifecycle) fail() {
	if l.code == exitOK {
		l.code = exitFailed
	}
}

// run calls init, serves its Services, shuts them down and runs the OnStop
// hooks. It returns false when a second stop request asked the App to exit
// at once.
func (l *lifecycle) run(ctx context.Context, init Init) bool {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	l.cancel = cancel

	services, ok := l.init(runCtx, init)
	if !ok {
		return false
	}
	servesLeft := make([]bool, len(services))
	outcomes := make(chan outcome, 2*len(services))
	if len(services) > 0 {
		for i, svc := range services {
			servesLeft[i] = true
			go func() {
				err := recovered(func() error { return svc.Serve(runCtx) })
				outcomes <- outcome{index: i, serve: true, err: err}
			}()
		}
		if !l.serve(runCtx, services, outcomes, servesLeft) {
			return false
		}
	}
	// Whatever ended the serving, every Serve's context ends now.
	cancel()

	graceCtx, cancelGrace := context.WithTimeout(context.WithoutCancel(ctx), l.grace)
	defer cancelGrace()
	waitCtx, cancelWait := context.WithTimeout(context.WithoutCancel(ctx), l.grace+overrunWait)
	defer cancelWait()

	if len(services) > 0 && !l.shutdown(runCtx, graceCtx, waitCtx, services, outcomes, servesLeft) {
		return false
	}
	return l.runStopHooks(graceCtx, waitCtx)
}

// init calls init, and checks what it returned. It returns the Services to
// serve, none when init failed, and false when a second stop request asked
// the App to exit at once.
func (l *lifecycle) init(ctx context.Context, init Init) ([]Service, bool) {
	type result struct {
		services []Service
		err      error
	}
	results := make(chan result, 1)
	go func() {
		var r result
		r.err = recovered(func() error {
			var err error
			r.services, err = init(ctx, l.setup)
			return err
		})
		results <- r
	}()
	for {
		r, w := await(ctx, l, results, nil)
		switch w {
		case exitNow:
			return nil, false
		case stopAsked, timedOut:
			// init's context is cancelled: wait for init to notice. (With
			// no deadline, the wait never times out.)
			continue
		case received:
		}
		if r.err != nil && ctx.Err() != nil && errors.Is(r.err, ctx.Err()) {
			// Asked to stop while init ran, and init stopped: a clean end.
			return nil, true
		}
		if r.err != nil {
			var p *panicError
			if errors.As(r.err, &p) {
				l.logPanic(ctx, "init panicked", p)
				l.fail()
				return nil, true
			}
			_, _ = fmt.Fprintf(l.setup.Process.Stderr, "init: %v\n", r.err)
			l.logError(ctx, "init failed", r.err)
			l.code = exitConfig
			return nil, true
		}
		if i := slices.Index(r.services, nil); i >= 0 {
			err := fmt.Errorf("returned a nil Service at index %d", i)
			_, _ = fmt.Fprintf(l.setup.Process.Stderr, "init: %v\n", err)
			l.logError(ctx, "init failed", err)
			l.fail()
			return nil, true
		}
		return r.services, true
	}
}

// serve waits for the App to begin stopping: a stop request, a Serve's
// failure, or every Serve returning. It returns false when a second stop
// request asked the App to exit at once.
func (l *lifecycle) serve(runCtx context.Context, services []Service, outcomes <-chan outcome, servesLeft []bool) bool {
	if runCtx.Err() != nil {
		// Asked to stop while init ran: go straight to shutting down.
		return true
	}
	left := len(services)
	for {
		o, w := await(runCtx, l, outcomes, nil)
		switch w {
		case exitNow:
			return false
		case stopAsked, timedOut:
			return true
		case received:
		}
		servesLeft[o.index] = false
		left--
		if l.serveFailed(runCtx, services[o.index], o.err) {
			return true
		}
		if left == 0 {
			l.log(runCtx, log.SeverityInfo, "stopping", nil, attrReason.String("every Serve returned"), attrGrace.String(l.grace.String()))
			return true
		}
	}
}

// serveFailed logs a Serve's error and reports whether there was one. A
// Serve that returns its context's own error, once its context has ended,
// has stopped as it was asked to.
func (l *lifecycle) serveFailed(runCtx context.Context, svc Service, err error) bool {
	if err == nil || (runCtx.Err() != nil && errors.Is(err, runCtx.Err())) {
		return false
	}
	var p *panicError
	if errors.As(err, &p) {
		l.logPanic(runCtx, "service panicked", p, attrService.String(serviceName(svc)))
	} else {
		l.logError(runCtx, "service failed", err, attrService.String(serviceName(svc)))
	}
	l.fail()
	return true
}

// serviceName names svc in the runtime's records: its String, or its type.
func serviceName(svc Service) string {
	if s, ok := svc.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", svc)
}
