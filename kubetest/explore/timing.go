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
	r     *replicas
	began time.Time
	// part is the part under way, since from, and at the faults counted
	// when it began.
	part  string
	from  time.Time
	at    faultCounts
	parts []string
}

// faultCounts counts the faults that came: replicas crashed, stale views
// let go, API server restarts begun and cuts losing events.
type faultCounts struct{ crashes, stale, restarts, lost int }

// counts returns the faults that came in r's replay so far, and the API
// server's restarts begun by any replay: those that restart it replay
// one at a time (kept.go).
func (r *replicas) counts() faultCounts {
	c := faultCounts{crashes: r.n.crashes, stale: r.n.stale, restarts: r.server.count(), lost: r.n.lost}
	if r.w != nil {
		// The cuts not yet taken into r.n.lost (replay.go).
		c.lost += r.w.cutCount()
	}
	return c
}

// startTiming starts timing r's replay, its first part named part.
func (r *replicas) startTiming(part string) *timing {
	now := time.Now()
	return &timing{r: r, began: now, part: part, from: now, at: r.counts()}
}

// next ends the part under way and begins the one named part.
func (tm *timing) next(part string) {
	now, counts := time.Now(), tm.r.counts()
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
