package httphealth

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// Settings configures a probes Service. It follows loam's settings
// convention: plain values, a check function for each field, and
// DefaultSettings for a starting point. Every field's zero value means
// zero, never "use the default".
type Settings struct {
	// Address is the host:port the Service listens on, such as ":8081" for
	// every interface. It has no default: the end user picks the port, which
	// the pod's probes name. Port 0 picks a free port, which suits tests.
	Address string
}

// DefaultSettings returns the Settings an Init starts from. Address is
// empty: loam imposes no port, so an Init always sources it.
func DefaultSettings() Settings { return Settings{} }

// CheckAddress reports whether address is one a Service can listen on:
// host:port, where host may be empty, a name or an IP address (an IPv6
// address in brackets), and port is a number from 0 to 65535. It returns
// an error naming the address when it is not.
func CheckAddress(address string) error {
	if address == "" {
		return errors.New(`address is empty: set host:port, such as ":8081"`)
	}
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("address %q is not host:port: %w", address, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("address %q: port %q is not a number from 0 to 65535", address, port)
	}
	return nil
}

// check reports every mistake in s, one error each, naming the field.
func (s Settings) check() []error {
	var errs []error
	if err := CheckAddress(s.Address); err != nil {
		errs = append(errs, fmt.Errorf("Settings.Address: %w", err))
	}
	return errs
}
