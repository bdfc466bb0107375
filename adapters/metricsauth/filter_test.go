package metricsauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	lognoop "go.opentelemetry.io/otel/log/noop"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/adapters/metricsauth"
	"github.com/loam-dev/loam/app/apptest"
)

// apiServer answers reviews as an API server would, from its tokens and
// its RBAC, and counts them.
type apiServer struct {
	users   map[string]string // token → user
	allowed map[string]bool   // user → may get /metrics
	fail    error             // when set, every review fails with it

	tokenReviews, accessReviews int
	asked                       []authorizationv1.SubjectAccessReviewSpec
}

type tokenReviews struct{ s *apiServer }

func (t tokenReviews) Create(_ context.Context, r *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	t.s.tokenReviews++
	if t.s.fail != nil {
		return nil, t.s.fail
	}
	out := r.DeepCopy()
	if user, ok := t.s.users[r.Spec.Token]; ok {
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
			Username: user, UID: "uid-" + user, Groups: []string{"system:authenticated", "team"},
			Extra: map[string]authenticationv1.ExtraValue{"scopes": {"b", "a"}},
		}}
	} else {
		out.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
	}
	return out, nil
}

type accessReviews struct{ s *apiServer }

func (a accessReviews) Create(_ context.Context, r *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	a.s.accessReviews++
	if a.s.fail != nil {
		return nil, a.s.fail
	}
	a.s.asked = append(a.s.asked, r.Spec)
	out := r.DeepCopy()
	attrs := r.Spec.NonResourceAttributes
	out.Status.Allowed = a.s.allowed[r.Spec.User] && attrs != nil && attrs.Verb == "get" && attrs.Path == "/metrics"
	return out, nil
}

func newAPIServer() *apiServer {
	return &apiServer{
		users:   map[string]string{"good": "scraper", "other": "intruder", "good2": "scraper2"},
		allowed: map[string]bool{"scraper": true, "scraper2": true},
	}
}

// config returns the defaults on s's reviews, in the test's time.
func config(s *apiServer) metricsauth.Config {
	c := metricsauth.DefaultConfig()
	c.TokenReviews, c.AccessReviews = tokenReviews{s}, accessReviews{s}
	c.Logger = lognoop.NewLoggerProvider().Logger("test")
	return c
}

// get sends GET /metrics with header as its Authorization through f,
// returning the status and the body.
func get(t *testing.T, f *metricsauth.Filter, header string) (int, string) {
	t.Helper()
	h := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil)
	if header != "" {
		req.Header.Set("Authorization", header)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func TestWrap_answers_by_the_reviews(t *testing.T) {
	tests := []struct {
		name, header string
		fail         error
		code         int
		body         string
	}{
		{name: "no token", code: http.StatusUnauthorized, body: "no bearer token"},
		{name: "another scheme", header: "Basic Z29vZA==", code: http.StatusUnauthorized, body: "no bearer token"},
		{name: "an empty token", header: "Bearer  ", code: http.StatusUnauthorized, body: "no bearer token"},
		{name: "a token the API server doesn't know", header: "Bearer forged", code: http.StatusUnauthorized, body: "does not authenticate"},
		{name: "a user RBAC doesn't allow", header: "Bearer other", code: http.StatusForbidden, body: "intruder may not get /metrics"},
		{name: "a user RBAC allows", header: "Bearer good", code: http.StatusOK, body: "metrics"},
		{name: "the scheme in lower case", header: "bearer good", code: http.StatusOK, body: "metrics"},
		{name: "a review that fails", header: "Bearer good", fail: errors.New("connection refused"), code: http.StatusInternalServerError, body: "authentication failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newAPIServer()
			s.fail = tt.fail
			f, err := metricsauth.New(config(s))
			require.NoError(t, err)
			code, body := get(t, f, tt.header)
			require.Equal(t, tt.code, code)
			require.Contains(t, body, tt.body)
		})
	}
}

func TestWrap_asks_for_the_users_identity_and_the_requests_path(t *testing.T) {
	s := newAPIServer()
	f, err := metricsauth.New(config(s))
	require.NoError(t, err)
	code, _ := get(t, f, "Bearer good")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []authorizationv1.SubjectAccessReviewSpec{{
		User: "scraper", UID: "uid-scraper", Groups: []string{"system:authenticated", "team"},
		Extra:                 map[string]authorizationv1.ExtraValue{"scopes": {"b", "a"}},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
	}}, s.asked)
}

