package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain checks that no test of the package leaves a goroutine behind,
// such as a Token call nobody waits for.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// slowToken is a Token function that blocks each call until the test
// answers it, or the call's context ends.
type slowToken struct {
	calls   atomic.Int32
	answers chan tokenAnswer
	// ended counts the calls that returned because their context ended.
	ended atomic.Int32
}

type tokenAnswer struct {
	tok string
	err error
}

func newSlowToken() *slowToken { return &slowToken{answers: make(chan tokenAnswer)} }

func (s *slowToken) fetch(ctx context.Context) (string, error) {
	s.calls.Add(1)
	select {
	case a := <-s.answers:
		return a.tok, a.err
	case <-ctx.Done():
		s.ended.Add(1)
		return "", ctx.Err()
	}
}

// result is what one get returned, and when.
type result struct {
	tok string
	err error
	at  time.Time
}

// getAsync runs c.get(ctx) on a goroutine and returns where its result
// lands.
func getAsync(ctx context.Context, c *tokenCache) <-chan result {
	out := make(chan result, 1)
	go func() {
		tok, err := c.get(ctx)
		out <- result{tok: tok, err: err, at: time.Now()}
	}()
	return out
}

func TestTokenCache_concurrent_requests_share_one_call(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		token := newSlowToken()
		c := &tokenCache{fetch: token.fetch}
		first, second := getAsync(t.Context(), c), getAsync(t.Context(), c)
		synctest.Wait()
		require.Equal(t, int32(1), token.calls.Load(), "one call for both requests")

		token.answers <- tokenAnswer{tok: "t1"}
		require.Equal(t, "t1", (<-first).tok)
		require.Equal(t, "t1", (<-second).tok)
		require.Equal(t, int32(1), token.calls.Load())
	})
}

func TestTokenCache_a_waiter_whose_context_ends_returns_at_once(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		token := newSlowToken()
		c := &tokenCache{fetch: token.fetch}
		impatient, cancel := context.WithCancelCause(t.Context())
		gaveUp, patient := getAsync(impatient, c), getAsync(t.Context(), c)
		synctest.Wait()

		cancelled := time.Now()
		cause := errors.New("the reconcile was cancelled")
		cancel(cause)
		synctest.Wait()
		r := <-gaveUp
		require.ErrorIs(t, r.err, cause, "the waiter's own context's cause")
		require.ErrorContains(t, r.err, "kube: Connection.Token: ")
		require.Equal(t, cancelled, r.at, "at once, while Token is still in flight")
		require.Zero(t, token.ended.Load(), "the call goes on for the other waiter")

		time.Sleep(time.Hour) // a slow Token
		token.answers <- tokenAnswer{tok: "t1"}
		require.Equal(t, result{tok: "t1", at: time.Now()}, <-patient)
		require.Equal(t, int32(1), token.calls.Load())
	})
}

func TestTokenCache_a_call_every_waiter_left_is_cancelled_and_forgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		token := newSlowToken()
		c := &tokenCache{fetch: token.fetch}
		ctx, cancel := context.WithCancel(t.Context())
		a, b := getAsync(ctx, c), getAsync(ctx, c)
		synctest.Wait()
		cancel()
		synctest.Wait()
		require.ErrorIs(t, (<-a).err, context.Canceled)
		require.ErrorIs(t, (<-b).err, context.Canceled)
		require.Equal(t, int32(1), token.ended.Load(), "no one waits, so the call's context ends")

		// The abandoned call's error counts for nothing: the next request
		// calls afresh, and gets the token.
		next := getAsync(t.Context(), c)
		synctest.Wait()
		require.Equal(t, int32(2), token.calls.Load())
		token.answers <- tokenAnswer{tok: "t2"}
		require.Equal(t, "t2", (<-next).tok)
	})
}

func TestTokenCache_a_request_whose_context_has_ended_calls_nothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		token := newSlowToken()
		c := &tokenCache{fetch: token.fetch}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := c.get(ctx)
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, token.calls.Load())
	})
}

