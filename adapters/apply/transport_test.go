package apply_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/ports"
)

// handlerServer is an API server over TLS and HTTP/2 that answers with h.
func handlerServer(t *testing.T, h http.HandlerFunc) *rest.Config {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL, Transport: srv.Client().Transport, QPS: -1}
}

// TestWriter_ApplyObject_fails_as_the_dynamic_client_does_before_an_answer:
// ApplyObject reads its answer through Stream, where client-go's dynamic
// client (as ApplyObject once did) goes through Do; before a successful
// answer's body, their errors are the same: retries exhausted, a deadline
// passing while a Retry-After is waited out, or before any answer.
func TestWriter_ApplyObject_fails_as_the_dynamic_client_does_before_an_answer(t *testing.T) {
	busy, _ := refused(t, apierrors.NewTooManyRequests("too many requests, please try again later", 0))
	answerBusy := func(after string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", after)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write(busy.body)
		}
	}
	for name, c := range map[string]struct {
		h        http.HandlerFunc
		deadline time.Duration
	}{
		"retries exhausted":            {h: answerBusy("0")},
		"a deadline in a Retry-After":  {h: answerBusy("1"), deadline: 200 * time.Millisecond},
		"a deadline before any answer": {h: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, deadline: 200 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := handlerServer(t, c.h)
			ctx := func() context.Context {
				if c.deadline == 0 {
					return t.Context()
				}
				ctx, cancel := context.WithTimeout(t.Context(), c.deadline)
				t.Cleanup(cancel)
				return ctx
			}
			_, got := newWriter(t, cfg, memcacheds, "Memcached").ApplyObject(ctx(), key, []byte(objectDoc))
			dyn, err := dynamic.NewForConfig(cfg)
			require.NoError(t, err)
			_, want := dyn.Resource(memcacheds).Namespace("ns").Patch(ctx(), "a", types.ApplyPatchType, []byte(objectDoc),
				metav1.PatchOptions{FieldManager: manager, Force: new(true)})
			require.Error(t, want)
			require.EqualError(t, got, want.Error())
			require.Equal(t, errors.Is(want, context.DeadlineExceeded), errors.Is(got, context.DeadlineExceeded))
			require.Equal(t, apierrors.IsTooManyRequests(want), apierrors.IsTooManyRequests(got))
		})
	}
}

// warnings counts the Warning headers client-go hands its handler.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, code int, _, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, fmt.Sprint(code, " ", text))
}

// TestWriter_hands_warnings_to_the_Config_s_handler: a Warning the API
// server sends, such as of a deprecated field, reaches the rest.Config's
// warning handler once per apply, whether the apply succeeds or not.
func TestWriter_hands_warnings_to_the_Config_s_handler(t *testing.T) {
	conflict, _ := refused(t, apierrors.NewConflict(memcachedGR, "a", errors.New("uid mismatch")))
	for name, a := range map[string]answer{"accepted": ok(object(t, "a", nil, nil)), "refused": conflict} {
		t.Run(name, func(t *testing.T) {
			cfg := handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Add("Warning", `299 - "spec.size is deprecated"`)
				w.Header().Set("Content-Type", a.contentType)
				w.WriteHeader(a.code)
				_, _ = w.Write(a.body)
			})
			handler := &warnings{}
			cfg.WarningHandlerWithContext = handler
			w := newWriter(t, cfg, memcacheds, "Memcached")
			_, _ = w.ApplyObject(t.Context(), key, []byte(objectDoc))
			_, _ = w.ApplyStatus(t.Context(), key, "uid-1", []byte(`{}`))
			_ = w.ApplyFinalizer(t.Context(), key, "uid-1", fin, true)
			_ = w.ApplyFinalizer(t.Context(), key, "uid-1", fin, false)
			require.Equal(t, slices.Repeat([]string{"299 spec.size is deprecated"}, 4), handler.got)
		})
	}
}

// TestWriter_concurrent_applies_get_their_own_answers: answers are read
// into buffers shared between applies, and requests are sent again on a
// 429; under -race, applies made at once, each first refused, each get
// back the answer to their own request, which echoes it.
func TestWriter_concurrent_applies_get_their_own_answers(t *testing.T) {
	busy, _ := refused(t, apierrors.NewTooManyRequests("busy", 0))
	var mu sync.Mutex
	seen := map[string]int{}
	cfg := handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[r.URL.Path]++
		first := seen[r.URL.Path] == 1
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if first {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write(busy.body)
			return
		}
		_, _ = w.Write(body) // the object as sent, its status included
	})
	w := newWriter(t, cfg, memcacheds, "Memcached")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 5 {
				name := fmt.Sprintf("o%d-%d", i, j)
				k := ports.Key{Namespace: "ns", Name: name}
				doc := fmt.Sprintf(`{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":%q,"namespace":"ns"},"spec":{"pad":%q}}`,
					name, strings.Repeat("x", 1000*j))
				got, err := w.ApplyObject(t.Context(), k, []byte(doc))
				if err != nil || string(got) != doc {
					t.Errorf("the apply of %s: %v, answer %.60q", name, err, got)
				}
				stored, err := w.ApplyStatus(t.Context(), k, types.UID("uid-"+name), fmt.Appendf(nil, `{"who":%q,"pad":%q}`, name, strings.Repeat("y", 500*j)))
				var status struct{ Who string }
				if err != nil || json.Unmarshal(stored, &status) != nil || status.Who != name {
					t.Errorf("the status apply of %s: %v, status %.60q", name, err, stored)
				}
			}
		})
	}
	wg.Wait()
}
