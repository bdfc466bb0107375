package httpmetrics

import (
	"fmt"

	"github.com/loam-dev/loam/app/httphealth"
	"github.com/loam-dev/loam/app/tlsfiles"
)

// Settings configures a metrics Service. It follows loam's settings
// convention: plain values, a check for each field, and DefaultSettings
// for a starting point. Every field's zero value means zero.
type Settings struct {
	// Address is the host:port the Service listens on, such as ":8080" for
	// every interface. It has no default: the end user picks the port,
	// which the pod's spec names. Port 0 picks a free port.
	Address string
	// Pprof serves net/http/pprof's profiles under /debug/pprof/ beside
	// /metrics. Off by default: a profile costs CPU and shows the
	// program's insides to whoever reaches the port.
	Pprof bool
	// TLS, when set, serves HTTPS with the certificate and key its files
	// name, such as a mounted kubernetes.io/tls Secret's, re-read every
	// ReloadInterval as the webhooks' certificate is, so a rotated
	// certificate reaches the next handshake without a restart. Start
	// from tlsfiles.DefaultSettings and set the files. Nil serves plain
	// HTTP. A Service with a Filter (WithFilter) needs it: a scraper's
	// bearer token never crosses the network in the clear.
	TLS *tlsfiles.Settings
}

// DefaultSettings returns the Settings an Init starts from: no Address,
// which an Init always sources, no pprof, and plain HTTP.
func DefaultSettings() Settings { return Settings{} }

// CheckAddress reports whether address is one a Service can listen on, as
// httphealth.CheckAddress does. It returns an error naming the address
// when it is not.
func CheckAddress(address string) error { return httphealth.CheckAddress(address) }

// check reports every mistake in s but its TLS settings, which
// tlsfiles.New checks, one error each, naming the field.
func (s Settings) check() []error {
	if err := CheckAddress(s.Address); err != nil {
		return []error{fmt.Errorf("Settings.Address: %w", err)}
	}
	return nil
}
