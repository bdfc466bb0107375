package httphealth_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/health"
	"github.com/loam-dev/loam/app/httphealth"
)

// BenchmarkReadyz measures a readiness probe of three checks over
// loopback, on a kept-alive connection.
func BenchmarkReadyz(b *testing.B) {
	n := osNetwork{listening: make(chan net.Addr, 1)}
	var a, c health.Flag
	a.MarkHealthy()
	c.MarkHealthy()
	svc, err := httphealth.NewService(&app.Setup{Host: app.Host{Network: n}}, httphealth.Settings{Address: "127.0.0.1:0"},
		health.Readiness(&a).Named("a"), health.Readiness(&c, &a).Named("c"), health.Liveness(&c))
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- svc.Serve(b.Context()) }()
	url := "http://" + (<-n.listening).String() + "/readyz"
	tr := &http.Transport{DialContext: n.Dial}
	client := &http.Client{Transport: tr}

	for b.Loop() {
		req, err := http.NewRequestWithContext(b.Context(), http.MethodGet, url, nil)
		if err != nil {
			b.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.StopTimer()
	tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := svc.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	if err := <-served; err != nil {
		b.Fatal(err)
	}
}
