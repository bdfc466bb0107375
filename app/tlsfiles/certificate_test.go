package tlsfiles_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/log"
	"go.uber.org/goleak"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/tlsfiles"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The test's server name, which every certificate the test issues is for.
const serverName = "webhook.test"

// pairs returns n server certificates for serverName, each with its key,
// issued by one CA of the test's own, whose pool verifies them all.
func pairs(t *testing.T, n int) (*x509.CertPool, []apptest.Cert) {
	t.Helper()
	ca := apptest.NewCA(t)
	out := make([]apptest.Cert, n)
	for i := range out {
		out[i] = ca.ServerCert(serverName)
	}
	return ca.Pool(), out
}

// pair returns one server certificate for serverName, with its key.
func pair(t *testing.T) apptest.Cert {
	t.Helper()
	_, ps := pairs(t, 1)
	return ps[0]
}

// files is a test Host with a pair written where settings point.
type files struct {
	host     *apptest.Host
	settings tlsfiles.Settings
}

func newFiles(t *testing.T, p apptest.Cert) files {
	t.Helper()
	host := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{
		"tls/tls.crt": p.CertPEM,
		"tls/tls.key": p.KeyPEM,
	}))
	s := tlsfiles.DefaultSettings()
	s.CertFile = host.Path("tls/tls.crt")
	s.KeyFile = host.Path("tls/tls.key")
	return files{host: host, settings: s}
}

// write replaces the cert file, the key file or both, as non-nil.
func (f files) write(certPEM, keyPEM []byte) {
	if certPEM != nil {
		f.host.WriteFile("tls/tls.crt", certPEM)
	}
	if keyPEM != nil {
		f.host.WriteFile("tls/tls.key", keyPEM)
	}
}

// serial returns the serial number of c's current leaf.
func serial(t *testing.T, c *tlsfiles.Certificate) string {
	t.Helper()
	cur := c.Current()
	require.NotNil(t, cur)
	require.NotNil(t, cur.Leaf)
	return cur.Leaf.SerialNumber.String()
}

// severities returns the severity of each record tel holds, in order.
func severities(tel *apptest.Telemetry) []log.Severity {
	var got []log.Severity
	for _, r := range tel.Records() {
		got = append(got, r.Severity())
	}
	return got
}

