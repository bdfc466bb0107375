// Package tlsfiles serves TLS with a certificate and key read from two
// files through an App's Host, and reloaded when the files change, as
// cert-manager rotates a kubernetes.io/tls Secret that the kubelet mounts.
//
// New reads and parses the pair once, so an Init fails with every mistake
// at once. Run, which the Service that uses the Certificate owns, re-reads
// both files every Settings.ReloadInterval and takes a new pair when its
// bytes changed and it parses. cert-manager's Secret update reaches the
// two files together, but a pair can still be seen half rotated for a
// moment, so a pair that doesn't parse is not fatal: the Certificate
// keeps serving the old one, logs a WARN record once for each distinct
// failure, and takes the new pair at the first reload that finds it
// whole. TLSConfig hands the current pair to every new handshake.
package tlsfiles

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	lognoop "go.opentelemetry.io/otel/log/noop"

	"github.com/loam-dev/loam/app"
)

// maxFileSize bounds each file read, so a wrong path, such as a device,
// cannot exhaust memory. A PEM chain of a few certificates is a few KiB.
const maxFileSize = 1 << 20

// The attributes of the Certificate's log records.
var (
	attrCertFile   = attribute.Key("loam.tls.cert_file")
	attrKeyFile    = attribute.Key("loam.tls.key_file")
	attrSerial     = attribute.Key("loam.tls.serial")
	attrNotAfter   = attribute.Key("loam.tls.not_after")
	attrExcMessage = attribute.Key("exception.message")
)

// Certificate is a TLS certificate and key read from files through a
// Host, and reloaded by Run. New makes one; its methods are safe for
// concurrent use.
type Certificate struct {
	fs       app.FS
	settings Settings
	logger   log.Logger

	current atomic.Pointer[tls.Certificate]

	// mu serializes reloads, and guards what they compare against.
	mu sync.Mutex
	// certPEM and keyPEM are the bytes current was parsed from.
	certPEM, keyPEM []byte
	// failure is the last reload failure logged, so each distinct one is
	// logged once; it is empty after a reload that succeeds.
	failure string
}

// New checks s and reads and parses the certificate and key through h.FS,
// logging through logger (a nil logger logs nothing). It returns one
// error joining every mistake in s, every file it cannot read and, when
// both read, the pair's parse error naming both files.
func New(ctx context.Context, h app.Host, s Settings, logger log.Logger) (*Certificate, error) {
	errs := s.check()
	if h.FS == nil {
		errs = append(errs, errors.New("Host.FS is nil: the certificate's files cannot be read"))
	}
	if logger == nil {
		logger = lognoop.NewLoggerProvider().Logger("")
	}
	c := &Certificate{fs: h.FS, settings: s, logger: logger}
	if h.FS != nil {
		var certPEM, keyPEM []byte
		var readErrs []error
		if s.CertFile != "" {
			b, err := c.read("Settings.CertFile", s.CertFile)
			certPEM = b
			readErrs = append(readErrs, err)
		}
		if s.KeyFile != "" {
			b, err := c.read("Settings.KeyFile", s.KeyFile)
			keyPEM = b
			readErrs = append(readErrs, err)
		}
		if err := errors.Join(readErrs...); err != nil {
			errs = append(errs, err)
		} else if s.CertFile != "" && s.KeyFile != "" {
			pair, err := c.parse(certPEM, keyPEM)
			if err != nil {
				errs = append(errs, err)
			} else {
				c.take(ctx, pair, certPEM, keyPEM)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("tlsfiles: %w", err)
	}
	return c, nil
}

// Run calls Reload every Settings.ReloadInterval until ctx ends, then
// returns nil. A failed reload is logged by Reload and keeps the current
// pair, so Run never fails.
func (c *Certificate) Run(ctx context.Context) error {
	t := time.NewTicker(c.settings.ReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			_ = c.Reload(ctx) // Reload logs its failure; the old pair stays.
		}
	}
}

// Reload re-reads both files and, when their bytes differ from the
// current pair's and parse, makes them the current pair and logs an INFO
// record with the new certificate's serial number and expiry. When a file
// cannot be read or the pair doesn't parse, it keeps the current pair,
// logs a WARN record unless the previous reload failed the same way, and
// returns the error naming the file or files.
func (c *Certificate) Reload(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	certPEM, certErr := c.read("Settings.CertFile", c.settings.CertFile)
	keyPEM, keyErr := c.read("Settings.KeyFile", c.settings.KeyFile)
	if err := errors.Join(certErr, keyErr); err != nil {
		return c.fail(ctx, err)
	}
	if bytes.Equal(certPEM, c.certPEM) && bytes.Equal(keyPEM, c.keyPEM) {
		c.failure = ""
		return nil
	}
	pair, err := c.parse(certPEM, keyPEM)
	if err != nil {
		return c.fail(ctx, err)
	}
	c.take(ctx, pair, certPEM, keyPEM)
	return nil
}

// TLSConfig returns a new tls.Config, for a server, whose GetCertificate
// returns the current pair and whose MinVersion is Settings.MinVersion.
// The caller may set its other fields, such as NextProtos.
func (c *Certificate) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: c.settings.MinVersion,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.current.Load(), nil
		},
	}
}

