package explore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/loam-dev/loam/kubetest/internal/corpus"
	"github.com/loam-dev/loam/kubetest/internal/generate"
)

// keptStep is a Step as a kept sequence's file holds it, one JSON object
// a line: its change and its faults, which replay as they are whatever
// the Config (issue #47).
type keptStep struct {
	Op           string         `json:"op"`
	Name         string         `json:"name"`
	Spec         map[string]any `json:"spec,omitzero"`
	CrashAfter   int            `json:"crashAfter,omitempty"`
	StaleFrom    int            `json:"staleFrom,omitempty"`
	LoseFrom     int            `json:"loseFrom,omitempty"`
	RestartAfter int            `json:"restartAfter,omitempty"`
	FailAt       int            `json:"failAt,omitempty"`
	FailWith     int            `json:"failWith,omitempty"`
	Kubelet      string         `json:"kubelet,omitempty"`
	// Version is the version the change is written in, "" the explored
	// one; Down makes it while the operator is down.
	Version string `json:"version,omitempty"`
	Down    bool   `json:"down,omitempty"`
	// OldListsFrom is a kind added after the others: the fields of the
	// kinds to come follow it.
	OldListsFrom int `json:"oldListsFrom,omitempty"`
}

// parseOp returns the Op a kept step names, as Op's String names it.
func parseOp(name string) (generate.Op, bool) {
	for _, op := range []generate.Op{generate.Create, generate.Update, generate.Delete} {
		if op.String() == name {
			return op, true
		}
	}
	return 0, false
}

// encodeSteps returns steps as a kept sequence's file holds them.
func encodeSteps(steps []Step) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(steps))
	kinds := faultKinds()
	for i, s := range steps {
		k := keptStep{Op: s.Op.String(), Name: s.Name, Spec: s.Spec, Version: s.Version}
		for _, kind := range kinds {
			kind.keep(s, &k)
		}
		b, err := json.Marshal(k)
		if err != nil {
			return nil, fmt.Errorf("step %d, %s: %w", i+1, s, err)
		}
		out[i] = b
	}
	return out, nil
}

// decodeSteps returns the steps a kept sequence's file holds, each number
// of a spec an int64 when it is whole, as the generator makes them and
// the API server decodes them. It returns an error naming every step
// that doesn't decode, or that names no object, an unknown Op, a create
// or an update without a spec, or a negative fault.
func decodeSteps(raw []json.RawMessage) ([]Step, error) {
	steps := make([]Step, len(raw))
	kinds := faultKinds()
	var errs []error
	for i, r := range raw {
		d := json.NewDecoder(bytes.NewReader(r))
		d.UseNumber()
		d.DisallowUnknownFields()
		var k keptStep
		if err := d.Decode(&k); err != nil {
			errs = append(errs, fmt.Errorf("step %d: %w", i+1, err))
			continue
		}
		op, ok := parseOp(k.Op)
		var mistakes []string
		if !ok {
			mistakes = append(mistakes, fmt.Sprintf("op %q: want create, update or delete", k.Op))
		}
		if k.Name == "" {
			mistakes = append(mistakes, "no name")
		}
		if ok && op != generate.Delete && k.Spec == nil {
			mistakes = append(mistakes, "no spec, which a create or an update needs")
		}
		step := Step{Step: generate.Step{Op: op, Name: k.Name, Version: k.Version}}
		for _, kind := range kinds {
			mistakes = append(mistakes, kind.read(k, &step)...)
		}
		if len(mistakes) > 0 {
			errs = append(errs, fmt.Errorf("step %d: %s", i+1, strings.Join(mistakes, "; ")))
			continue
		}
		step.Spec, _ = numbers(k.Spec).(map[string]any)
		steps[i] = step
	}
	return steps, errors.Join(errs...)
}

// numbers turns each json.Number in v into an int64 when it is whole, and
// a float64 otherwise.
func numbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = numbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = numbers(e)
		}
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return n
		}
		f, _ := t.Float64()
		return f
	}
	return v
}

// kept is a sequence to replay before any new one: its steps, and where
// it was kept.
type kept struct {
	path  string
	steps []Step
	// seeded is the file, when it is of the first form, "seed S
	// sequence N".
	seeded *corpus.Kept
}

// readKept reads the sequences kept in dir. A file of the first form,
// "seed S sequence N", is regenerated from its seed with e's Config, as
// it always was, when regenerate is set, and left without steps
// otherwise. It returns an error naming every kept sequence that doesn't
// read, or that fails requests while transient errors are off: without
// Faults.ScenarioAnnotation, the explorer has no way to fail them; or
// that writes a step in a version no Config.Versions names.
func (e *explorer) readKept(dir string, regenerate bool) ([]kept, error) {
	files, err := corpus.Read(dir)
	out := make([]kept, 0, len(files))
	errs := []error{err}
	for _, f := range files {
		k := kept{path: f.Path}
		var err error
		switch {
		case !f.Seeded:
			k.steps, err = decodeSteps(f.Steps)
		case regenerate:
			k.steps, err = e.sequence(f.Seed, f.Sequence)
			k.seeded = &f
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("kept sequence %s: %w", f.Path, err))
			continue
		}
		for i, s := range k.steps {
			if _, ok := e.otherVersions[s.Version]; s.Version != "" && !ok {
				errs = append(errs, fmt.Errorf("kept sequence %s: step %d is written in %s, which no explore.Config.Versions names", f.Path, i+1, s.Version))
				break
			}
		}
		if e.annotation == "" {
			for i, s := range k.steps {
				if s.FailAt > 0 {
					errs = append(errs, fmt.Errorf("kept sequence %s: step %d fails the operator's request %d, which needs explore.Config.Faults.ScenarioAnnotation", f.Path, i+1, s.FailAt))
					break
				}
			}
		}
		if err := keptKubeletMistake(f.Path, k.steps, e.kubeletNeeds); err != nil {
			errs = append(errs, err)
		}
		out = append(out, k)
	}
	return out, errors.Join(errs...)
}

