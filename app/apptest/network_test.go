package apptest_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app/apptest"
)

// accept accepts one connection on l in a goroutine of the bubble.
func accept(t *testing.T, l net.Listener) <-chan net.Conn {
	t.Helper()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			t.Errorf("Accept: %v", err)
			close(accepted)
			return
		}
		accepted <- c
	}()
	return accepted
}

// connect dials address and returns both ends.
func connect(t *testing.T, n *apptest.Network, l net.Listener, address string) (client, server net.Conn) {
	t.Helper()
	accepted := accept(t, l)
	client, err := n.Dial(t.Context(), "tcp", address)
	require.NoError(t, err)
	server = <-accepted
	require.NotNil(t, server)
	t.Cleanup(func() {
		_ = client.Close()
		_ = server.Close()
	})
	return client, server
}

func TestNetwork_carries_bytes_both_ways(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := apptest.NewNetwork()
		l, err := n.Listen(t.Context(), "tcp", "api.test:443")
		require.NoError(t, err)
		defer l.Close()
		require.Equal(t, "api.test:443", l.Addr().String())
		require.Equal(t, "tcp", l.Addr().Network())

		client, server := connect(t, n, l, "api.test:443")
		require.Equal(t, "api.test:443", client.RemoteAddr().String())
		require.Equal(t, client.LocalAddr().String(), server.RemoteAddr().String())
		require.Equal(t, "api.test:443", server.LocalAddr().String())

		// Both ends write before either reads: the connection buffers.
		_, err = client.Write([]byte("ping"))
		require.NoError(t, err)
		_, err = server.Write([]byte("pong"))
		require.NoError(t, err)

		got := make([]byte, 4)
		_, err = io.ReadFull(server, got)
		require.NoError(t, err)
		require.Equal(t, "ping", string(got))
		_, err = io.ReadFull(client, got)
		require.NoError(t, err)
		require.Equal(t, "pong", string(got))
	})
}

func TestNetwork_refuses_a_dial_nothing_listens_for(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := apptest.NewNetwork()
		_, err := n.Dial(t.Context(), "tcp", "api.test:443")
		require.ErrorIs(t, err, syscall.ECONNREFUSED)
		var opErr *net.OpError
		require.ErrorAs(t, err, &opErr)
		require.Equal(t, "dial", opErr.Op)
		require.Contains(t, err.Error(), "api.test:443")

		l, err := n.Listen(t.Context(), "tcp", "api.test:443")
		require.NoError(t, err)
		_, err = n.Dial(t.Context(), "tcp", "api.test:8443")
		require.ErrorIs(t, err, syscall.ECONNREFUSED, "another port of the host")
		_, err = n.Dial(t.Context(), "tcp", "other.test:443")
		require.ErrorIs(t, err, syscall.ECONNREFUSED, "another host")
		require.NoError(t, l.Close())
		_, err = n.Dial(t.Context(), "tcp", "api.test:443")
		require.ErrorIs(t, err, syscall.ECONNREFUSED, "a closed listener")
	})
}

func TestNetwork_closing_a_listener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := apptest.NewNetwork()
		l, err := n.Listen(t.Context(), "tcp", "api.test:443")
		require.NoError(t, err)
		client, server := connect(t, n, l, "api.test:443")

		// A dial nobody accepted yet.
		pending, err := n.Dial(t.Context(), "tcp", "api.test:443")
		require.NoError(t, err)
		defer pending.Close()

		require.NoError(t, l.Close())
		require.ErrorIs(t, l.Close(), net.ErrClosed, "a second Close")
		_, err = pending.Read(make([]byte, 1))
		require.ErrorIs(t, err, io.EOF, "the unaccepted connection is closed")
		_, err = l.Accept()
		require.ErrorIs(t, err, net.ErrClosed)

		// An Accept waiting when the listener closes.
		l2, err := n.Listen(t.Context(), "tcp", "api.test:8443")
		require.NoError(t, err)
		acceptErr := make(chan error, 1)
		go func() {
			_, err := l2.Accept()
			acceptErr <- err
		}()
		synctest.Wait()
		require.NoError(t, l2.Close())
		require.ErrorIs(t, <-acceptErr, net.ErrClosed)

		// The accepted connection outlives its listener, as a TCP one does.
		_, err = client.Write([]byte("still here"))
		require.NoError(t, err)
		got := make([]byte, len("still here"))
		_, err = io.ReadFull(server, got)
		require.NoError(t, err)

		// The address is free again.
		l3, err := n.Listen(t.Context(), "tcp", "api.test:443")
		require.NoError(t, err)
		require.NoError(t, l3.Close())
	})
}

