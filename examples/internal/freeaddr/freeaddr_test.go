package freeaddr_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/examples/internal/freeaddr"
)

// The address is a loopback one, and free: a listener can take it.
func TestLoopback(t *testing.T) {
	address := freeaddr.Loopback(t)
	host, _, err := net.SplitHostPort(address)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", host)
	l, err := net.Listen("tcp", address)
	require.NoError(t, err)
	require.NoError(t, l.Close())
}
