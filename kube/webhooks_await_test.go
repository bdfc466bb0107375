package kube_test

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
)

// A Controller waits for the Webhooks made on its Setup without an
// AwaitWebhooks, even when it was made first: it finds them when it
// starts.
func TestNewWebhooks_holds_every_Controller_of_its_Setup_until_they_serve(t *testing.T) {
	ca := apptest.NewCA(t)
	cert := ca.ServerCert("127.0.0.1")
	host := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"tls.crt": cert.CertPEM, "tls.key": cert.KeyPEM}))
	tel := apptest.NewTelemetry()
	s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork(), FS: host.FS()}, Telemetry: tel.Telemetry}
	c, err := kube.NewClient(s, kube.Connection{Server: "api.test:443", TLS: &tls.Config{MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	ctrl, err := kube.NewController(s, c, validSettings(), Memcached, memcachedReconciler{})
	require.NoError(t, err)
	settings := kube.DefaultWebhookSettings()
	settings.Address = "127.0.0.1:0"
	settings.TLS.CertFile, settings.TLS.KeyFile = host.Path("tls.crt"), host.Path("tls.key")
	_, err = kube.NewWebhooks(s, settings, kube.Validate(Memcached, validateMemcached))
	require.NoError(t, err)

	requireWaitsForWebhooks(t, ctrl, tel)
}

func TestWebhookSettings_AwaitBound_mistakes(t *testing.T) {
	for _, bound := range []time.Duration{0, 999 * time.Millisecond, 10*time.Minute + 1} {
		settings := kube.DefaultWebhookSettings()
		settings.AwaitBound = bound
		_, err := kube.NewWebhooks(&app.Setup{}, settings, kube.Validate(Memcached, validateMemcached))
		require.ErrorContains(t, err, "kube: WebhookSettings.AwaitBound is "+bound.String()+": want from 1s to 10m0s, such as AwaitWebhooksBound (30s)")
	}
	for _, bound := range []time.Duration{time.Second, kube.AwaitWebhooksBound, 10 * time.Minute} {
		require.NoError(t, kube.CheckWebhookAwaitBound(bound))
	}
	require.Equal(t, kube.AwaitWebhooksBound, kube.DefaultWebhookSettings().AwaitBound)
}
