// Package freeaddr gives the examples' tests a loopback address to
// listen on, chosen before the listener exists.
package freeaddr

import (
	"net"
	"testing"
)

// Loopback returns a loopback address whose port no listener held a
// moment ago, for a test that must name the port before anything
// listens on it (a Prometheus configuration, a webhook configuration, a
// probes Service). Another process may take the port meanwhile, as with
// any such address; it fails t when no port can be had.
func Loopback(t testing.TB) string {
	t.Helper()
	//nolint:forbidigo // a helper of tests only, which pick a port before any App (and its Host) exists
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("freeaddr: listening on a free loopback port: %v", err)
	}
	address := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("freeaddr: closing the listener on %s: %v", address, err)
	}
	return address
}
