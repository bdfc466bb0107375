package otlp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/config"
)

// maxPEM bounds a certificate or key file: a bundle of every public root
// is under 1 MiB.
const maxPEM = 4 << 20

// tlsFiles are the PEM of one signal's TLS files, nil where none is named.
type tlsFiles struct {
	ca, cert, key []byte
}

// readFiles reads the files one signal's CERTIFICATE, CLIENT_CERTIFICATE
// and CLIENT_KEY variables name, through fsys, and checks them: the
// certificates parse, and the client's certificate and key are both named
// and are a pair. first names the variable each setting comes from, the
// signal's own or the general one. Every failure is recorded in r, naming
// the variable and the file.
func readFiles(r *config.Resolver, e app.Environment, fsys app.FS, first func(string) string) tlsFiles {
	// read returns the variable that names the file, the file's path and
	// its bytes: "", "", nil when none is named, and nil bytes when it
	// can't be read.
	read := func(name string) (string, string, []byte) {
		variable := first(name)
		path, ok := e.LookupEnv(variable)
		if !ok || path == "" {
			return "", "", nil
		}
		b, err := readFile(fsys, path)
		if err != nil {
			report(r, variable, err)
			return variable, path, nil
		}
		return variable, path, b
	}
	var files tlsFiles
	caVar, caPath, ca := read("CERTIFICATE")
	if ca != nil {
		if x509.NewCertPool().AppendCertsFromPEM(ca) {
			files.ca = ca
		} else {
			report(r, caVar, fmt.Errorf("%s holds no PEM certificate", caPath))
		}
	}
	certVar, certPath, cert := read("CLIENT_CERTIFICATE")
	keyVar, keyPath, key := read("CLIENT_KEY")
	switch {
	case certVar == "" && keyVar != "":
		report(r, keyVar, fmt.Errorf("a client key without a client certificate: set %s too", first("CLIENT_CERTIFICATE")))
	case certVar != "" && keyVar == "":
		report(r, certVar, fmt.Errorf("a client certificate without its key: set %s too", first("CLIENT_KEY")))
	case cert != nil && key != nil:
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			report(r, certVar, fmt.Errorf("the certificate %s and %s's key %s are not a pair: %w", certPath, keyVar, keyPath, err))
			break
		}
		files.cert, files.key = cert, key
	}
	return files
}

// readFile reads the file path names through fsys, up to maxPEM bytes.
func readFile(fsys app.FS, path string) ([]byte, error) {
	if fsys == nil {
		return nil, fmt.Errorf("%s: the Host has no FS to read it through: build the telemetry with app.WithHostTelemetry", path)
	}
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPEM+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > maxPEM {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxPEM)
	}
	return b, nil
}

// tlsConfig returns the TLS configuration of s's connections: TLS 1.2 or
// later, s's certificates trusted in place of the machine's when it names
// some, and its client certificate presented when it has one. It returns
// an error when s's PEM doesn't parse, as in Settings not made by Read.
func tlsConfig(s Signal) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.Certificate != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(s.Certificate) {
			return nil, errors.New("the Certificate holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	if s.ClientCertificate != nil || s.ClientKey != nil {
		pair, err := tls.X509KeyPair(s.ClientCertificate, s.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("the client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