func TestNetwork_addresses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := apptest.NewNetwork()

		picked, err := n.Listen(t.Context(), "tcp", ":0")
		require.NoError(t, err)
		defer picked.Close()
		host, port, err := net.SplitHostPort(picked.Addr().String())
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1", host, "a wildcard listener reports an address to dial")
		require.NotEqual(t, "0", port)

		other, err := n.Listen(t.Context(), "tcp", "api.test:0")
		require.NoError(t, err)
		defer other.Close()
		require.NotEqual(t, picked.Addr().String(), other.Addr().String())

		for _, address := range []string{
			picked.Addr().String(),
			"localhost:" + port,
			"[::1]:" + port,
			":" + port,
			"0.0.0.0:" + port,
		} {
			c, s := connect(t, n, picked, address)
			require.NoError(t, c.Close())
			require.NoError(t, s.Close())
		}
		_, err = n.Dial(t.Context(), "tcp", "api.test:"+port)
		require.ErrorIs(t, err, syscall.ECONNREFUSED, "another host does not reach this one's wildcard")

		_, err = n.Listen(t.Context(), "tcp", "localhost:"+port)
		require.ErrorIs(t, err, syscall.EADDRINUSE, "the wildcard holds the loopback's port")
		_, err = n.Listen(t.Context(), "tcp", other.Addr().String())
		require.ErrorIs(t, err, syscall.EADDRINUSE)

		loopback, err := n.Listen(t.Context(), "tcp", "localhost:8080")
		require.NoError(t, err)
		defer loopback.Close()
		require.Equal(t, "127.0.0.1:8080", loopback.Addr().String())
		c, s := connect(t, n, loopback, "127.0.0.1:8080")
		require.NoError(t, c.Close())
		require.NoError(t, s.Close())
	})
}

func TestNetwork_rejects_bad_input(t *testing.T) {
	n := apptest.NewNetwork()
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name    string
		call    func() error
		wantErr error
		wantMsg string
	}{
		{
			name:    "dial of an unknown network",
			call:    func() error { _, err := n.Dial(t.Context(), "udp", "api.test:53"); return err },
			wantMsg: "unknown network udp",
		},
		{
			name:    "listen on an unknown network",
			call:    func() error { _, err := n.Listen(t.Context(), "unix", "/tmp/sock"); return err },
			wantMsg: "unknown network unix",
		},
		{
			name:    "dial without a port",
			call:    func() error { _, err := n.Dial(t.Context(), "tcp", "api.test"); return err },
			wantMsg: "missing port in address",
		},
		{
			name:    "dial of port 0",
			call:    func() error { _, err := n.Dial(t.Context(), "tcp", "api.test:0"); return err },
			wantMsg: "invalid port",
		},
		{
			name:    "listen on a named port",
			call:    func() error { _, err := n.Listen(t.Context(), "tcp", "api.test:https"); return err },
			wantMsg: "invalid port",
		},
		{
			name:    "listen on a port out of range",
			call:    func() error { _, err := n.Listen(t.Context(), "tcp", "api.test:65536"); return err },
			wantMsg: "invalid port",
		},
		{
			name:    "dial with a canceled context",
			call:    func() error { _, err := n.Dial(canceled, "tcp", "api.test:443"); return err },
			wantErr: context.Canceled,
		},
		{
			name:    "listen with a canceled context",
			call:    func() error { _, err := n.Listen(canceled, "tcp", "api.test:443"); return err },
			wantErr: context.Canceled,
		},
		{
			name:    "partition of a malformed address",
			call:    func() error { return n.Partition("api.test") },
			wantMsg: "missing port in address",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.Error(t, err)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			}
			if tt.wantMsg != "" {
				require.ErrorContains(t, err, tt.wantMsg)
			}
		})
	}
}

