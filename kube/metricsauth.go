package kube

import (
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/adapters/metricsauth"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/httpmetrics"
)

// MetricsAuth returns the httpmetrics Filter that lets a request through
// to /metrics only when the API server that client reaches authenticates
// its bearer token, with a TokenReview, and authorizes the token's user
// for the request's method on its path, with a SubjectAccessReview of a
// non-resource URL: a Prometheus scrape is verb get on /metrics. Without
// a token, or with one that doesn't authenticate, it answers 401; for a
// user RBAC doesn't allow, 403; when a review fails, 500 with a WARN
// record through s's LoggerProvider. This is what kubebuilder's operators
// do with controller-runtime's filters.WithAuthenticationAndAuthorization.
//
// Answers are cached, each cache bounded to 1024 entries: a token's
// authentication for two minutes (ten seconds when it doesn't
// authenticate), an authorization for five minutes (thirty seconds when
// denied), so an RBAC change reaches a scraper within those bounds. The
// App's identity needs create on tokenreviews.authentication.k8s.io and
// subjectaccessreviews.authorization.k8s.io; a scraper, get on the
// nonResourceURL /metrics (docs/kubernetes.md, "Securing /metrics").
//
// Pass it to httpmetrics.NewService with httpmetrics.WithFilter, which
// needs Settings.TLS as well. It fails, naming each, on a nil Setup or
// Client.
func MetricsAuth(s *app.Setup, client *Client) (httpmetrics.Filter, error) {
	var errs []error
	if s == nil {
		errs = append(errs, errors.New("kube: MetricsAuth: the Setup is nil: pass the one Init is given"))
	}
	if client == nil {
		errs = append(errs, errors.New("kube: MetricsAuth: the Client is nil"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(client.Config())
	if err != nil {
		return nil, fmt.Errorf("kube: MetricsAuth: %w", err)
	}
	c := metricsauth.DefaultConfig()
	c.TokenReviews = kc.AuthenticationV1().TokenReviews()
	c.AccessReviews = kc.AuthorizationV1().SubjectAccessReviews()
	c.Logger = loggerOf(s)
	f, err := metricsauth.New(c)
	if err != nil {
		return nil, fmt.Errorf("kube: MetricsAuth: %w", err)
	}
	return f.Wrap, nil
}
