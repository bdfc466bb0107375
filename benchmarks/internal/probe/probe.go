// Package probe is how a controller's process reports its own figures to
// the harness that started it. The child writes JSON lines on its
// standard output, and reads the harness's word on its standard input:
//
//   - once its clients and controller are built, and before the controller
//     starts, it writes a Started line with its heap after garbage
//     collection and its Go runtime's settings;
//   - when the harness writes "converged" to it, it collects garbage again
//     and writes a Converged line with its heap and its reconcile count;
//   - when the harness writes "reconciles" to it, it writes a Count line
//     with its reconcile count, and nothing else: cheap enough to poll
//     while a restarted controller resyncs.
//
// Only the child measures its heap, since only the child can run its
// collector; the harness reads the child's CPU time and peak RSS from
// /proc itself. When the harness names a file in CPUProfileVariable, the
// child also writes a CPU profile of itself there, from Start until
// "converged", and a heap profile beside it at "converged": where a
// controller's CPU and memory go.
package probe

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync/atomic"
)

// ConvergedWord is the line the harness writes when every object has
// settled.
const ConvergedWord = "converged"

// ReconcilesWord is the line the harness writes to ask for the reconcile
// count alone.
const ReconcilesWord = "reconciles"

// PassLabel is the profile label a controller's Reconciler sets on its
// goroutine, when it is profiled, with FirstPass or SecondPass as its
// value: whether the pass found the object still to settle or settled.
// Package passes splits a profile by it.
const (
	PassLabel  = "loam-pass"
	FirstPass  = "first"
	SecondPass = "second"
)

// CPUProfileVariable is the environment variable in which the harness
// names the file a child writes its CPU profile to; unset, it writes
// none.
const CPUProfileVariable = "PROBE_CPU_PROFILE"

// Started is what a child reports before its controller starts.
type Started struct {
	// GoVersion, OS and Arch are the child's runtime.Version, GOOS and
	// GOARCH.
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	// GOMAXPROCS is the child's, as the Go runtime chose it.
	GOMAXPROCS int `json:"gomaxprocs"`
	// GOGC is the collector's target percentage, and MemoryLimit the
	// runtime's soft memory limit, as the runtime runs with them: 100 and
	// math.MaxInt64 unless something set them.
	GOGC        uint64 `json:"gogc"`
	MemoryLimit uint64 `json:"memoryLimit"`
	// HeapBytes is the live heap after garbage collection.
	HeapBytes uint64 `json:"heapBytes"`
}

// Converged is what a child reports once the harness says every object
// has settled.
type Converged struct {
	// HeapBytes is the live heap after garbage collection.
	HeapBytes uint64 `json:"heapBytes"`
	// Reconciles is how many reconciles the child's Reconciler began.
	Reconciles int64 `json:"reconciles"`
}

// Count is what a child answers ReconcilesWord with.
type Count struct {
	// Reconciles is how many reconciles the child's Reconciler began.
	Reconciles int64 `json:"reconciles"`
}

// Heap collects garbage twice, so that objects freed by finalizers of the
// first collection are gone too, and returns the live heap: the bytes of
// the objects that are still reachable (HeapAlloc).
func Heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Child is a controller's side of the protocol.
type Child struct {
	// In is where the harness's words arrive: the process's stdin.
	In io.Reader
	// Out is where the reports go: the process's stdout, which nothing
	// else may write to.
	Out io.Writer
	// Reconciles counts the Reconciler's reconciles.
	Reconciles *atomic.Int64
	// CPUProfile, when not empty, is the file Start begins a CPU profile
	// in, which the harness's "converged" ends: CPUProfileVariable's
	// value.
	CPUProfile string
	// profile is the open CPU profile, between Start and "converged".
	profile *os.File
}

// Start writes the Started line, and starts the CPU profile if one is
// asked for. The child calls it once everything its controller needs is
// built, right before the controller starts.
func (c *Child) Start() error {
	if c.CPUProfile != "" {
		//nolint:forbidigo // writing the profile the harness asked for is what it is for
		f, err := os.Create(c.CPUProfile)
		if err != nil {
			return fmt.Errorf("probe: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
			return fmt.Errorf("probe: CPU profile %s: %w", c.CPUProfile, err)
		}
		c.profile = f
	}
	s := Started{
		GoVersion:   runtime.Version(),
		OS:          runtime.GOOS,
		Arch:        runtime.GOARCH,
		GOMAXPROCS:  runtime.GOMAXPROCS(0),
		GOGC:        readUint("/gc/gogc:percent"),
		MemoryLimit: readUint("/gc/gomemlimit:bytes"),
		HeapBytes:   Heap(),
	}
	return c.write(s)
}

// Answer reads the harness's words until In ends, and answers each
// "converged" with a Converged line and each "reconciles" with a Count
// line. The harness ends In before it stops
// the child, so Answer returns when the child is about to stop.
func (c *Child) Answer() error {
	defer func() { _ = c.stopProfile() }() // on the paths that return before "converged"
	sc := bufio.NewScanner(c.In)
	for sc.Scan() {
		switch sc.Text() {
		case ConvergedWord:
		case ReconcilesWord:
			if err := c.write(Count{Reconciles: c.Reconciles.Load()}); err != nil {
				return err
			}
			continue
		default:
			return fmt.Errorf("probe: unexpected word %q from the harness", sc.Text())
		}
		if err := c.stopProfile(); err != nil {
			return err
		}
		if err := c.writeHeapProfile(); err != nil {
			return err
		}
		heap := Heap()
		if err := c.write(Converged{HeapBytes: heap, Reconciles: c.Reconciles.Load()}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("probe: read the harness's words: %w", err)
	}
	return nil
}

// stopProfile ends the CPU profile, if one runs, and closes its file.
func (c *Child) stopProfile() error {
	if c.profile == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := c.profile.Close()
	c.profile = nil
	if err != nil {
		return fmt.Errorf("probe: CPU profile %s: %w", c.CPUProfile, err)
	}
	return nil
}

// writeHeapProfile writes a heap profile beside the CPU profile, if one
// was asked for, as <CPUProfile>.heap: what the converged controller
// holds, and what it allocated on the way.
func (c *Child) writeHeapProfile() error {
	if c.CPUProfile == "" {
		return nil
	}
	runtime.GC()
	//nolint:forbidigo // writing the profile the harness asked for is what it is for
	f, err := os.Create(c.CPUProfile + ".heap")
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("probe: heap profile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("probe: heap profile: %w", err)
	}
	return nil
}

func (c *Child) write(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("probe: encode %T: %w", v, err)
	}
	if _, err := c.Out.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("probe: write %T: %w", v, err)
	}
	return nil
}

// readUint reads one uint64 sample of runtime/metrics, or 0 when the
// runtime doesn't have it.
func readUint(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
