//go:build lintselftest

package lintselftest

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Forbidden makes one forbidden call of each kind.
func Forbidden() {
	_ = os.Getenv("HOME")                                // want: os.Getenv
	_, _ = os.ReadFile("/etc/hostname")                  // want: os.ReadFile
	signal.Notify(make(chan os.Signal, 1), os.Interrupt) // want: signal.Notify
	_, _ = net.Dial("tcp", "127.0.0.1:1")                // want: net.Dial
	_ = http.DefaultClient                               // want: http.DefaultClient
	_ = http.DefaultTransport                            // want: http.DefaultTransport
	_, _ = http.DefaultClient.Get("http://127.0.0.1:1")  //nolint:bodyclose // want: http.DefaultClient
	otel.SetTracerProvider(noop.NewTracerProvider())     // want: otel.SetTracerProvider
	klog.SetLogger(logr.Discard())                       // want: klog.SetLogger
	_, _ = rest.InClusterConfig()                        // want: rest.InClusterConfig
	_ = debug.SetGCPercent(50)                           // want: debug.SetGCPercent
	_ = debug.SetMemoryLimit(1 << 30)                    // want: debug.SetMemoryLimit
	_ = context.Background()
	os.Exit(0) // want: os.Exit
}
