package explore

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// timing says where one replay's time went, in the test's verbose log
// (go test -v), a part at a time: the operator's start, each step, from
// its change until its checks are done, the deletes at the end and the
// operator's stop, each with the faults that came in it. A replay that
// takes long says why: a step of a correct operator takes about twice
// Quiet, and one with a crash, a stale view, a restart or a cut losing
// events (lost.go) longer; a step that fails waits out Settle.
type timing struct {
	e     *explorer
	began time.Time
	// part is the part under way, since from, and at the faults counted
	// when it began.
	part  string
	from  time.Time
	at    faultCounts
	parts []string
	// cuts counts the replay's cuts losing events so far, once its
	// proxy is there (lost.go).
	cuts func() int
}

// faultCounts counts the faults that came: replicas crashed, stale views
// let go, API server restarts begun and cuts losing events.
type faultCounts struct{ crashes, stale, restarts, lost int }

func (e *explorer) counts() faultCounts {
	return faultCounts{crashes: e.crashes, stale: e.stale, restarts: e.server.count()}
}

// startTiming starts timing a replay, its first part named part.
func (e *explorer) startTiming(part string) *timing {
	now := time.Now()
	tm := &timing{e: e, began: now, part: part, from: now}
	tm.at = tm.counts()
	return tm
}

// counts counts the faults that came, the replay's cuts losing events
// included.
func (tm *timing) counts() faultCounts {
	c := tm.e.counts()
	c.lost = tm.e.lost
	if tm.cuts != nil {
		c.lost += tm.cuts()
	}
	return c
}

// next ends the part under way and begins the one named part.
func (tm *timing) next(part string) {
	now, counts := time.Now(), tm.counts()
	var faults []string
	for _, f := range []struct {
		n    int
		what string
	}{{counts.crashes - tm.at.crashes, "crash"}, {counts.stale - tm.at.stale, "stale view"}, {counts.restarts - tm.at.restarts, "restart"}, {counts.lost - tm.at.lost, "cut"}} {
		switch {
		case f.n == 1:
			faults = append(faults, "1 "+f.what)
		case f.n > 1:
			faults = append(faults, fmt.Sprintf("%d %ss", f.n, f.what))
		}
	}
	line := fmt.Sprintf("%s %v", tm.part, now.Sub(tm.from).Round(10*time.Millisecond))
	if len(faults) > 0 {
		line += " (" + strings.Join(faults, ", ") + ")"
	}
	tm.parts = append(tm.parts, line)
	tm.part, tm.from, tm.at = part, now, counts
}

// log ends the part under way, and logs the replay of n steps, which
// found err, a part at a time.
func (tm *timing) log(t *testing.T, n int, err error) {
	t.Helper()
	tm.next("")
	outcome := "passed"
	if err != nil {
		outcome = "failed"
	}
	t.Logf("explore: a replay of %d steps %s in %v: %s", n, outcome, time.Since(tm.began).Round(10*time.Millisecond), strings.Join(tm.parts, ", "))
}
