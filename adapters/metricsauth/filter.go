// Package metricsauth lets a request through to a metrics endpoint only
// when the API server says its sender may read it, as kubebuilder's
// operators guard /metrics (controller-runtime's
// filters.WithAuthenticationAndAuthorization, kube-rbac-proxy before it):
// the request's bearer token is checked with a TokenReview, and the user
// it names with a SubjectAccessReview of the request's non-resource URL,
// such as verb get on /metrics. Both answers are cached, in bounded caches
// whose entries expire, so a Prometheus scraping every few seconds costs
// the API server two reviews every few minutes.
//
// kube.MetricsAuth assembles a Filter on the App's Client; app/httpmetrics
// runs it in front of its handler.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// The defaults DefaultConfig sets: controller-runtime's TTLs for an
// authorization (five minutes allowed, thirty seconds denied), the API
// server's own token cache's for an authentication (two minutes for a
// token that authenticates, ten seconds for one that doesn't), a cache of
// 1024 entries each, and ten seconds for a review, controller-runtime's.
const (
	DefaultAuthenticatedTTL   = 2 * time.Minute
	DefaultUnauthenticatedTTL = 10 * time.Second
	DefaultAllowedTTL         = 5 * time.Minute
	DefaultDeniedTTL          = 30 * time.Second
	DefaultCacheSize          = 1024
	DefaultReviewTimeout      = 10 * time.Second
)

// Config is what a Filter reviews with, and how long it trusts an answer.
type Config struct {
	// TokenReviews creates the TokenReviews that authenticate a request's
	// bearer token.
	TokenReviews authenticationclient.TokenReviewInterface
	// AccessReviews creates the SubjectAccessReviews that authorize the
	// token's user.
	AccessReviews authorizationclient.SubjectAccessReviewInterface
	// Now tells the caches the time, such as time.Now.
	Now func() time.Time
	// CacheSize bounds each cache, of authentications and of
	// authorizations: past it, the least recently used entry goes.
	CacheSize int
	// AuthenticatedTTL and UnauthenticatedTTL are how long a TokenReview's
	// answer is trusted, that the token names a user or that it doesn't;
	// AllowedTTL and DeniedTTL a SubjectAccessReview's. A review that
	// fails is never cached.
	AuthenticatedTTL, UnauthenticatedTTL, AllowedTTL, DeniedTTL time.Duration
	// ReviewTimeout bounds each review's request.
	ReviewTimeout time.Duration
	// Logger takes a WARN record for each review that fails.
	Logger log.Logger
}

// DefaultConfig returns a Config with the default TTLs, cache size and
// timeout, time.Now, and no clients or Logger, which the caller sets.
func DefaultConfig() Config {
	return Config{
		Now:              time.Now,
		CacheSize:        DefaultCacheSize,
		AuthenticatedTTL: DefaultAuthenticatedTTL, UnauthenticatedTTL: DefaultUnauthenticatedTTL,
		AllowedTTL: DefaultAllowedTTL, DeniedTTL: DefaultDeniedTTL,
		ReviewTimeout: DefaultReviewTimeout,
	}
}

// Filter authenticates and authorizes requests through the API server.
// New makes one; it is safe for concurrent use.
type Filter struct {
	c Config
	// authentications maps a token's SHA-256 to its authentication;
	// authorizations a user and request's key to whether it is allowed.
	authentications, authorizations *cache.LRUExpireCache
}

// authentication is a TokenReview's answer.
type authentication struct {
	ok   bool
	user authenticationv1.UserInfo
}

// clock adapts Config.Now to the caches' clock.
type clock func() time.Time

func (c clock) Now() time.Time { return c() }

// New returns a Filter reviewing as c says. It fails, naming every
// mistake at once, when a client, Now or Logger is nil, and when
// CacheSize, a TTL or ReviewTimeout is not positive.
func New(c Config) (*Filter, error) {
	var errs []error
	for field, isNil := range map[string]bool{
		"TokenReviews": c.TokenReviews == nil, "AccessReviews": c.AccessReviews == nil,
		"Now": c.Now == nil, "Logger": c.Logger == nil,
	} {
		if isNil {
			errs = append(errs, fmt.Errorf("metricsauth: Config.%s is nil", field))
		}
	}
	if c.CacheSize < 1 {
		errs = append(errs, fmt.Errorf("metricsauth: Config.CacheSize is %d, below 1", c.CacheSize))
	}
	for field, d := range map[string]time.Duration{
		"AuthenticatedTTL": c.AuthenticatedTTL, "UnauthenticatedTTL": c.UnauthenticatedTTL,
		"AllowedTTL": c.AllowedTTL, "DeniedTTL": c.DeniedTTL, "ReviewTimeout": c.ReviewTimeout,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("metricsauth: Config.%s is %v, not positive", field, d))
		}
	}
	if len(errs) > 0 {
		// The maps' order is random; the error's is not.
		slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return nil, errors.Join(errs...)
	}
	return &Filter{
		c:               c,
		authentications: cache.NewLRUExpireCacheWithClock(c.CacheSize, clock(c.Now)),
		authorizations:  cache.NewLRUExpireCacheWithClock(c.CacheSize, clock(c.Now)),
	}, nil
}