func TestConn_read_deadline_on_the_bubble_clock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := apptest.NewNetwork()
		l, err := n.Listen(t.Context(), "tcp", "api.test:443")
		require.NoError(t, err)
		defer l.Close()
		client, _ := connect(t, n, l, "api.test:443")

		start := time.Now()
		require.NoError(t, client.SetReadDeadline(start.Add(time.Minute)))
		_, err = client.Read(make([]byte, 1))
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		var netErr net.Error
		require.ErrorAs(t, err, &netErr)
		require.True(t, netErr.Timeout())
		require.Equal(t, time.Minute, time.Since(start), "the bubble's clock jumped to the deadline")

		// A deadline in the past fails at once; the zero time clears it.
		require.NoError(t, client.SetReadDeadline(start))
		_, err = client.Read(make([]byte, 1))
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.NoError(t, client.SetReadDeadline(time.Time{}))

		// A deadline moved later before it fires: the old timer is stale.
		require.NoError(t, client.SetReadDeadline(time.Now().Add(time.Second)))
		require.NoError(t, client.SetReadDeadline(time.Now().Add(time.Hour)))
		before := time.Now()
		_, err = client.Read(make([]byte, 1))
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.Equal(t, time.Hour, time.Since(before))
	})
}

func TestConn_close(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := apptest.NewNetwork()
		l, err := n.Listen(t.Context(), "tcp", "api.test:443")
		require.NoError(t, err)
		defer l.Close()
		client, server := connect(t, n, l, "api.test:443")

		// A Read waiting when the peer closes gets what was written, then EOF.
		read := make(chan []byte, 1)
		go func() {
			b, _ := io.ReadAll(server)
			read <- b
		}()
		_, err = client.Write([]byte("last words"))
		require.NoError(t, err)
		require.NoError(t, client.Close())
		require.Equal(t, "last words", string(<-read))

		_, err = server.Write([]byte("anyone?"))
		require.ErrorIs(t, err, syscall.EPIPE, "writing to a closed peer")

		_, err = client.Read(make([]byte, 1))
		require.ErrorIs(t, err, net.ErrClosed)
		_, err = client.Write([]byte("x"))
		require.ErrorIs(t, err, net.ErrClosed)
		require.ErrorIs(t, client.Close(), net.ErrClosed)
		require.ErrorIs(t, client.SetDeadline(time.Now()), net.ErrClosed)

		// Closing an end wakes its own Read.
		c2, _ := connect(t, n, l, "api.test:443")
		readErr := make(chan error, 1)
		go func() {
			_, err := c2.Read(make([]byte, 1))
			readErr <- err
		}()
		synctest.Wait()
		require.NoError(t, c2.Close())
		require.ErrorIs(t, <-readErr, net.ErrClosed)
	})
}

