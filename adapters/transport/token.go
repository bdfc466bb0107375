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
type tokenCache struct {
	fetch func(context.Context) (string, error)

	mu      sync.Mutex
	token   string
	fetched time.Time // when fetch was last called, after a first success
}

// get returns the token a request carries. Until a call to fetch has
// succeeded, each get calls it and returns its error.
func (c *tokenCache) get(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && time.Since(c.fetched) < TokenTTL {
		return c.token, nil
	}
	tok, err := c.fetch(ctx)
	if err == nil && tok == "" {
		err = ErrEmptyToken
	}
	if err != nil {
		if c.token != "" {
			// Keep the last token: the one the kubelet rotated outlives
			// the minute, and the request goes on. Try again in a minute.
			c.fetched = time.Now()
			return c.token, nil
		}
		return "", fmt.Errorf("kube: Connection.Token: %w", err)
	}
	c.token, c.fetched = tok, time.Now()
	return tok, nil
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
