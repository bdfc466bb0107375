package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
)

// testProcess is a Process a test owns: an environment from a map, streams
// it can read, and signals it sends.
type testProcess struct {
	env     mapEnv
	stdout  syncBuffer
	stderr  syncBuffer
	signals chan os.Signal
}

func newTestProcess(env map[string]string) *testProcess {
	return &testProcess{env: mapEnv(env), signals: make(chan os.Signal, 2)}
}

func (p *testProcess) option() app.Option {
	return app.WithProcess(app.Process{
		Environment: p.env,
		Stdout:      &p.stdout,
		Stderr:      &p.stderr,
		Signals:     p.signals,
	})
}

// logLines returns the JSON lines on stderr, decoded, and the lines that
// are not JSON.
func (p *testProcess) logLines(t *testing.T) (records []logLine, plain []string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(p.stderr.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "{") {
			plain = append(plain, line)
			continue
		}
		var r logLine
		require.NoError(t, json.Unmarshal([]byte(line), &r), "line %q", line)
		records = append(records, r)
	}
	require.NoError(t, sc.Err())
	return records, plain
}

// record returns the one record whose body is body.
func (p *testProcess) record(t *testing.T, body string) logLine {
	t.Helper()
	records, _ := p.logLines(t)
	var found []logLine
	for _, r := range records {
		if r.Body == body {
			found = append(found, r)
		}
	}
	require.Len(t, found, 1, "records with body %q in:\n%s", body, p.stderr.String())
	return found[0]
}

// logLine is a line the default LoggerProvider writes.
type logLine struct {
	Time       string         `json:"time"`
	Severity   string         `json:"severity"`
	Scope      string         `json:"scope"`
	Body       any            `json:"body"`
	Attributes map[string]any `json:"attributes"`
	TraceID    string         `json:"trace_id"`
	SpanID     string         `json:"span_id"`
}

type mapEnv map[string]string

func (e mapEnv) LookupEnv(name string) (string, bool) {
	v, ok := e[name]
	return v, ok
}

// syncBuffer is a bytes.Buffer that goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// journal records what happened, in order, across goroutines.
type journal struct {
	mu     sync.Mutex
	events []string
}

func (j *journal) add(e string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, e)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.events)
}

// fakeService is a Service whose Serve and Shutdown a test sets, named by
// its String. A nil serve blocks until its context ends and returns nil; a
// nil shutdown returns nil.
type fakeService struct {
	name     string
	serve    func(ctx context.Context) error
	shutdown func(ctx context.Context) error
	journal  *journal
}

func (s *fakeService) String() string { return s.name }

func (s *fakeService) Serve(ctx context.Context) error {
	defer s.note("serve returned")
	if s.serve == nil {
		<-ctx.Done()
		return nil
	}
	return s.serve(ctx)
}

func (s *fakeService) Shutdown(ctx context.Context) error {
	s.note("shutdown")
	if s.shutdown == nil {
		return nil
	}
	return s.shutdown(ctx)
}

func (s *fakeService) note(e string) {
	if s.journal != nil {
		s.journal.add(s.name + " " + e)
	}
}

// services returns an Init that returns svcs.
func services(svcs ...app.Service) app.Init {
	return func(context.Context, *app.Setup) ([]app.Service, error) { return svcs, nil }
}

// start runs an App in a goroutine and returns the channel its exit code
// arrives on.
func start(ctx context.Context, init app.Init, opts ...app.Option) <-chan int {
	codes := make(chan int, 1)
	go func() { codes <- app.Run(ctx, init, opts...) }()
	return codes
}