func TestWrap_caches_each_answer_for_its_TTL(t *testing.T) {
	tests := []struct {
		name, token string
		code        int
		// reviews after the first request and a second within the TTLs,
		// and after a third once ttl passed.
		ttl                time.Duration
		first, afterExpiry [2]int
	}{
		{name: "allowed", token: "good", code: http.StatusOK, ttl: metricsauth.DefaultAuthenticatedTTL, first: [2]int{1, 1}, afterExpiry: [2]int{2, 1}},
		{name: "allowed, past the authorization's TTL", token: "good", code: http.StatusOK, ttl: metricsauth.DefaultAllowedTTL, first: [2]int{1, 1}, afterExpiry: [2]int{2, 2}},
		{name: "denied", token: "other", code: http.StatusForbidden, ttl: metricsauth.DefaultDeniedTTL, first: [2]int{1, 1}, afterExpiry: [2]int{1, 2}},
		{name: "unauthenticated", token: "forged", code: http.StatusUnauthorized, ttl: metricsauth.DefaultUnauthenticatedTTL, first: [2]int{1, 0}, afterExpiry: [2]int{2, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newAPIServer()
				f, err := metricsauth.New(config(s))
				require.NoError(t, err)
				for range 2 {
					code, _ := get(t, f, "Bearer "+tt.token)
					require.Equal(t, tt.code, code)
				}
				require.Equal(t, tt.first, [2]int{s.tokenReviews, s.accessReviews}, "within the TTLs")
				time.Sleep(tt.ttl + time.Second)
				code, _ := get(t, f, "Bearer "+tt.token)
				require.Equal(t, tt.code, code)
				require.Equal(t, tt.afterExpiry, [2]int{s.tokenReviews, s.accessReviews}, "after %v", tt.ttl)
			})
		})
	}
}

func TestWrap_caches_no_failure(t *testing.T) {
	s := newAPIServer()
	s.fail = errors.New("etcdserver: request timed out")
	tel := apptest.NewTelemetry()
	c := config(s)
	c.Logger = tel.LoggerProvider.Logger("test")
	f, err := metricsauth.New(c)
	require.NoError(t, err)
	code, _ := get(t, f, "Bearer good")
	require.Equal(t, http.StatusInternalServerError, code)
	s.fail = nil
	code, _ = get(t, f, "Bearer good")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 2, s.tokenReviews)
	records := tel.Records()
	require.Len(t, records, 1)
	require.Contains(t, records[0].Body().AsString(), "the TokenReview failed")
}

func TestWrap_bounds_its_caches(t *testing.T) {
	s := newAPIServer()
	c := config(s)
	c.CacheSize = 1
	f, err := metricsauth.New(c)
	require.NoError(t, err)
	for _, token := range []string{"good", "good2", "good"} {
		code, _ := get(t, f, "Bearer "+token)
		require.Equal(t, http.StatusOK, code)
	}
	require.Equal(t, 3, s.tokenReviews, "the second token evicted the first")
	require.Equal(t, 3, s.accessReviews)
}

func TestNew_reports_every_mistake(t *testing.T) {
	_, err := metricsauth.New(metricsauth.Config{})
	require.Error(t, err)
	want := []string{
		"metricsauth: Config.AccessReviews is nil",
		"metricsauth: Config.AllowedTTL is 0s, not positive",
		"metricsauth: Config.AuthenticatedTTL is 0s, not positive",
		"metricsauth: Config.CacheSize is 0, below 1",
		"metricsauth: Config.DeniedTTL is 0s, not positive",
		"metricsauth: Config.Logger is nil",
		"metricsauth: Config.Now is nil",
		"metricsauth: Config.ReviewTimeout is 0s, not positive",
		"metricsauth: Config.TokenReviews is nil",
		"metricsauth: Config.UnauthenticatedTTL is 0s, not positive",
	}
	require.Equal(t, strings.Join(want, "\n"), err.Error())
}
