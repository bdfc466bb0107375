package telemetry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/log"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loam-dev/loam/app/apptest"
)

// scriptedWatches lists no ConfigMaps, and then answers each watch as a
// troubled API server would: the first watch sends a Secret, which a
// ConfigMap reflector doesn't expect, and then an error; the second can't
// be opened; the third stays open, sending nothing.
type scriptedWatches struct {
	mu      sync.Mutex
	watches int
}

func (*scriptedWatches) List(metav1.ListOptions) (runtime.Object, error) {
	return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
}

func (l *scriptedWatches) ListWithContext(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return l.List(o)
}

func (l *scriptedWatches) Watch(metav1.ListOptions) (watch.Interface, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watches++
	switch l.watches {
	case 1:
		w := watch.NewFakeWithChanSize(2, false)
		w.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "cache", Name: "s"}})
		w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 400, Reason: metav1.StatusReasonBadRequest, Message: "the watch broke"})
		return w, nil
	case 2:
		return nil, errors.New("connection reset by peer")
	}
	return watch.NewFake(), nil
}

func (l *scriptedWatches) WatchWithContext(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return l.Watch(o)
}

// IsWatchListSemanticsUnSupported keeps the reflector on list and watch.
func (*scriptedWatches) IsWatchListSemanticsUnSupported() bool { return true }

// driveClientGo runs client-go's code that logs, as the controller runs
// it, with the Recorder's Logger in its context: a reflector through a
// troubled watch, a work queue, and direct klog.FromContext calls, as
// client-go's leader election makes them. It checks what reached the
// LoggerProvider.
func driveClientGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec, tel := newRecorder(t)
		logger := rec.Logger()
		ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logger))

		// client-go's HandleError spaces errors out by a clock it read
		// when its package was initialized, outside the bubble: the first
		// call in a bubble sleeps until the bubble's clock catches up with
		// that reading. It is made here, before anything in the bubble
		// ticks, so the bubble's clock jumps there at once.
		utilruntime.HandleErrorWithContext(ctx, errors.New("the lease's holder is gone"), "error retrieving resource lock")
		klog.FromContext(ctx).WithName("leaderelection").Info("successfully acquired lease", "lease", klog.KRef("kube-system", "memcached"))
		klog.FromContext(ctx).V(2).Info("lease renewed")

		q := newQueue(t, rec)
		q.Add(namespaced)
		key, _ := q.Get()
		q.Done(key)
		q.Add(key)

		reflector := cache.NewReflectorWithOptions(&scriptedWatches{}, &corev1.ConfigMap{},
			cache.NewStore(cache.MetaNamespaceKeyFunc),
			cache.ReflectorOptions{Name: "configmaps", Logger: &logger})
		done := make(chan struct{})
		go func() {
			defer close(done)
			reflector.RunWithContext(ctx)
		}()

		time.Sleep(time.Minute)
		cancel()
		<-done
		q.ShutDown()

		requireClientGoRecords(t, tel)
	})
}

func requireClientGoRecords(t *testing.T, tel *apptest.Telemetry) {
	t.Helper()
	type seen struct {
		Severity log.Severity
		Body     string
		Attrs    map[string]string
	}
	var got []seen
	for _, r := range tel.Records() {
		a := recordAttrs(r)
		delete(a, "exception.type") // the SDK's, from the record's error
		got = append(got, seen{r.Severity(), r.Body().AsString(), a})
	}
	// Every record, in order: the chattier verbosities, such as the
	// reflector's "Caches populated" and the renewal, are dropped.
	require.Equal(t, []seen{
		{log.SeverityError, "error retrieving resource lock", map[string]string{
			"loam.kube.controller.name": controllerName,
			"logger":                    "UnhandledError",
			"exception.message":         "the lease's holder is gone",
		}},
		{log.SeverityInfo, "successfully acquired lease", map[string]string{
			"loam.kube.controller.name": controllerName,
			"logger":                    "leaderelection",
			"lease":                     `{"name":"memcached","namespace":"kube-system"}`,
		}},
		{log.SeverityError, "Unexpected watch event object type", map[string]string{
			"loam.kube.controller.name": controllerName,
			"logger":                    "UnhandledError",
			"reflector":                 "configmaps",
			"expectedType":              "*v1.ConfigMap",
			"actualType":                "*v1.Secret",
		}},
		{log.SeverityInfo, "Warning: watch ended with error", map[string]string{
			"loam.kube.controller.name": controllerName,
			"reflector":                 "configmaps",
			"type":                      "*v1.ConfigMap",
			"err":                       "the watch broke",
		}},
		{log.SeverityError, "Failed to watch", map[string]string{
			"loam.kube.controller.name": controllerName,
			"logger":                    "UnhandledError",
			"reflector":                 "configmaps",
			"type":                      "*v1.ConfigMap",
			"exception.message":         "connection reset by peer",
		}},
	}, got)
}

func TestClientGosRecordsReachTheLoggerProvider(t *testing.T) {
	driveClientGo(t)
}

// The arguments that make the test binary a child of
// TestNothingOfClientGosReachesTheRealStderr.
const (
	stderrChild = "loam-telemetry-stderr-child"
	// leakChild makes the child log through klog's global logger too, as
	// client-go code handed a context without a logger does, to show the
	// parent would see it.
	leakChild = "loam-telemetry-stderr-leak"
)

func TestNothingOfClientGosReachesTheRealStderr(t *testing.T) {
	if slices.Contains(os.Args, stderrChild) {
		driveClientGo(t)
		if slices.Contains(os.Args, leakChild) {
			klog.Background().Info("a record with no logger in its context")
			klog.Flush()
		}
		fmt.Println("child: drove client-go")
		return
	}

	run := func(t *testing.T, args ...string) (stdout, stderr string) {
		cmd := exec.CommandContext(t.Context(), os.Args[0],
			append([]string{"-test.run=^TestNothingOfClientGosReachesTheRealStderr$", "-test.count=1", "-test.v", "--", stderrChild}, args...)...)
		cmd.Env = []string{} // nothing of this process's environment
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", &out, &errOut)
		require.Contains(t, out.String(), "child: drove client-go\n")
		require.Contains(t, out.String(), "--- PASS: TestNothingOfClientGosReachesTheRealStderr")
		return out.String(), errOut.String()
	}

	t.Run("with the Logger in every context", func(t *testing.T) {
		_, stderr := run(t)
		require.Empty(t, stderr, "the child's fd 2")
	})
	t.Run("the check sees klog's global logger", func(t *testing.T) {
		_, stderr := run(t, leakChild)
		require.Contains(t, stderr, "a record with no logger in its context")
	})
}
