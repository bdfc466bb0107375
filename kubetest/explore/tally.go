package explore

import (
	"fmt"
	"strings"
)

// counted is what one replay, or every replay of an exploration, did:
// the replicas crashed, the stale views let go, the cuts losing events,
// the requests failed, and the tally of steps and reconciles.
type counted struct {
	crashes, stale, lost, failed int
	tally                        tally
}

// add adds what a replay counted, n, to what e's replays have.
func (e *explorer) add(n counted) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.total.crashes += n.crashes
	e.total.stale += n.stale
	e.total.lost += n.lost
	e.total.failed += n.failed
	e.total.tally.add(n.tally)
}

// counted returns what e's replays that have ended counted.
func (e *explorer) counted() counted {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.total
}

// add adds o's counts to c's, keeping c's first refused step when it
// has one.
func (c *tally) add(o tally) {
	c.steps += o.steps
	c.wasted += o.wasted
	c.refused += o.refused
	c.reconciles += o.reconciles
	c.succeeded += o.succeeded
	if c.firstRefused == "" {
		c.firstRefused = o.firstRefused
	}
}

// tally counts what an exploration did, over every replay: the steps it
// made, those the API server refused, and the operator's reconciles, so
// that a run that explored nothing isn't reported clean (issue #47).
type tally struct {
	// steps counts the steps tried; wasted those whose change the
	// cluster's state made pointless (an update of an object that isn't
	// there), and refused those whose change the API server refused;
	// firstRefused says which was first, and why.
	steps, wasted, refused int
	firstRefused           string
	// reconciles counts the operator's reconciles, in every replica, and
	// succeeded those that succeeded.
	reconciles, succeeded int
	// kubelet counts the steps that set a kubelet fault.
	kubelet int
}

// step counts step, tried, and what became of its change.
func (c *tally) step(step Step, m made) {
	c.steps++
	if step.Kubelet != "" {
		c.kubelet++
	}
	switch {
	case m.wasted:
		c.wasted++
	case m.refused != "":
		c.refused++
		if c.firstRefused == "" {
			c.firstRefused = fmt.Sprintf("%s: %s", step.Step, m.refused)
		}
	}
}

// String says how many steps were tried, wasted and refused, and how
// many reconciles ran and succeeded.
func (c tally) String() string {
	return fmt.Sprintf("%d steps (%d refused by the API server, %d wasted), %d reconciles (%d succeeded)", c.steps, c.refused, c.wasted, c.reconciles, c.succeeded)
}

// empty says why the exploration counted explored next to nothing, or ""
// when it didn't: when the API server refused most of the steps that
// weren't wasted (a generator that misses a CEL rule, say: a refused
// create wastes the updates and deletes after it), or when no
// reconcile of the operator succeeded.
func (c tally) empty() string {
	var why []string
	if tried := c.steps - c.wasted; tried > 0 && 2*c.refused > tried {
		why = append(why, fmt.Sprintf("%d of %d steps refused by the API server, %d more wasted (the first refused: %s)", c.refused, c.steps, c.wasted, c.firstRefused))
	}
	if c.succeeded == 0 {
		why = append(why, fmt.Sprintf("no reconcile succeeded, of %d", c.reconciles))
	}
	return strings.Join(why, "; and ")
}