// Wrap returns a handler that answers a request itself or passes it on to
// next: 401 Unauthorized without a bearer token or with one the API
// server does not authenticate, 403 Forbidden when the token's user may
// not use the request's method, lowercased, on its path, and 500 when a
// review fails. It has httpmetrics.Filter's type.
func (f *Filter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r)
		if !ok {
			unauthorized(w, "no bearer token")
			return
		}
		ctx := r.Context()
		user, ok, err := f.authenticate(ctx, token)
		if err != nil {
			f.warn(ctx, "metrics request not authenticated: the TokenReview failed", err)
			http.Error(w, "Internal Server Error: authentication failed", http.StatusInternalServerError)
			return
		}
		if !ok {
			unauthorized(w, "the bearer token does not authenticate")
			return
		}
		verb, path := strings.ToLower(r.Method), r.URL.Path
		allowed, err := f.authorize(ctx, user, verb, path)
		if err != nil {
			f.warn(ctx, "metrics request not authorized: the SubjectAccessReview failed", err)
			http.Error(w, "Internal Server Error: authorization failed", http.StatusInternalServerError)
			return
		}
		if !allowed {
			http.Error(w, fmt.Sprintf("Forbidden: %s may not %s %s", user.Username, verb, path), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearer returns r's bearer token, and whether it has one.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// unauthorized answers 401, saying why.
func unauthorized(w http.ResponseWriter, why string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
	http.Error(w, "Unauthorized: "+why, http.StatusUnauthorized)
}

// authenticate returns the user token names and true, or false when it
// names none, from the cache or else from a TokenReview, whose answer it
// caches. It returns the review's error, naming it.
func (f *Filter) authenticate(ctx context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	// The cache keys a token's hash, so a heap dump holds no credential.
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	if v, ok := f.authentications.Get(key); ok {
		a := v.(authentication)
		return a.user, a.ok, nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.c.ReviewTimeout)
	defer cancel()
	review, err := f.c.TokenReviews.Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, false, fmt.Errorf("creating a TokenReview: %w", err)
	}
	a := authentication{ok: review.Status.Authenticated, user: review.Status.User}
	ttl := f.c.AuthenticatedTTL
	if !a.ok {
		ttl = f.c.UnauthenticatedTTL
	}
	f.authentications.Add(key, a, ttl)
	return a.user, a.ok, nil
}

// authorize returns whether user may use verb on the non-resource path,
// from the cache or else from a SubjectAccessReview, whose answer it
// caches. It returns the review's error, naming it.
func (f *Filter) authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (bool, error) {
	key := accessKey(user, verb, path)
	if v, ok := f.authorizations.Get(key); ok {
		return v.(bool), nil
	}
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	ctx, cancel := context.WithTimeout(ctx, f.c.ReviewTimeout)
	defer cancel()
	review, err := f.c.AccessReviews.Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("creating a SubjectAccessReview of %s %s for %s: %w", verb, path, user.Username, err)
	}
	allowed := review.Status.Allowed && !review.Status.Denied
	ttl := f.c.AllowedTTL
	if !allowed {
		ttl = f.c.DeniedTTL
	}
	f.authorizations.Add(key, allowed, ttl)
	return allowed, nil
}

// accessKey is the authorization cache's key of user using verb on path:
// everything a SubjectAccessReview is asked, each part length-prefixed so
// no two questions share a key.
func accessKey(user authenticationv1.UserInfo, verb, path string) string {
	var b strings.Builder
	part := func(s string) { fmt.Fprintf(&b, "%d:%s", len(s), s) }
	part(user.Username)
	part(user.UID)
	part(verb)
	part(path)
	groups := slices.Clone(user.Groups)
	slices.Sort(groups)
	fmt.Fprintf(&b, "g%d", len(groups))
	for _, g := range groups {
		part(g)
	}
	keys := make([]string, 0, len(user.Extra))
	for k := range user.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fmt.Fprintf(&b, "e%d", len(keys))
	for _, k := range keys {
		part(k)
		values := slices.Clone(user.Extra[k])
		slices.Sort(values)
		fmt.Fprintf(&b, "v%d", len(values))
		for _, v := range values {
			part(v)
		}
	}
	return b.String()
}

// exceptionMessage is the attribute of a record's error text.
var exceptionMessage = attribute.Key("exception.message")

// warn emits a WARN record of body and err.
func (f *Filter) warn(ctx context.Context, body string, err error) {
	var r log.Record
	r.SetTimestamp(f.c.Now())
	r.SetSeverity(log.SeverityWarn)
	r.SetSeverityText(log.SeverityWarn.String())
	r.SetBody(attribute.StringValue(body))
	r.SetErr(err)
	r.AddAttributes(exceptionMessage.String(err.Error()))
	f.c.Logger.Emit(ctx, r)
}