func TestSettingsCheck(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*tlsfiles.Settings)
		want   []string
	}{
		{
			name:   "valid",
			modify: func(s *tlsfiles.Settings) { s.CertFile, s.KeyFile = "/tls/tls.crt", "/tls/tls.key" },
		},
		{
			name:   "TLS 1.3",
			modify: func(s *tlsfiles.Settings) { s.CertFile, s.KeyFile, s.MinVersion = "c", "k", tls.VersionTLS13 },
		},
		{
			name:   "defaults lack files",
			modify: func(*tlsfiles.Settings) {},
			want:   []string{"Settings.CertFile is empty", "Settings.KeyFile is empty"},
		},
		{
			name: "every mistake at once",
			modify: func(s *tlsfiles.Settings) {
				*s = tlsfiles.Settings{ReloadInterval: -time.Second, MinVersion: tls.VersionTLS11}
			},
			want: []string{
				"Settings.CertFile is empty", "Settings.KeyFile is empty",
				"Settings.ReloadInterval -1s is not positive", "Settings.MinVersion TLS 1.1 is below TLS 1.2",
			},
		},
		{
			name: "unknown version and zero interval",
			modify: func(s *tlsfiles.Settings) {
				s.CertFile, s.KeyFile, s.ReloadInterval, s.MinVersion = "c", "k", 0, 0x0305
			},
			want: []string{"Settings.ReloadInterval 0s is not positive", "Settings.MinVersion 0x0305 is not a known TLS version"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tlsfiles.DefaultSettings()
			tt.modify(&s)
			err := s.Check()
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestDefaultSettings(t *testing.T) {
	s := tlsfiles.DefaultSettings()
	require.Equal(t, tlsfiles.DefaultReloadInterval, s.ReloadInterval)
	require.Equal(t, uint16(tls.VersionTLS12), s.MinVersion)
}

func TestNewLoads(t *testing.T) {
	p := pair(t)
	f := newFiles(t, p)
	tel := apptest.NewTelemetry()
	c, err := tlsfiles.New(t.Context(), f.host.Host(), f.settings, tel.LoggerProvider.Logger("test"))
	require.NoError(t, err)
	require.Equal(t, p.Leaf.SerialNumber.String(), serial(t, c))
	require.Equal(t, []log.Severity{log.SeverityInfo}, severities(tel))

	cfg := c.TLSConfig()
	require.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)
	got, err := cfg.GetCertificate(&tls.ClientHelloInfo{ServerName: serverName})
	require.NoError(t, err)
	require.Same(t, c.Current(), got)
}

func TestNewFails(t *testing.T) {
	_, ps := pairs(t, 2)
	p, other := ps[0], ps[1]
	tests := []struct {
		name     string
		files    map[string][]byte
		settings func(*tlsfiles.Settings)
		want     []string
	}{
		{
			name:  "both missing",
			files: map[string][]byte{},
			want:  []string{`Settings.CertFile "`, `tls.crt": `, `Settings.KeyFile "`, `tls.key": `},
		},
		{
			name:  "garbage",
			files: map[string][]byte{"tls/tls.crt": []byte("not PEM"), "tls/tls.key": []byte("nor this")},
			want:  []string{"tls.crt\" and Settings.KeyFile", "tls.key\" are not a certificate and its key"},
		},
		{
			name:  "mismatched key",
			files: map[string][]byte{"tls/tls.crt": p.CertPEM, "tls/tls.key": other.KeyPEM},
			want:  []string{"are not a certificate and its key", "private key does not match public key"},
		},
		{
			name:  "missing key joined with bad settings",
			files: map[string][]byte{"tls/tls.crt": p.CertPEM},
			settings: func(s *tlsfiles.Settings) {
				s.ReloadInterval, s.MinVersion = 0, tls.VersionTLS10
			},
			want: []string{`Settings.KeyFile "`, "Settings.ReloadInterval 0s is not positive", "Settings.MinVersion TLS 1.0 is below TLS 1.2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := apptest.NewHost(t, apptest.WithFiles(tt.files))
			s := tlsfiles.DefaultSettings()
			s.CertFile, s.KeyFile = host.Path("tls/tls.crt"), host.Path("tls/tls.key")
			if tt.settings != nil {
				tt.settings(&s)
			}
			c, err := tlsfiles.New(t.Context(), host.Host(), s, nil)
			require.Error(t, err)
			require.Nil(t, c)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

// running starts c.Run in the bubble and returns a function that stops it
// and checks it returned nil.
func running(t *testing.T, c *tlsfiles.Certificate) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

func TestRunRotates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, ps := pairs(t, 2)
		old, next := ps[0], ps[1]
		f := newFiles(t, old)
		tel := apptest.NewTelemetry()
		c, err := tlsfiles.New(t.Context(), f.host.Host(), f.settings, tel.LoggerProvider.Logger("test"))
		require.NoError(t, err)
		stop := running(t, c)
		defer stop()

		// A tick with nothing changed takes nothing and logs nothing.
		time.Sleep(f.settings.ReloadInterval)
		synctest.Wait()
		require.Equal(t, old.Leaf.SerialNumber.String(), serial(t, c))
		require.Equal(t, []log.Severity{log.SeverityInfo}, severities(tel))

		f.write(next.CertPEM, next.KeyPEM)
		time.Sleep(f.settings.ReloadInterval)
		synctest.Wait()
		require.Equal(t, next.Leaf.SerialNumber.String(), serial(t, c))
		require.Equal(t, []log.Severity{log.SeverityInfo, log.SeverityInfo}, severities(tel))
	})
}

func TestRunHalfRotated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, ps := pairs(t, 2)
		old, next := ps[0], ps[1]
		f := newFiles(t, old)
		tel := apptest.NewTelemetry()
		c, err := tlsfiles.New(t.Context(), f.host.Host(), f.settings, tel.LoggerProvider.Logger("test"))
		require.NoError(t, err)
		stop := running(t, c)
		defer stop()

		// The new certificate beside the old key: the old pair stays, and
		// the failure is logged once however many ticks see it.
		f.write(next.CertPEM, nil)
		for range 3 {
			time.Sleep(f.settings.ReloadInterval)
			synctest.Wait()
			require.Equal(t, old.Leaf.SerialNumber.String(), serial(t, c))
		}
		require.Equal(t, []log.Severity{log.SeverityInfo, log.SeverityWarn}, severities(tel))
		recs := tel.Records()
		require.Equal(t, "TLS certificate not reloaded; serving the previous one", recs[1].Body().AsString())

		// The key follows: the next tick takes the whole new pair.
		f.write(nil, next.KeyPEM)
		time.Sleep(f.settings.ReloadInterval)
		synctest.Wait()
		require.Equal(t, next.Leaf.SerialNumber.String(), serial(t, c))
		require.Equal(t, []log.Severity{log.SeverityInfo, log.SeverityWarn, log.SeverityInfo}, severities(tel))
	})
}