func TestTokenCache_the_call_s_context_carries_the_request_s_values(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type key struct{}
		var got any
		c := &tokenCache{fetch: func(ctx context.Context) (string, error) {
			got = ctx.Value(key{})
			return "t", nil
		}}
		_, err := c.get(context.WithValue(t.Context(), key{}, "the request's"))
		require.NoError(t, err)
		require.Equal(t, "the request's", got)
	})
}

// TestTokenCache_keeps_its_documented_semantics runs each get of steps, one
// after the other, a given time after the one before, against a Token that
// answers each call with the next of answers.
func TestTokenCache_keeps_its_documented_semantics(t *testing.T) {
	errGone := errors.New("the token file is gone")
	type step struct {
		after time.Duration // since the step before
		tok   string        // the token get returns
		err   string        // or the error it returns
	}
	for _, tc := range []struct {
		name    string
		answers []tokenAnswer
		steps   []step
		calls   int32
	}{
		{
			name:    "once per TokenTTL",
			answers: []tokenAnswer{{tok: "t1"}, {tok: "t2"}},
			steps:   []step{{tok: "t1"}, {after: TokenTTL - time.Nanosecond, tok: "t1"}, {after: time.Nanosecond, tok: "t2"}},
			calls:   2,
		},
		{
			name:    "the last good token kept on a failure, for a TokenTTL",
			answers: []tokenAnswer{{tok: "t1"}, {err: errGone}, {tok: ""}, {tok: "t2"}},
			steps: []step{
				{tok: "t1"}, {after: TokenTTL, tok: "t1"}, {after: TokenTTL - time.Nanosecond, tok: "t1"},
				{after: time.Nanosecond, tok: "t1"}, {after: TokenTTL, tok: "t2"},
			},
			calls: 4,
		},
		{
			name:    "each request fails until a first success",
			answers: []tokenAnswer{{err: errGone}, {tok: ""}, {tok: "t1"}},
			steps: []step{
				{err: "kube: Connection.Token: the token file is gone"},
				{err: "kube: Connection.Token: the token is empty"},
				{tok: "t1"}, {tok: "t1"},
			},
			calls: 3,
		},
		{
			name:    "a panic in Token fails the request",
			answers: nil,
			steps:   []step{{err: "kube: Connection.Token: panic: no answer left"}},
			calls:   1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				c := &tokenCache{fetch: func(context.Context) (string, error) {
					n := int(calls.Add(1))
					if n > len(tc.answers) {
						panic("no answer left")
					}
					return tc.answers[n-1].tok, tc.answers[n-1].err
				}}
				for i, s := range tc.steps {
					time.Sleep(s.after)
					tok, err := c.get(t.Context())
					if s.err != "" {
						require.EqualError(t, err, s.err, "step %d", i)
						continue
					}
					require.NoError(t, err, "step %d", i)
					require.Equal(t, s.tok, tok, "step %d", i)
				}
				require.Equal(t, tc.calls, calls.Load())
			})
		})
	}
}

func TestTokenCache_an_empty_token_is_ErrEmptyToken(t *testing.T) {
	c := &tokenCache{fetch: func(context.Context) (string, error) { return "", nil }}
	_, err := c.get(t.Context())
	require.ErrorIs(t, err, ErrEmptyToken)
}

// BenchmarkTokenCache_get measures a request that finds the token cached,
// as every request but one a minute does, from many goroutines at once.
//
//	go test -run '^$' -bench TokenCache -benchmem ./adapters/transport/
func BenchmarkTokenCache_get(b *testing.B) {
	c := &tokenCache{fetch: func(context.Context) (string, error) { return "token", nil }}
	var once sync.Once
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.get(context.Background()); err != nil {
				once.Do(func() { b.Error(fmt.Errorf("get: %w", err)) })
			}
		}
	})
}