// Current returns the pair handshakes are served with now. It is never
// nil for a Certificate New returned.
func (c *Certificate) Current() *tls.Certificate { return c.current.Load() }

// read returns the contents of the file at path, which field names. An
// error names the field and the path.
func (c *Certificate) read(field, path string) ([]byte, error) {
	f, err := c.fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", field, path, err)
	}
	defer func() { _ = f.Close() }() // Read-only: a failed Close loses nothing.
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s %q: reading: %w", field, path, err)
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("%s %q: larger than %d bytes", field, path, maxFileSize)
	}
	return b, nil
}

// parse parses a PEM certificate chain and key into a pair whose Leaf is
// set. An error names both files, since either may be the wrong one.
func (c *Certificate) parse(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err == nil && pair.Leaf == nil {
		pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0])
	}
	if err != nil {
		return nil, fmt.Errorf("Settings.CertFile %q and Settings.KeyFile %q are not a certificate and its key: %w",
			c.settings.CertFile, c.settings.KeyFile, err)
	}
	return &pair, nil
}

// take makes pair, parsed from certPEM and keyPEM, the current one and
// logs it. The caller holds mu, or owns c alone.
func (c *Certificate) take(ctx context.Context, pair *tls.Certificate, certPEM, keyPEM []byte) {
	c.current.Store(pair)
	c.certPEM, c.keyPEM = certPEM, keyPEM
	c.failure = ""
	c.emit(ctx, log.SeverityInfo, "TLS certificate loaded", nil,
		attrSerial.String(pair.Leaf.SerialNumber.String()),
		attrNotAfter.String(pair.Leaf.NotAfter.UTC().Format(time.RFC3339)))
}

// fail logs err as a WARN record unless it is the failure last logged,
// and returns it. The caller holds mu.
func (c *Certificate) fail(ctx context.Context, err error) error {
	if msg := err.Error(); msg != c.failure {
		c.failure = msg
		c.emit(ctx, log.SeverityWarn, "TLS certificate not reloaded; serving the previous one", err)
	}
	return err
}

// emit emits one record with the files' paths, err, if any, as its
// exception, and attrs.
func (c *Certificate) emit(ctx context.Context, sev log.Severity, body string, err error, attrs ...attribute.KeyValue) {
	var r log.Record
	r.SetTimestamp(time.Now())
	r.SetSeverity(sev)
	r.SetSeverityText(sev.String())
	r.SetBody(attribute.StringValue(body))
	r.AddAttributes(attrCertFile.String(c.settings.CertFile), attrKeyFile.String(c.settings.KeyFile))
	if err != nil {
		r.SetErr(err)
		r.AddAttributes(attrExcMessage.String(err.Error()))
	}
	r.AddAttributes(attrs...)
	c.logger.Emit(ctx, r)
}