func TestReloadFailureKeepsPair(t *testing.T) {
	p := pair(t)
	f := newFiles(t, p)
	tel := apptest.NewTelemetry()
	c, err := tlsfiles.New(t.Context(), f.host.Host(), f.settings, tel.LoggerProvider.Logger("test"))
	require.NoError(t, err)

	f.host.RemoveFile("tls/tls.key")
	err = c.Reload(t.Context())
	require.ErrorContains(t, err, `Settings.KeyFile "`)
	require.Equal(t, p.Leaf.SerialNumber.String(), serial(t, c))

	f.write(nil, []byte("garbage"))
	err = c.Reload(t.Context())
	require.ErrorContains(t, err, "are not a certificate and its key")
	require.Equal(t, p.Leaf.SerialNumber.String(), serial(t, c))
	// Two distinct failures, each logged once.
	require.Equal(t, []log.Severity{log.SeverityInfo, log.SeverityWarn, log.SeverityWarn}, severities(tel))
}

// handshake connects a TLS client trusting roots to a server with cfg over
// an in-process pipe, and returns the serial number the server presented.
func handshake(t *testing.T, cfg *tls.Config, roots *x509.CertPool) string {
	t.Helper()
	serverConn, clientConn := net.Pipe()
	defer func() { _ = clientConn.Close() }()
	server := tls.Server(serverConn, cfg)
	done := make(chan error, 1)
	go func() {
		defer func() { _ = serverConn.Close() }()
		done <- server.HandshakeContext(t.Context())
	}()
	client := tls.Client(clientConn, &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12})
	require.NoError(t, client.HandshakeContext(t.Context()))
	require.NoError(t, <-done)
	return client.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func TestHandshakeAfterRotation(t *testing.T) {
	roots, ps := pairs(t, 2)
	old, next := ps[0], ps[1]
	f := newFiles(t, old)
	c, err := tlsfiles.New(t.Context(), f.host.Host(), f.settings, nil)
	require.NoError(t, err)
	cfg := c.TLSConfig()

	require.Equal(t, old.Leaf.SerialNumber.String(), handshake(t, cfg, roots))

	f.write(next.CertPEM, next.KeyPEM)
	require.NoError(t, c.Reload(t.Context()))
	require.Equal(t, next.Leaf.SerialNumber.String(), handshake(t, cfg, roots))
}

func TestHandshakeRefusesOldVersions(t *testing.T) {
	roots, ps := pairs(t, 1)
	p := ps[0]
	f := newFiles(t, p)
	c, err := tlsfiles.New(t.Context(), f.host.Host(), f.settings, nil)
	require.NoError(t, err)

	serverConn, clientConn := net.Pipe()
	server := tls.Server(serverConn, c.TLSConfig())
	done := make(chan error, 1)
	go func() {
		defer func() { _ = serverConn.Close() }()
		done <- server.HandshakeContext(t.Context())
	}()
	client := tls.Client(clientConn, &tls.Config{
		RootCAs: roots, ServerName: serverName,
		MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11, //nolint:gosec // The point: an old client is refused.
	})
	require.Error(t, client.HandshakeContext(t.Context()))
	_ = clientConn.Close()
	require.ErrorContains(t, <-done, "unsupported versions")
}

func TestNewWithoutFS(t *testing.T) {
	s := tlsfiles.DefaultSettings()
	s.KeyFile = "/tls/tls.key"
	c, err := tlsfiles.New(t.Context(), app.Host{}, s, nil)
	require.Nil(t, c)
	require.ErrorContains(t, err, "Host.FS is nil")
	require.ErrorContains(t, err, "Settings.CertFile is empty")
}
