package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
)

// The webhooks tests serve loam's admission and conversion webhooks with
// kube.NewWebhooks on the real network, and the shared cluster's API
// server calls them over loopback, as a cluster calls an operator's. Each
// test's webhook configurations match its own namespace alone, by the
// kubernetes.io/metadata.name label the API server puts on every
// namespace, and are deleted when it ends; its CRDs are in a group of its
// own, named after its namespace, since a CRD's conversion webhook is
// cluster-wide.

// testWebhooks is a test's kube.Webhooks: on the real network, at a
// loopback port the test opened before they serve, so that a CRD or a
// configuration can name them first; with a serving certificate of the
// test's own CA, in files of the test's own, re-read every 50ms.
type testWebhooks struct {
	*kube.Webhooks
	ca *apptest.CA
	// cert is the certificate the files hold.
	cert apptest.Cert
	// certFile and keyFile are the files' paths.
	certFile, keyFile string
	ln                net.Listener
	// tel is what the Webhooks report through.
	tel *apptest.Telemetry
	// client is how the API server reaches them.
	client kube.WebhookClient
}

// openWebhooks opens the port of the test's Webhooks and writes their
// certificate, for 127.0.0.1; build makes them.
func openWebhooks(t *testing.T) *testWebhooks {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// Serve closes it too; a second Close only fails.
	t.Cleanup(func() { _ = ln.Close() })
	dir := t.TempDir()
	w := &testWebhooks{
		ca:       apptest.NewCA(t),
		certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key"),
		ln:  ln,
		tel: apptest.NewTelemetry(),
	}
	w.client = kube.WebhookClient{URL: "https://" + ln.Addr().String(), CABundle: w.ca.PEM()}
	w.rotate(t, w.ca.ServerCert("127.0.0.1"))
	return w
}

// build makes the Webhooks of hooks, on a Setup whose Host is the real
// machine's but for the one port the test opened.
func (w *testWebhooks) build(t *testing.T, hooks ...kube.Hook) {
	t.Helper()
	settings := kube.DefaultWebhookSettings()
	settings.Address = w.ln.Addr().String()
	settings.TLS.CertFile, settings.TLS.KeyFile = w.certFile, w.keyFile
	settings.TLS.ReloadInterval = 50 * time.Millisecond
	host := app.Host{Network: openedNetwork{w.ln}, FS: app.OSHost().FS}
	webhooks, err := kube.NewWebhooks(&app.Setup{Host: host, Telemetry: w.tel.Telemetry}, settings, hooks...)
	require.NoError(t, err)
	w.Webhooks = webhooks
}

// serve runs the Webhooks' Serve until the test ends, and returns once
// they listen.
func (w *testWebhooks) serve(t *testing.T) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- w.Serve(ctx) }()
	t.Cleanup(func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, w.Shutdown(shutdown), "the reviews in flight are answered")
		stop()
		require.NoError(t, <-served)
	})
	select {
	case <-w.Ready():
	case err := <-served:
		t.Fatalf("the webhooks' Serve returned before they listened: %v", err)
	}
}

// rotate writes cert as the Webhooks' certificate, each file replaced in
// one step, as the kubelet updates a mounted Secret.
func (w *testWebhooks) rotate(t *testing.T, cert apptest.Cert) {
	t.Helper()
	for _, f := range []struct {
		path string
		data []byte
	}{{w.certFile, cert.CertPEM}, {w.keyFile, cert.KeyPEM}} {
		tmp := f.path + ".tmp"
		require.NoError(t, os.WriteFile(tmp, f.data, 0o600))
		require.NoError(t, os.Rename(tmp, f.path))
	}
	w.cert = cert
}

// servedSerial returns the serial number of the certificate a new TLS
// connection to the Webhooks is served, verified against the test's CA:
// a connection of its own, closed at once, so no connection is reused.
func (w *testWebhooks) servedSerial(t *testing.T) *big.Int {
	t.Helper()
	d := tls.Dialer{Config: &tls.Config{RootCAs: w.ca.Pool(), MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(t.Context(), "tcp", w.ln.Addr().String())
	require.NoError(t, err)
	defer func() { require.NoError(t, conn.Close()) }()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber
}

// openedNetwork is the real network, but for a listen on the address of
// ln, the listener the test opened, which it returns.
type openedNetwork struct{ ln net.Listener }

func (n openedNetwork) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	return app.OSHost().Dial(ctx, network, address)
}

func (n openedNetwork) Listen(_ context.Context, network, address string) (net.Listener, error) {
	if network != "tcp" || address != n.ln.Addr().String() {
		return nil, fmt.Errorf("listen %s %s: the test opened %s alone", network, address, n.ln.Addr())
	}
	return n.ln, nil
}

// scopedTo scopes a Hook to the objects of the namespace ns, so no
// other test's objects reach it.
func scopedTo(ns string) kube.HookOption {
	return kube.NamespaceSelector(metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}})
}

// register creates the webhook configurations of hooks, named name, that
// tell the API server to call them through client, and deletes them when
// the test ends. The API server calls them a moment later: a test waits
// for a probe request they affect.
func register(t *testing.T, c *kubetest.Cluster, name string, client kube.WebhookClient, hooks ...kube.Hook) {
	t.Helper()
	v, m, err := kube.WebhookConfigurations(name, client, hooks...)
	require.NoError(t, err)
	reg := adminClients(t, c).kube.AdmissionregistrationV1()
	if v != nil {
		_, err := reg.ValidatingWebhookConfigurations().Create(t.Context(), v, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			require.NoError(t, reg.ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{}))
		})
	}
	if m != nil {
		_, err := reg.MutatingWebhookConfigurations().Create(t.Context(), m, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			require.NoError(t, reg.MutatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{}))
		})
	}
}

// dryRun creates as a dry run: the API server admits the object, calling
// the webhooks, whose side effects are None, and stores nothing, so a
// wait may probe as often as it likes.
var dryRun = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

// warnings collects the warnings the API server returns, as kubectl
// prints them.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// take returns the warnings collected since the last take.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// warnedClients are the cluster admin's clients, whose warnings are
// collected in warned.
type warnedClients struct {
	clients
	warned *warnings
}

func warningClients(t *testing.T, c *kubetest.Cluster) warnedClients {
	t.Helper()
	w := &warnings{}
	cfg := rest.CopyConfig(c.RESTConfig())
	cfg.WarningHandlerWithContext = w
	k, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	d, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return warnedClients{clients: clients{kube: k, dynamic: d}, warned: w}
}

// logRecord is a log record as a test compares it: its severity and its
// attributes.
type logRecord struct {
	severity string
	attrs    map[attribute.Key]string
}

// recordsOf returns each record of tel whose body is body.
func recordsOf(tel *apptest.Telemetry, body string) []logRecord {
	var out []logRecord
	for _, r := range tel.Records() {
		if r.Body().AsString() != body {
			continue
		}
		rec := logRecord{severity: r.Severity().String(), attrs: map[attribute.Key]string{}}
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			rec.attrs[kv.Key] = kv.Value.String()
			return true
		})
		out = append(out, rec)
	}
	return out
}
