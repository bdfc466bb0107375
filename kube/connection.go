package kube

import (
	"context"
	"crypto/tls"
)

// Connection is how a Client reaches one API server: the address it dials,
// the TLS it dials with, and the bearer token every request carries. loam
// reads no kubeconfig, no token file and no environment variable to fill
// it: the end user's Init does, through the Setup.
type Connection struct {
	// Server is the API server's host:port.
	Server string
	// TLS configures the connection. Its ServerName defaults to Server's
	// host.
	TLS *tls.Config
	// Token returns the bearer token each request carries. A nil Token
	// sends no Authorization header, for a client that authenticates with a
	// certificate in TLS.
	Token func(context.Context) (string, error)
}
