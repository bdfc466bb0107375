package kubetest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/loam-dev/loam/kube"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serviceAccountTokenLifetime is what ServiceAccountToken asks for: the
// API server's usual default.
const serviceAccountTokenLifetime = time.Hour

// ServiceAccountToken returns a token for the ServiceAccount namespace/name
// from the TokenRequest API, valid for an hour, creating the ServiceAccount
// first if it does not exist. Requests with it are authorized as
// system:serviceaccount:namespace:name, in the groups
// system:serviceaccounts and system:serviceaccounts:namespace, so a test
// can run a controller with exactly the RBAC its documentation gives.
func (c *Cluster) ServiceAccountToken(ctx context.Context, namespace, name string) (string, error) {
	token, _, err := c.requestToken(ctx, namespace, name)
	return token, err
}

// ServiceAccountConnection returns a Connection that authenticates as the
// ServiceAccount namespace/name, creating it if it does not exist. Its
// Token asks the TokenRequest API for a new token when the current one has
// used four fifths of its lifetime, as the kubelet does for a Pod.
func (c *Cluster) ServiceAccountConnection(ctx context.Context, namespace, name string) (kube.Connection, error) {
	token, expires, err := c.requestToken(ctx, namespace, name)
	if err != nil {
		return kube.Connection{}, err
	}
	src := &tokenSource{
		token:   token,
		refresh: refreshTime(time.Now(), expires),
		expires: expires,
		request: func(ctx context.Context) (string, time.Time, error) {
			return c.requestToken(ctx, namespace, name)
		},
	}
	conn := c.connection("")
	conn.Token = src.Token
	return conn, nil
}

func (c *Cluster) requestToken(ctx context.Context, namespace, name string) (string, time.Time, error) {
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return "", time.Time{}, ErrStopped
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	_, err := c.admin.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", time.Time{}, fmt.Errorf("kubetest: create ServiceAccount %s/%s: %w", namespace, name, err)
	}
	seconds := int64(serviceAccountTokenLifetime / time.Second)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}
	got, err := c.admin.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("kubetest: request a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return got.Status.Token, got.Status.ExpirationTimestamp.Time, nil
}

// refreshTime is when a token issued at now and expiring at expires should
// be replaced: after four fifths of its lifetime.
func refreshTime(now, expires time.Time) time.Time {
	return now.Add(expires.Sub(now) * 4 / 5)
}

// tokenSource hands out a ServiceAccount token and renews it before it
// expires.
type tokenSource struct {
	mu      sync.Mutex
	token   string
	refresh time.Time // when to ask for a new token
	expires time.Time // when the current one stops working
	request func(context.Context) (string, time.Time, error)
}

// Token returns the current token, renewing it first if it is due. While a
// renewal fails, the current token is returned as long as it is valid;
// after that the renewal's error is.
func (s *tokenSource) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Before(s.refresh) {
		return s.token, nil
	}
	token, expires, err := s.request(ctx)
	if err != nil {
		if now.Before(s.expires) {
			return s.token, nil
		}
		return "", err
	}
	s.token, s.refresh, s.expires = token, refreshTime(now, expires), expires
	return s.token, nil
}
