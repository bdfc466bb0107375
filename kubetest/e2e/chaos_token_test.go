package e2e

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/adapters/transport"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// boundToken returns a token of the ServiceAccount ns/sa bound to a
// Secret named secret that it creates: deleting the Secret revokes the
// token, and only that token, as deleting its Pod revokes a projected
// token.
func boundToken(t *testing.T, k kubernetes.Interface, ns, sa, secret string) string {
	t.Helper()
	ctx := t.Context()
	s, err := k.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret}}, metav1.CreateOptions{})
	require.NoError(t, err)
	tr, err := k.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(3600)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: s.Name, UID: s.UID},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}

// tokenCalls records each call of a Connection's Token, and whether it
// failed.
type tokenCalls struct {
	mu       sync.Mutex
	ok, fail []time.Time
}

func (c *tokenCalls) add(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.fail = append(c.fail, time.Now())
	} else {
		c.ok = append(c.ok, time.Now())
	}
}

// failures returns when the calls that failed were made.
func (c *tokenCalls) failures() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.fail...)
}

func (c *tokenCalls) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ok) + len(c.fail)
}

// fileToken is a Connection's Token that reads the token file name of h,
// through the FS an App on h has, as a controller in a pod reads its
// projected ServiceAccount token, and records each call in calls.
func fileToken(h *apptest.Host, name string, calls *tokenCalls) func(context.Context) (string, error) {
	fsys, path := h.FS(), h.Path(name)
	return func(context.Context) (token string, err error) {
		defer func() { calls.add(err) }()
		f, err := fsys.Open(path)
		if err != nil {
			return "", fmt.Errorf("reading the token: %w", err)
		}
		defer func() { _ = f.Close() }()
		b, err := io.ReadAll(f)
		if err != nil {
			return "", fmt.Errorf("reading the token: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
}

// startTokenController runs the Memcached controller as the ServiceAccount
// ns/sa, with the spec's RBAC, through wire's Connection conn, reading its
// token from h.
func startTokenController(t *testing.T, conn kube.Connection, h *apptest.Host, r kube.Resource[memcachedSpec, memcachedStatus], ns, name string, calls *seen) *controllerApp {
	t.Helper()
	return startChaosController(t, conn, app.Host{Network: &chaosNetwork{}, FS: h.FS()}, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		kc, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		settings := settingsFor(name, ns, "pod-0")
		settings.Namespace = ns
		return kube.NewController(s, client, settings, r, memcachedReconciler{kube: kc, identity: "pod-0", seen: calls}, kube.Owns(deploymentsGVR))
	})
}

// scaleTo changes the Memcached ns/name's size, and waits until its
// Deployment follows and its status observes the change: a reconcile
// read it, applied the Deployment and applied the status.
func scaleTo(t *testing.T, c *kubetest.Cluster, r kube.Resource[memcachedSpec, memcachedStatus], ns, name string, size int32, a *controllerApp) {
	t.Helper()
	admin := adminClients(t, c)
	m, err := admin.dynamic.Resource(r.GVR()).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"size":%d}}`, size), metav1.PatchOptions{})
	require.NoError(t, err)
	wait.For(t, time.Minute, func() bool {
		d, ok := getDeployment(t, admin.kube, ns, name)
		return ok && *d.Spec.Replicas == size
	}, "the Deployment doesn't follow the change", a)
	wait.For(t, time.Minute, func() bool {
		got, _ := getMemcached(t, admin.dynamic, r, ns, name)
		for _, cond := range got.Status.Conditions {
			if cond.Type == "Available" && cond.ObservedGeneration == m.GetGeneration() {
				return true
			}
		}
		return false
	}, "the status doesn't observe the change", a)
}

// tokenRun is one controller of the token test: in a namespace and an
// API group of its own, as the ServiceAccount sa with the spec's RBAC,
// reading its token from a file of h, through a recording proxy.
type tokenRun struct {
	ns     string
	r      kube.Resource[memcachedSpec, memcachedStatus]
	h      *apptest.Host
	wire   *authWire
	tokens *tokenCalls
	app    *controllerApp
}

// startTokenRun starts a tokenRun whose token file holds the token
// tokenOf returns, which it hands the namespace and the ServiceAccount
// once its RBAC is in place, and waits until the controller has
// reconciled a Memcached.
func startTokenRun(t *testing.T, c *kubetest.Cluster, sa string, tokenOf func(ns, sa string) string) *tokenRun {
	t.Helper()
	ns := c.Namespace(t)
	tr := &tokenRun{ns: ns, r: installMemcached(t, c, ns), h: apptest.NewHost(t), tokens: &tokenCalls{}}
	grant(t, c, ns, sa, memcachedRules(tr.r.Group), ns, tr.r.GVR(), deploymentsGVR)
	tr.h.WriteFile("token", []byte(tokenOf(ns, sa)))
	var conn kube.Connection
	tr.wire, conn = startAuthWire(t, c)
	conn.Token = fileToken(tr.h, "token", tr.tokens)
	tr.app = startTokenController(t, conn, tr.h, tr.r, ns, sa, &seen{})
	admin := adminClients(t, c)
	newMemcached(t, admin.dynamic, tr.r, ns, "first", 1)
	wait.For(t, time.Minute, func() bool { _, ok := getDeployment(t, admin.kube, ns, "first"); return ok }, "never reconciled", tr.app)
	return tr
}

// The two halves of the promise run side by side, since each waits for
// the Client's next call of Token, a TokenTTL after its first.
func TestChaos_a_rotated_token_is_used_within_a_minute_and_a_failing_Token_keeps_the_last(t *testing.T) {
	t.Parallel() // it mostly waits for the token's minute
	c := cluster.Cluster(t)
	admin := adminClients(t, c)
	var oldToken, newToken, lastToken string
	rotated := startTokenRun(t, c, "rotated-controller", func(ns, sa string) string {
		oldToken = boundToken(t, admin.kube, ns, sa, "token-old")
		newToken = boundToken(t, admin.kube, ns, sa, "token-new")
		return oldToken
	})
	failing := startTokenRun(t, c, "failing-token-controller", func(ns, sa string) string {
		lastToken = boundToken(t, admin.kube, ns, sa, "token")
		return lastToken
	})
	before := rotated.wire.all()
	require.NotEmpty(t, before)
	for _, req := range before {
		require.Equal(t, oldToken, req.token, "%s %s", req.method, req.path)
	}

	// The kubelet rotates the one's projected token: the file is replaced
	// in one step. The other's file disappears: every call of its Token
	// fails from now on.
	changed := time.Now()
	rotated.h.WriteFile("token", []byte(newToken))
	failing.h.RemoveFile("token")
	wait.For(t, transport.TokenTTL+30*time.Second, func() bool { _, ok := rotated.wire.firstWith(newToken); return ok }, "the rotated token is never used", rotated.app, failing.app)
	wait.For(t, transport.TokenTTL+30*time.Second, func() bool { return len(failing.tokens.failures()) > 0 }, "the failing Token is never called again", rotated.app, failing.app)

	// The rotation: the new token reached the API server within a minute,
	// and from then on every request carries it. A request that took the
	// old one just before another fetched the new may arrive a moment
	// later, so the check starts a second on.
	first, _ := rotated.wire.firstWith(newToken)
	t.Logf("figure: token rotation: the rotated token reached the API server %v after the file changed (promise: within %v); Token called %d times",
		first.Sub(changed).Round(time.Millisecond), transport.TokenTTL, rotated.tokens.count())
	require.Less(t, first.Sub(changed), transport.TokenTTL+15*time.Second, "not within a minute")
	for _, req := range rotated.wire.all() {
		if req.at.After(first.Add(time.Second)) {
			require.Equal(t, newToken, req.token, "%s %s at %v still carries the old token", req.method, req.path, req.at.Sub(first))
		}
	}
	// The old token is revoked: the API server refuses it from now on.
	require.NoError(t, admin.kube.CoreV1().Secrets(rotated.ns).Delete(t.Context(), "token-old", metav1.DeleteOptions{}))
	withOld, err := kubernetes.NewForConfig(c.RESTConfigForToken(oldToken))
	require.NoError(t, err)
	wait.For(t, 30*time.Second, func() bool {
		_, err := withOld.CoreV1().ServiceAccounts(rotated.ns).Get(t.Context(), "rotated-controller", metav1.GetOptions{})
		return apierrors.IsUnauthorized(err)
	}, "the old token is still accepted after its Secret is gone")
	// The controller doesn't notice: it reads, applies the Deployment and
	// applies the status with the new token.
	scaleTo(t, c, rotated.r, rotated.ns, "first", 2, rotated.app)

	// The failing Token: the controller goes on with the last token.
	failed := failing.tokens.failures()[0]
	scaleTo(t, c, failing.r, failing.ns, "first", 2, failing.app)
	scaled := time.Now()
	var after int
	for _, req := range failing.wire.all() {
		if req.at.After(failed) {
			after++
			require.Equal(t, lastToken, req.token, "%s %s after the failure", req.method, req.path)
		}
	}
	require.Positive(t, after, "no request after Token failed")
	// And Token is not called for every request while it fails: once a
	// TokenTTL.
	require.LessOrEqual(t, len(failing.tokens.failures()), int(scaled.Sub(changed)/transport.TokenTTL)+1)
	t.Logf("figure: failing Token: first failing call %v after the file went; %d requests after it, all with the last token; %d failing calls in %v",
		failed.Sub(changed).Round(time.Millisecond), after, len(failing.tokens.failures()), scaled.Sub(changed).Round(time.Millisecond))

	for _, run := range []*tokenRun{rotated, failing} {
		require.Zero(t, run.wire.unauthorized.Load(), "the API server refused a request of the App")
		require.Equal(t, 0, run.app.Stop())
		require.Empty(t, run.app.failure())
		require.Empty(t, run.app.Telemetry().ExceptionMessages("reconcile failed"))
	}
}
