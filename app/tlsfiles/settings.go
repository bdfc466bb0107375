package tlsfiles

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"
)

// DefaultReloadInterval is how often DefaultSettings re-reads the files.
// cert-manager renews a certificate well before it expires (by default a
// third of its lifetime before), and the kubelet updates a mounted Secret's
// files within about a minute of the Secret changing, so a few seconds'
// delay on top is nothing to a rotation, while reading two small files
// every ten seconds costs nothing either.
const DefaultReloadInterval = 10 * time.Second

// Settings configures a Certificate. It follows loam's settings
// convention: plain values, checked all at once, and DefaultSettings for a
// starting point. Every field's zero value means zero, never "use the
// default".
type Settings struct {
	// CertFile is the Host path of the PEM certificate chain, leaf first,
	// such as /tls/tls.crt in a mounted kubernetes.io/tls Secret. It has
	// no default.
	CertFile string
	// KeyFile is the Host path of the PEM private key of the certificate,
	// such as /tls/tls.key. It has no default.
	KeyFile string
	// ReloadInterval is how often Run re-reads both files. It must be
	// positive.
	ReloadInterval time.Duration
	// MinVersion is the lowest TLS version TLSConfig accepts:
	// tls.VersionTLS12 or tls.VersionTLS13.
	MinVersion uint16
}

// DefaultSettings returns the Settings an Init starts from: no files,
// which an Init always sources, DefaultReloadInterval, and TLS 1.2 as the
// lowest version.
func DefaultSettings() Settings {
	return Settings{ReloadInterval: DefaultReloadInterval, MinVersion: tls.VersionTLS12}
}

// Check reports every mistake in s at once, one joined error naming each
// field. It returns nil when s is usable.
func (s Settings) Check() error { return errors.Join(s.check()...) }

// check reports every mistake in s, one error each, naming the field.
func (s Settings) check() []error {
	var errs []error
	if s.CertFile == "" {
		errs = append(errs, errors.New("Settings.CertFile is empty: set the path of the PEM certificate, such as /tls/tls.crt"))
	}
	if s.KeyFile == "" {
		errs = append(errs, errors.New("Settings.KeyFile is empty: set the path of the PEM private key, such as /tls/tls.key"))
	}
	if s.ReloadInterval <= 0 {
		errs = append(errs, fmt.Errorf("Settings.ReloadInterval %v is not positive", s.ReloadInterval))
	}
	switch s.MinVersion {
	case tls.VersionTLS12, tls.VersionTLS13:
	case tls.VersionSSL30, tls.VersionTLS10, tls.VersionTLS11: //nolint:staticcheck // named only to refuse them.
		errs = append(errs, fmt.Errorf("Settings.MinVersion %s is below TLS 1.2", tls.VersionName(s.MinVersion)))
	default:
		errs = append(errs, fmt.Errorf("Settings.MinVersion %#04x is not a known TLS version: use tls.VersionTLS12 or tls.VersionTLS13", s.MinVersion))
	}
	return errs
}