// migrate rewrites k's file, when it is of the first form, with its
// steps: the sequence it stood for with e's Config, which it replays
// from then on whatever the Config.
func (k kept) migrate(t *testing.T, e *explorer) error {
	t.Helper()
	f := k.seeded
	if f == nil {
		return nil
	}
	raw, err := encodeSteps(k.steps)
	if err != nil {
		return fmt.Errorf("kept sequence %s: %w", f.Path, err)
	}
	comments := append(slices.Clone(f.Comments), fmt.Sprintf("Kept as \"seed %d sequence %d\", and rewritten with its steps: sequence %d of seed %d, of %d steps over %d objects, with the faults its Config picked.", f.Seed, f.Sequence, f.Sequence, f.Seed, e.steps, len(e.names)))
	if _, err := corpus.Write(filepath.Dir(f.Path), filepath.Base(f.Path), comments, raw); err != nil {
		return fmt.Errorf("kept sequence %s: rewriting it with its steps: %w", f.Path, err)
	}
	t.Logf("explore: kept sequence %s rewritten with its %d steps, in place of \"seed %d sequence %d\": commit it", f.Path, len(k.steps), f.Seed, f.Sequence)
	return nil
}

// keep keeps f's sequence in dir, and returns the file's path. A kept
// sequence that fails again is left as it was, the whole of it with its
// comments, as go test -fuzz leaves a failing input of its corpus: its
// path is returned.
func keep(dir string, f *Failure) (string, error) {
	if f.Kept != "" {
		return f.Kept, nil
	}
	raw, err := encodeSteps(f.Steps)
	if err != nil {
		return "", err
	}
	return corpus.Write(dir, corpus.Name(f.Seed, f.Sequence), []string{f.Error()}, raw)
}

// keptAtOnce is how many kept sequences replay side by side at most: a
// replay mostly waits for its operator to settle, and each has a
// namespace and an operator of its own, as the searches of a test
// running side by side on one cluster have; more at once would load the
// machine, and every operator's Lease, for little more gain.
const keptAtOnce = 4

// keptAtOnceFor is how many kept sequences replay side by side at most,
// given Config.OneReplicaAtATime.
func keptAtOnceFor(oneReplicaAtATime bool) int {
	if oneReplicaAtATime {
		return 1
	}
	return keptAtOnce
}

// replayKept replays all, and returns the Failure, shrunk, of the first
// that fails, or nil when none does. Those that restart nothing replay
// first, side by side, e.atOnce at a time, and the first of them in
// all's order that fails is returned; then those that restart the API
// server, one at a time, alone. A restart takes every connection away:
// the explorer's reads, and the watches of every operator, of every
// replay, which only the replay that began it knows to wait for.
func (e *explorer) replayKept(t *testing.T, all []kept) *Failure {
	t.Helper()
	try := func(k kept) *Failure { return e.try(t, origin{kept: k.path}, k.steps) }
	var alone []kept
	side := slices.DeleteFunc(slices.Clone(all), func(k kept) bool {
		if restarts(k.steps) {
			alone = append(alone, k)
			return true
		}
		return false
	})
	for _, f := range sideBySide(t.Name(), side, e.atOnce, try) {
		if f != nil {
			return f
		}
	}
	for _, k := range alone {
		if f := sideBySide(t.Name(), []kept{k}, 1, try)[0]; f != nil {
			return f
		}
	}
	return nil
}

// errStopped is the Err of a kept sequence whose replay stopped its
// goroutine, by t.FatalF or t.FailNow deep down (a namespace the API
// server didn't create, say): its log says why.
var errStopped = errors.New("its replay stopped the test: see the log above")

// sideBySide tries each of seqs, atOnce at a time, and returns the
// Failures, in seqs' order, nil for those that passed. A try that
// stops its goroutine, as t.FailNow does off the test's own, fails with
// errStopped, naming its sequence: the test, marked failed, goes on,
// and the sequence that failed it would otherwise go unnamed among
// those replayed beside it.
func sideBySide(test string, seqs []kept, atOnce int, try func(kept) *Failure) []*Failure {
	failures := make([]*Failure, len(seqs))
	slots := make(chan struct{}, atOnce)
	var wg sync.WaitGroup
	for i, k := range seqs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			returned := false
			defer func() {
				if !returned {
					failures[i] = &Failure{Kept: k.path, Steps: k.steps, Of: len(k.steps), Err: errStopped, Test: test}
				}
			}()
			failures[i] = try(k)
			returned = true
		})
	}
	wg.Wait()
	return failures
}

// restarts reports whether steps restart the API server.
func restarts(steps []Step) bool {
	return slices.ContainsFunc(steps, func(s Step) bool { return s.RestartAfter > 0 })
}
