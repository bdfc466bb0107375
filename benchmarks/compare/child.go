package compare

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/loam-dev/loam/benchmarks/internal/probe"
	"github.com/loam-dev/loam/benchmarks/internal/proc"
)

// killAfter is how long a child has to stop after SIGTERM before it is
// killed: controller-runtime's Manager waits up to 30 s for its
// runnables, and loam's App 20 s.
const killAfter = 45 * time.Second

// child is a controller running in a process of its own, and the
// harness's end of its probe (package probe).
type child struct {
	mode   Mode
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File // the read end of the child's stdout, which has deadlines
	lines  *bufio.Reader
	stderr *tail
	// startedWith is the child's Started report.
	startedWith probe.Started
	// metrics is the host:port the child serves /metrics on.
	metrics string

	stopOnce sync.Once
	stopErr  error
}

// startChild starts the program path with args and env. The child is
// killed if the harness dies first.
func startChild(mode Mode, path string, args, env []string) (*child, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A pipe of the harness's own, rather than cmd.StdoutPipe, so that a
	// read can be given a deadline.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	c := &child{mode: mode, cmd: cmd, stdin: stdin, stdout: r, lines: bufio.NewReader(r), stderr: &tail{}}
	cmd.Stderr = c.stderr
	err = cmd.Start()
	_ = w.Close() // the child holds its own copy
	if err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	return c, nil
}

// pid is the child's process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// started reads the child's Started line.
func (c *child) started(ctx context.Context) (probe.Started, error) {
	var s probe.Started
	return s, c.read(ctx, &s)
}

// converged tells the child that every object has settled, and reads its
// Converged line.
func (c *child) converged(ctx context.Context) (probe.Converged, error) {
	var r probe.Converged
	if _, err := io.WriteString(c.stdin, probe.ConvergedWord+"\n"); err != nil {
		return r, fmt.Errorf("%s: tell it converged: %w%s", c.mode, err, c.stderr.report())
	}
	return r, c.read(ctx, &r)
}

// count asks the child for its reconcile count alone, and reads it.
func (c *child) count(ctx context.Context) (int64, error) {
	var r probe.Count
	if _, err := io.WriteString(c.stdin, probe.ReconcilesWord+"\n"); err != nil {
		return 0, fmt.Errorf("%s: ask its reconciles: %w%s", c.mode, err, c.stderr.report())
	}
	return r.Reconciles, c.read(ctx, &r)
}

// read reads the child's next line into v, until ctx ends.
func (c *child) read(ctx context.Context, v any) error {
	_ = c.stdout.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = c.stdout.SetReadDeadline(time.Now()) })
	defer stop()
	line, err := c.lines.ReadBytes('\n')
	if err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return fmt.Errorf("%s: read its report: %w%s", c.mode, err, c.stderr.report())
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("%s: its report %q: %w", c.mode, line, err)
	}
	return nil
}

// running reports whether the child still runs.
func (c *child) running() bool { return proc.Running(c.pid()) }

// stop ends the child's stdin, which ends its probe, sends it SIGTERM,
// and waits for it to exit, killing it after killAfter. It returns an
// error when the child failed, with the end of its stderr. Only the first
// call stops the child; later ones return its result.
func (c *child) stop() error {
	c.stopOnce.Do(func() {
		_ = c.stdin.Close()
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			c.stopErr = fmt.Errorf("%s: SIGTERM: %w", c.mode, err)
		}
		kill := time.AfterFunc(killAfter, func() { _ = c.cmd.Process.Kill() })
		defer kill.Stop()
		err := c.cmd.Wait()
		_ = c.stdout.Close()
		if err != nil {
			c.stopErr = fmt.Errorf("%s: %w%s", c.mode, err, c.stderr.report())
		}
	})
	return c.stopErr
}

// tail keeps the last tailSize bytes written to it: the end of a child's
// stderr, for the error that tells why it failed.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 16 << 10

// Write keeps the end of p.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - tailSize; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// report is what the child last wrote to stderr, as the end of an error
// message, or "" when it wrote nothing.
func (t *tail) report() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return "\nThe end of its stderr:\n" + s
}
