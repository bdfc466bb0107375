package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
)

// CheckServer reports whether server is the host:port of an API server,
// with a host and a port between 1 and 65535. The error reads after the
// field's name.
func CheckServer(server string) error {
	if server == "" {
		return errors.New("is empty: want the API server's host:port")
	}
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", server, err)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", server)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number between 1 and 65535", server, port)
	}
	return nil
}

// CheckTLS reports whether cfg can reach an API server: it is required,
// verifies the server's certificate, and allows no version below TLS 1.2.
// The error reads after the field's name.
func CheckTLS(cfg *tls.Config) error {
	switch {
	case cfg == nil:
		return errors.New("is nil: the API server is reached over TLS")
	case cfg.InsecureSkipVerify:
		return errors.New("InsecureSkipVerify is set: the API server's certificate would not be verified")
	case cfg.MinVersion != 0 && cfg.MinVersion < tls.VersionTLS12:
		return fmt.Errorf("MinVersion %#x is below TLS 1.2", cfg.MinVersion)
	}
	return nil
}
