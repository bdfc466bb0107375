package e2e

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/httpmetrics"
	"github.com/loam-dev/loam/app/tlsfiles"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// TestMetrics_are_served_to_the_scrapers_RBAC_allows runs an App whose
// /metrics is served over TLS behind kube.MetricsAuth, as an operator
// with exactly the RBAC docs/kubernetes.md gives it (create on
// tokenreviews and subjectaccessreviews), and scrapes it with a
// ServiceAccount that may get /metrics, one that may not, a forged token
// and none; then rotates the certificate's files, and the next handshake
// presents the new certificate.
func TestMetrics_are_served_to_the_scrapers_RBAC_allows(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	admin := adminClients(t, c).kube
	operator := grant(t, c, ns, "operator", []rbacv1.PolicyRule{
		{APIGroups: []string{authenticationv1.GroupName}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{authorizationv1.GroupName}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	}, ns)

	// The scraper's ClusterRole, as deploy's component has it.
	reader := ns + "-metrics-reader"
	rbac := admin.RbacV1()
	_, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: reader},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: reader},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = rbac.ClusterRoleBindings().Delete(context.Background(), reader, metav1.DeleteOptions{})
		_ = rbac.ClusterRoles().Delete(context.Background(), reader, metav1.DeleteOptions{})
	})
	allowed, err := c.ServiceAccountToken(ctx, ns, "scraper")
	require.NoError(t, err)
	denied, err := c.ServiceAccountToken(ctx, ns, "stranger")
	require.NoError(t, err)
	// The authorizer sees the binding a moment later, and a denial would be
	// cached for 30 seconds: scrape once the API server allows it.
	wait.For(t, 30*time.Second, func() bool {
		sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  "system:serviceaccount:" + ns + ":scraper",
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed
	}, "the scraper's binding never took effect")

	ca := apptest.NewCA(t)
	dir := t.TempDir()
	writePair := func(p apptest.Cert) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), p.CertPEM, 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.key"), p.KeyPEM, 0o600))
	}
	first := ca.ServerCert("127.0.0.1")
	writePair(first)
	ts := tlsfiles.DefaultSettings()
	ts.CertFile, ts.KeyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ts.ReloadInterval = 100 * time.Millisecond

	exporter, err := httpmetrics.NewExporter()
	require.NoError(t, err)
	telemetry := func(context.Context, app.Process) (app.Telemetry, func(context.Context) error, error) {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
		return app.Telemetry{MeterProvider: mp}, mp.Shutdown, nil
	}
	services := make(chan *httpmetrics.Service, 1)
	apptest.Start(t, func(_ context.Context, s *app.Setup) ([]app.Service, error) {
		client, err := kube.NewClient(s, operator)
		if err != nil {
			return nil, err
		}
		auth, err := kube.MetricsAuth(s, client)
		if err != nil {
			return nil, err
		}
		svc, err := httpmetrics.NewService(s, httpmetrics.Settings{Address: "127.0.0.1:0", TLS: &ts}, exporter, httpmetrics.WithFilter(auth))
		if err != nil {
			return nil, err
		}
		services <- svc
		return []app.Service{svc}, nil
	}, apptest.WithAppOptions(app.WithHost(app.OSHost()), app.WithTelemetry(telemetry)))
	svc := <-services
	select {
	case <-svc.Ready():
	case <-time.After(time.Minute):
		t.Fatal("/metrics never listened")
	}

	scrape := func(token string) (int, string) {
		t.Helper()
		client := &http.Client{Transport: &http.Transport{
			DisableKeepAlives: true,
			TLSClientConfig:   &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
		}}
		defer client.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+svc.Addr().String()+"/metrics", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.TLS.PeerCertificates[0].SerialNumber.String()
	}
	for _, tt := range []struct {
		name, token string
		code        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a forged token", "forged", http.StatusUnauthorized},
		{"a ServiceAccount RBAC doesn't allow", denied, http.StatusForbidden},
		{"a ServiceAccount RBAC allows", allowed, http.StatusOK},
	} {
		code, serial := scrape(tt.token)
		require.Equal(t, tt.code, code, tt.name)
		require.Equal(t, first.Leaf.SerialNumber.String(), serial)
	}

	next := ca.ServerCert("127.0.0.1")
	writePair(next)
	wait.For(t, 30*time.Second, func() bool {
		code, serial := scrape(allowed)
		require.Equal(t, http.StatusOK, code)
		return serial == next.Leaf.SerialNumber.String()
	}, "the rotated certificate never reached a handshake")
}
