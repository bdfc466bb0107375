package explore

import (
	"context"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/kubetest/internal/generate"
)

// Changes made while the operator is down (issue #47). An operator that
// serves its own webhooks, a conversion or an admission, takes them down
// when it crashes, and until a fresh replica serves them the API server
// calls them in vain: with failurePolicy Fail it refuses the changes
// they admit, and every read that needs their conversion; with Ignore it
// admits what they would have changed or denied. A step with Down is
// made while the operator is down: the running replica crashes before
// the step's change, which is tried at once. A change the API server
// refuses then, or while a replica that crashed during the change is
// down, is made again once a fresh replica is up, as a user's kubectl
// apply, or a CD pipeline, tries again; the tally counts both, and a
// change still refused once the operator is back fails the step.

// downOdds is the odds, 1 in downOdds, of a step made while the operator
// is down, when Faults.Down is on; downStream draws them from a stream
// of their own (downKind), so every seed's other faults stay as they
// were.
const (
	downOdds   = 4
	downStream = 0x446f776e
)

// extend draws what a sequence's steps get besides their changes and
// schedule's faults: the version each is written in.
func (e *explorer) extend(seed uint64, sequence int, steps []Step) []Step {
	drawVersions(seed, sequence, steps, e.versionNames)
	return steps
}

// writeTo is where a step's change is written: the resource of the
// version it is written in, and that version's apiVersion.
type writeTo struct {
	objects    dynamic.ResourceInterface
	apiVersion string
}

// change makes step's change, with scenario, as do does, in the version
// the step is written in. A step made while the operator is down crashes
// the running replica first. A change the API server refuses while the
// operator is down, so made or because the operator crashed while the
// change was made (a crash at its write after the first of a delete's
// two requests, say), is made again once a fresh replica is up.
func (e *explorer) change(ctx context.Context, r *replicas, step Step, scenario string) (made, error) {
	to, g, err := e.writer(r.ns, e.external(r.ns, step.Step))
	if err != nil {
		return made{}, err
	}
	if step.Down {
		r.w.down()
	}
	wasDown := r.down(ctx)
	m, err := e.do(ctx, to, r.ns, g, scenario)
	m.down = step.Down
	if err == nil || !wasDown && !r.down(ctx) {
		return m, err
	}
	why := err.Error()
	if err := r.recover(); err != nil {
		return m, err
	}
	err = r.untilUp(ctx, func() error {
		var err error
		m, err = e.do(ctx, to, r.ns, g, scenario)
		return err
	})
	m.down, m.downRefused = step.Down, why
	return m, err
}

// admittedDown reports whether m's change, made while the operator was
// down, was admitted at its first try, while it was still down: with
// failurePolicy Ignore, the API server admits a change whose admission
// webhooks it can't reach, undefaulted and unvalidated. (A conversion
// has no failure policy: a change that needs one is refused, and made
// again once the operator is back, with its webhooks.) The versions'
// oracle and the fresh create, which compare with what the webhooks make
// of the same spec, leave such a change alone; the invariants judge what
// the operator made of it.
func (m made) admittedDown() bool {
	return m.down && m.downRefused == "" && m.refused == "" && !m.wasted
}

// admitted notes, after step's change was made as m says, whether its
// object now holds a spec the API server admitted without the operator's
// admission webhooks (admittedDown), for the fresh create to leave alone:
// until a later change of it is admitted with them, or it is deleted.
func (r *replicas) admitted(step generate.Step, m made) {
	switch {
	case m.wasted || m.refused != "":
	case step.Op != generate.Delete && m.admittedDown():
		if r.unadmitted == nil {
			r.unadmitted = map[string]bool{}
		}
		r.unadmitted[step.Name] = true
	default:
		delete(r.unadmitted, step.Name)
	}
}

// untilUp calls f until it succeeds, or fails while the operator is up
// and the API server isn't restarting, for up to Settle: while the
// running replica has crashed, or hasn't synced its caches, a request
// that needs its webhooks fails, and is tried again after a pause, which
// starts a fresh replica after a crash.
func (r *replicas) untilUp(ctx context.Context, f func() error) error {
	start := time.Now()
	for {
		began := time.Now()
		wasDown := r.down(ctx)
		err := f()
		if err == nil {
			return nil
		}
		if !wasDown && !r.down(ctx) && !r.server.during(began) {
			return err
		}
		if time.Now().After(r.server.deadline(start, r.e.settle)) {
			return err
		}
		if err := r.server.wait(ctx); err != nil {
			return err
		}
		if err := r.pause(ctx); err != nil {
			return err
		}
	}
}

// down reports whether the operator is down: the running replica has
// crashed, or hasn't synced its caches, as a fresh one hasn't at first.
// A Controller syncs only once the webhooks of its App listen and the
// API server reaches their conversion (kube.NewWebhooks), so an operator
// that isn't down serves its webhooks.
func (r *replicas) down(ctx context.Context) bool {
	if r.w.hasCrashed() {
		return true
	}
	for _, m := range r.synced {
		if ok, err := m.Healthy(ctx); !ok || err != nil {
			return true
		}
	}
	return false
}

// down crashes the running replica before a step's change, which is then
// made while the operator is down: its network is cut, as a crash after
// a write cuts it, and the fresh replica that replaces it keeps the
// step's other faults, counting its writes from none.
func (w *writes) down() {
	w.mu.Lock()
	w.crashed, w.keepFaults = true, true
	cut := w.crash
	w.mu.Unlock()
	cut()
}