func TestConn_a_full_buffer_makes_the_writer_wait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := apptest.NewNetwork()
		l, err := n.Listen(t.Context(), "tcp", "api.test:443")
		require.NoError(t, err)
		defer l.Close()
		client, server := connect(t, n, l, "api.test:443")

		// More than the buffer holds: the write waits for the reader, and
		// then all of it arrives in order.
		payload := bytes.Repeat([]byte("0123456789abcdef"), 300_000)
		written := make(chan error, 1)
		go func() {
			_, err := client.Write(payload)
			written <- err
		}()
		synctest.Wait()
		select {
		case err := <-written:
			t.Fatalf("the write returned (%v) with nobody reading", err)
		default:
		}
		got := make([]byte, len(payload))
		_, err = io.ReadFull(server, got)
		require.NoError(t, err)
		require.NoError(t, <-written)
		require.True(t, bytes.Equal(payload, got))

		// A write deadline cuts a waiting write short, reporting how much
		// went out.
		require.NoError(t, client.SetWriteDeadline(time.Now().Add(time.Second)))
		written2, err := client.Write(payload)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.Positive(t, written2)
		require.Less(t, written2, len(payload))
	})
}

func TestNetwork_partition_silences_connections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := apptest.NewNetwork()
		l, err := n.Listen(t.Context(), "tcp", "api.test:443")
		require.NoError(t, err)
		defer l.Close()
		client, server := connect(t, n, l, "api.test:443")

		require.NoError(t, n.Partition("api.test:443"))
		_, err = server.Write([]byte("held"))
		require.NoError(t, err, "writes are buffered while silent")

		start := time.Now()
		require.NoError(t, client.SetReadDeadline(start.Add(30*time.Second)))
		_, err = client.Read(make([]byte, 4))
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.Equal(t, 30*time.Second, time.Since(start))

		// A new dial waits for its context while the address is silent.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		dialStart := time.Now()
		_, err = n.Dial(ctx, "tcp", "api.test:443")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, 10*time.Second, time.Since(dialStart))

		// Closing during the partition is held back too: no EOF yet.
		require.NoError(t, client.SetReadDeadline(time.Time{}))
		require.NoError(t, n.Heal("api.test:443"))
		got := make([]byte, 4)
		_, err = io.ReadFull(client, got)
		require.NoError(t, err)
		require.Equal(t, "held", string(got), "Heal delivers what was held back")

		c2, s2 := connect(t, n, l, "api.test:443")
		require.NoError(t, c2.Close())
		require.NoError(t, s2.Close())
	})
}

func TestNetwork_partition_holds_back_a_close(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := apptest.NewNetwork()
		l, err := n.Listen(t.Context(), "tcp", ":8080")
		require.NoError(t, err)
		defer l.Close()
		client, server := connect(t, n, l, "localhost:8080")

		require.NoError(t, n.Partition("localhost:8080"), "a loopback name reaches the wildcard listener")
		require.NoError(t, server.Close())
		readErr := make(chan error, 1)
		go func() {
			_, err := client.Read(make([]byte, 1))
			readErr <- err
		}()
		synctest.Wait()
		select {
		case err := <-readErr:
			t.Fatalf("Read returned %v through a partition", err)
		default:
		}
		_, err = client.Write([]byte("unheard"))
		require.NoError(t, err, "the peer's close has not arrived either")
		require.NoError(t, n.Heal("127.0.0.1:8080"))
		require.ErrorIs(t, <-readErr, io.EOF)
		_, err = client.Write([]byte("now"))
		require.ErrorIs(t, err, syscall.EPIPE)
	})
}

func TestNetwork_dial_waiting_on_a_partition_proceeds_on_heal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := apptest.NewNetwork()
		l, err := n.Listen(t.Context(), "tcp", "api.test:443")
		require.NoError(t, err)
		defer l.Close()
		require.NoError(t, n.Partition("api.test:443"))

		dialed := make(chan error, 1)
		go func() {
			c, err := n.Dial(t.Context(), "tcp", "api.test:443")
			if err == nil {
				err = c.Close()
			}
			dialed <- err
		}()
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case err := <-dialed:
			t.Fatalf("Dial returned %v through a partition", err)
		default:
		}
		require.NoError(t, n.Heal("api.test:443"))
		require.NoError(t, <-dialed)
		s, err := l.Accept()
		require.NoError(t, err)
		require.NoError(t, s.Close())
	})
}
