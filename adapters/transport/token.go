package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// TokenTTL is how long a token is used before Token is called again. A
// service account token the kubelet rotates outlives it by far, so a
// rotation is picked up within a minute.
const TokenTTL = time.Minute

// ErrEmptyToken is the error of a Token call that returned "": a request
// never carries a bare "Bearer".
var ErrEmptyToken = errors.New("the token is empty")

// tokenCache calls a Token function at most once per TokenTTL, however
// many requests ask for it, and keeps the last token when a call fails.
//
// A call runs on a goroutine of its own, without the lock held, so a slow
// Token holds up no request that has a token to use. Requests that need a
// token while a call is in flight wait for that call rather than making
// their own, and each stops waiting when its own context ends. The call's
// context carries the values of the request that started it, and is
// cancelled only once every request waiting for it has stopped waiting.
type tokenCache struct {
	fetch func(context.Context) (string, error)

	mu      sync.Mutex
	token   string
	fetched time.Time  // when fetch last returned, after a first success
	call    *tokenCall // the call in flight, nil when none is
}

// tokenCall is one call of fetch, shared by the requests waiting for it.
type tokenCall struct {
	done   chan struct{} // closed when tok and err are set
	tok    string
	err    error
	cancel context.CancelFunc
	// waiting counts the requests waiting for the call, under the cache's
	// lock; when the last of them stops waiting, the call is abandoned.
	waiting int
}

// get returns the token a request carries. Until a call to fetch has
// succeeded, each get waits for a call — the one in flight, or a new one —
// and returns its error. When ctx ends first, get returns an error wrapping
// ctx's cause at once, and the call goes on for the other requests waiting.
func (c *tokenCache) get(ctx context.Context) (string, error) {
	c.mu.Lock()
	if c.token != "" && time.Since(c.fetched) < TokenTTL {
		tok := c.token
		c.mu.Unlock()
		return tok, nil
	}
	if err := ctx.Err(); err != nil {
		// No request would carry the token: start no call for it.
		c.mu.Unlock()
		return "", fmt.Errorf("kube: Connection.Token: %w", context.Cause(ctx))
	}
	call := c.call
	if call == nil {
		call = c.start(ctx)
	}
	call.waiting++
	c.mu.Unlock()

	select {
	case <-call.done:
		return call.tok, call.err
	case <-ctx.Done():
		c.leave(call)
		return "", fmt.Errorf("kube: Connection.Token: %w", context.Cause(ctx))
	}
}

// start begins a call of fetch on a goroutine of its own, with ctx's
// values but not its cancellation, and returns it. Its caller holds the
// lock.
func (c *tokenCache) start(ctx context.Context) *tokenCall {
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	call := &tokenCall{done: make(chan struct{}), cancel: cancel}
	c.call = call
	go func() {
		defer cancel()
		tok, err := c.fetchSafely(callCtx)
		c.finish(call, tok, err)
	}()
	return call
}

// fetchSafely calls fetch, and returns a panic in it as an error: it runs
// on the cache's own goroutine, where a panic would end the process
// instead of failing the requests waiting for it.
func (c *tokenCache) fetchSafely(ctx context.Context) (tok string, err error) {
	defer func() {
		if p := recover(); p != nil {
			tok, err = "", fmt.Errorf("panic: %v", p)
		}
	}()
	return c.fetch(ctx)
}

// finish records what call's fetch returned and hands its waiters the
// token they carry. A call every waiter abandoned has no waiters and
// changes nothing: its error may be only the cancellation, and the next
// request calls afresh.
func (c *tokenCache) finish(call *tokenCall, tok string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(call.done)
	if c.call != call {
		return
	}
	c.call = nil
	if err == nil && tok == "" {
		err = ErrEmptyToken
	}
	switch {
	case err == nil:
		c.token, c.fetched = tok, time.Now()
		call.tok = tok
	case c.token != "":
		// Keep the last token: the one the kubelet rotated outlives the
		// minute, and the request goes on. Try again in a minute.
		c.fetched = time.Now()
		call.tok = c.token
	default:
		call.err = fmt.Errorf("kube: Connection.Token: %w", err)
	}
}

// leave records that a waiter of call stopped waiting. When it was the
// last, the call is abandoned: its context is cancelled so that a Token
// that honours it stops, and the next request starts a call of its own.
func (c *tokenCache) leave(call *tokenCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	call.waiting--
	if call.waiting > 0 || c.call != call {
		return
	}
	c.call = nil
	call.cancel()
}

// bearer adds the cached token to every request.
type bearer struct {
	tokens *tokenCache
	next   http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := b.tokens.get(r.Context())
	if err != nil {
		closeBody(r)
		return nil, err
	}
	r = r.Clone(r.Context()) // a RoundTripper must not change the request it is handed
	r.Header.Set("Authorization", "Bearer "+tok)
	return b.next.RoundTrip(r)
}

// closeBody closes a request's body that won't be sent, as a RoundTripper
// must even when it fails.
func closeBody(r *http.Request) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
}
