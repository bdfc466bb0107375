package kubetest

import (
	"flag"
	"io"
	"strconv"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// klogRouter owns klog's process-global logger once a cluster has started.
// The Kubernetes components log through klog's global functions and the
// logger klog.FromContext falls back to, so there is one destination per
// process: the router fans each line out to the writers of the clusters that
// asked for logs, and drops it when none did. Without the router klog would
// print every API server's chatter on standard error.
type klogRouter struct {
	mu      sync.Mutex
	writers map[*logSubscription]struct{}
	text    *textlogger.Config
	klogV   flag.Value // klog's own -v, which klog.V(n) checks
}

// logSubscription is one cluster's share of the router.
type logSubscription struct {
	w         io.Writer
	verbosity int
}

var (
	routerOnce sync.Once
	router     *klogRouter
)

// logs returns the process's router, installing it as klog's logger on
// first use. Installing is not safe while other goroutines log, so it
// happens before the first cluster starts anything.
func logs() *klogRouter {
	routerOnce.Do(func() {
		r := &klogRouter{writers: map[*logSubscription]struct{}{}}
		r.text = textlogger.NewConfig(textlogger.Output(fanOut{r}))
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs) //nolint:forbidigo // kubetest routes klog for the API server it embeds: see the package doc
		r.klogV = fs.Lookup("v").Value
		sink := &gatedSink{LogSink: textlogger.NewLogger(r.text).GetSink(), router: r}
		klog.SetLoggerWithOptions(logr.New(sink), klog.ContextualLogger(true)) //nolint:forbidigo // as above
		router = r
	})
	return router
}

// subscribe starts sending klog's lines to w, at least at verbosity, until
// the returned function is called. A nil w subscribes nothing.
func (r *klogRouter) subscribe(w io.Writer, verbosity int) (unsubscribe func()) {
	if w == nil {
		return func() {}
	}
	s := &logSubscription{w: w, verbosity: verbosity}
	r.mu.Lock()
	r.writers[s] = struct{}{}
	r.setVerbosityLocked()
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			delete(r.writers, s)
			r.setVerbosityLocked()
			r.mu.Unlock()
		})
	}
}

// setVerbosityLocked raises or lowers klog's verbosity to the highest any
// subscriber asked for. Both values are documented as safe to set at run
// time.
func (r *klogRouter) setVerbosityLocked() {
	v := 0
	for s := range r.writers {
		v = max(v, s.verbosity)
	}
	level := strconv.Itoa(v)
	_ = r.text.Verbosity().Set(level) // a non-negative integer always parses
	_ = r.klogV.Set(level)
}

func (r *klogRouter) active() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.writers) > 0
}

// fanOut writes each formatted line to every subscriber.
type fanOut struct{ r *klogRouter }

func (f fanOut) Write(p []byte) (int, error) {
	f.r.mu.Lock()
	defer f.r.mu.Unlock()
	for s := range f.r.writers {
		_, _ = s.w.Write(p) // a subscriber's broken writer must not stop the others
	}
	return len(p), nil
}

// gatedSink skips formatting entirely while nobody listens, which is the
// common case: a test suite that does not ask for logs pays nothing for
// the API server's.
type gatedSink struct {
	logr.LogSink
	router *klogRouter
}

func (g *gatedSink) Enabled(level int) bool {
	return g.router.active() && g.LogSink.Enabled(level)
}

func (g *gatedSink) Error(err error, msg string, kv ...any) {
	if g.router.active() {
		g.LogSink.Error(err, msg, kv...)
	}
}

func (g *gatedSink) WithValues(kv ...any) logr.LogSink {
	return &gatedSink{LogSink: g.LogSink.WithValues(kv...), router: g.router}
}

func (g *gatedSink) WithName(name string) logr.LogSink {
	return &gatedSink{LogSink: g.LogSink.WithName(name), router: g.router}
}

// WithCallDepth keeps the file:line of log lines pointing at the caller.
func (g *gatedSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := g.LogSink.(logr.CallDepthLogSink); ok {
		return &gatedSink{LogSink: cd.WithCallDepth(depth), router: g.router}
	}
	return g
}
