package informer

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// fakeServer serves the list and watch of one ConfigMap as the API
// server would: each watch ends after its TimeoutSeconds. forbidden
// refuses both, as RBAC does once a Role is revoked; hang makes each new
// watch send nothing and never end, as a broken connection does.
type fakeServer struct {
	mu        sync.Mutex
	cm        *corev1.ConfigMap
	forbidden bool
	hang      bool
	hungAt    time.Time
}

var configMaps = schema.GroupResource{Resource: "configmaps"}

func (f *fakeServer) set(change func(f *fakeServer)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

func (f *fakeServer) lw() cache.ListerWatcher {
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.forbidden {
				return nil, apierrors.NewForbidden(configMaps, "switch", nil)
			}
			list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
			if f.cm != nil {
				list.Items = append(list.Items, *f.cm)
			}
			return list, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.forbidden {
				return nil, apierrors.NewForbidden(configMaps, "switch", nil)
			}
			w := watch.NewRaceFreeFake()
			if o.SendInitialEvents != nil && *o.SendInitialEvents {
				// A watch-list, client-go's list: the ConfigMap, then the
				// bookmark that ends the initial events.
				if f.cm != nil {
					w.Add(f.cm.DeepCopy())
				}
				w.Action(watch.Bookmark, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					ResourceVersion: "1", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"},
				}})
			}
			if f.hang {
				f.hungAt = time.Now()
				return w, nil
			}
			timeout := time.Duration(*o.TimeoutSeconds) * time.Second
			time.AfterFunc(timeout, w.Stop)
			return w, nil
		},
	}
}

type report struct {
	at    time.Time
	data  map[string]string
	found bool
	err   error
}

// watchFake runs watchConfigMap over f until the test's end, and returns
// what it reported so far.
func watchFake(t *testing.T, f *fakeServer) func() []report {
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	var reports []report
	done := make(chan error, 1)
	go func() {
		done <- watchConfigMap(ctx, f.lw(), "ops/switch", func(data map[string]string, found bool, err error) {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, report{time.Now(), data, found, err})
		})
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return func() []report {
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		return append([]report(nil), reports...)
	}
}

func switchMap(word string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "switch", ResourceVersion: "1"},
		Data:       map[string]string{"switch": word},
	}
}

// A healthy ConfigMap is read once and never reported unreadable; once
// RBAC refuses it, it is reported unreadable within ConfigMapStale; once
// RBAC grants it again, it is reported afresh.
func TestWatchConfigMap_fails_closed_when_RBAC_refuses_it(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeServer{cm: switchMap("on")}
		reports := watchFake(t, f)
		time.Sleep(5 * time.Minute)
		got := reports()
		require.Len(t, got, 1, "a healthy ConfigMap is read once: %v", got)
		require.Equal(t, map[string]string{"switch": "on"}, got[0].data)

		revoked := time.Now()
		f.set(func(f *fakeServer) { f.forbidden = true })
		time.Sleep(ConfigMapStale)
		got = reports()
		require.Len(t, got, 2)
		require.False(t, got[1].found)
		require.True(t, apierrors.IsForbidden(got[1].err), "the record says why: %v", got[1].err)
		require.ErrorContains(t, got[1].err, "configmap ops/switch: not read for 30s")
		require.LessOrEqual(t, got[1].at.Sub(revoked), ConfigMapStale)

		time.Sleep(10 * time.Minute)
		require.Len(t, reports(), 2, "reported once while it stays unreadable")

		f.set(func(f *fakeServer) { f.forbidden = false })
		// client-go backs off a failing list up to 30 s, jittered up to
		// twice that.
		time.Sleep(2 * time.Minute)
		got = reports()
		require.Len(t, got, 3)
		require.True(t, got[2].found, "read again, it is reported afresh")
		require.NoError(t, got[2].err)
		require.Equal(t, map[string]string{"switch": "on"}, got[2].data)
	})
}

// A watch that hangs, sending nothing and never ending, leaves the
// ConfigMap reported unreadable within ConfigMapStale of its start.
func TestWatchConfigMap_fails_closed_when_the_watch_hangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeServer{cm: switchMap("on")}
		reports := watchFake(t, f)
		time.Sleep(time.Minute)
		require.Len(t, reports(), 1)

		f.set(func(f *fakeServer) { f.hang = true })
		time.Sleep(ConfigMapStale + ConfigMapWatchTimeout)
		got := reports()
		require.Len(t, got, 2)
		require.False(t, got[1].found)
		require.ErrorIs(t, got[1].err, errNoAnswer)
		require.LessOrEqual(t, got[1].at.Sub(f.hungAt), ConfigMapStale)
	})
}

// A ConfigMap that can't be listed from the start is reported unreadable
// too, after ConfigMapStale.
func TestWatchConfigMap_reports_a_ConfigMap_it_never_read(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeServer{cm: switchMap("on"), forbidden: true}
		reports := watchFake(t, f)
		time.Sleep(ConfigMapStale)
		got := reports()
		require.Len(t, got, 1)
		require.True(t, apierrors.IsForbidden(got[0].err))
	})
}

// A ConfigMap that changed during a stale spell is reported afresh by the
// list that ends it, even when the informer's handler sees the list's
// object before the watchdog takes the list's answer: the handler must
// not find the spell still on and drop the report.
func TestWatchConfigMap_reports_afresh_when_the_handler_runs_before_the_watchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeServer{cm: switchMap("on")}
		ctx, cancel := context.WithCancel(t.Context())
		var mu sync.Mutex
		var got []report
		w := &configMapWatch{
			changed: func(data map[string]string, found bool, err error) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, report{time.Now(), data, found, err})
			},
			// The watchdog is slow to take an answer: the handlers run
			// first.
			answeredSeen: func() { time.Sleep(time.Second) },
		}
		done := make(chan error, 1)
		go func() { done <- w.run(ctx, f.lw(), "ops/switch") }()
		defer func() {
			cancel()
			require.NoError(t, <-done)
		}()
		reports := func() []report {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			return append([]report(nil), got...)
		}
		time.Sleep(time.Minute)
		require.Len(t, reports(), 1)

		f.set(func(f *fakeServer) { f.forbidden = true })
		time.Sleep(ConfigMapStale + ConfigMapWatchTimeout)
		require.Len(t, reports(), 2)
		require.False(t, reports()[1].found)

		// Turned off during the spell, then readable again.
		f.set(func(f *fakeServer) {
			f.forbidden = false
			f.cm = switchMap("off")
			f.cm.ResourceVersion = "2"
		})
		time.Sleep(2 * time.Minute)
		last := reports()
		require.Greater(t, len(last), 2, "read again, it is reported afresh")
		require.True(t, last[len(last)-1].found)
		require.Equal(t, map[string]string{"switch": "off"}, last[len(last)-1].data)
	})
}
