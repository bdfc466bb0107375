package apptest_test

import (
	"context"
	"errors"
	"io"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app/apptest"
)

func TestSwitch_Cut_closes_what_it_made_and_refuses_until_Restore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		n := apptest.NewNetwork()
		server, err := n.Listen(ctx, "tcp", "10.0.0.1:443")
		require.NoError(t, err)
		defer func() { require.NoError(t, server.Close()) }()
		go func() {
			for {
				c, err := server.Accept()
				if err != nil {
					return
				}
				go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
			}
		}()

		s := &apptest.Switch{Network: n}
		c, err := s.Dial(ctx, "tcp", "10.0.0.1:443")
		require.NoError(t, err)
		_, err = c.Write([]byte("hi"))
		require.NoError(t, err)
		buf := make([]byte, 2)
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		ln, err := s.Listen(ctx, "tcp", "10.0.0.2:8081")
		require.NoError(t, err)

		s.Cut()
		_, err = c.Read(buf)
		require.Error(t, err, "the connection it made is closed")
		_, err = ln.Accept()
		require.Error(t, err, "the listener it made is closed")
		_, err = s.Dial(ctx, "tcp", "10.0.0.1:443")
		require.True(t, errors.Is(err, syscall.ECONNREFUSED), "a dial while cut is refused: %v", err)
		_, err = s.Listen(ctx, "tcp", "10.0.0.2:8081")
		require.True(t, errors.Is(err, syscall.ENETDOWN), "a listen while cut fails: %v", err)

		s.Restore()
		c, err = s.Dial(ctx, "tcp", "10.0.0.1:443")
		require.NoError(t, err, "restored, it dials again")
		require.NoError(t, c.Close())
		synctest.Wait()
	})
}

// A pod cut off from the network loses the connections others made to
// it too: Cut closes what the Switch's listeners accepted, so a server
// behind a cut Switch, a replica's webhooks, is unreachable at once, not
// only to new dials.
func TestSwitch_Cut_closes_the_connections_its_listeners_accepted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		n := apptest.NewNetwork()
		s := &apptest.Switch{Network: n}
		ln, err := s.Listen(ctx, "tcp", "10.0.0.2:9443")
		require.NoError(t, err)
		accepted := make(chan struct{})
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			close(accepted)
			_, _ = io.Copy(c, c)
		}()
		c, err := n.Dial(ctx, "tcp", "10.0.0.2:9443")
		require.NoError(t, err)
		defer func() { _ = c.Close() }()
		<-accepted
		_, err = c.Write([]byte("hi"))
		require.NoError(t, err)
		buf := make([]byte, 2)
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)

		s.Cut()
		_, err = c.Read(buf)
		require.Error(t, err, "the connection its listener accepted is closed")
		synctest.Wait()
	})
}
