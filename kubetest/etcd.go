package kubetest

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// startEtcd runs a single-member etcd in this process with its data in dir,
// listening on loopback ports the kernel picks, and returns once it serves.
// fsync is off: a test cluster trades durability across a machine crash for
// speed, and a restart of the API server keeps the data all the same.
func startEtcd(ctx context.Context, dir string, logs io.Writer) (*embed.Etcd, string, error) {
	loopback := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg := embed.NewConfig()
	cfg.Name = "kubetest"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{loopback}
	cfg.AdvertiseClientUrls = []url.URL{loopback}
	cfg.ListenPeerUrls = []url.URL{loopback}
	cfg.AdvertisePeerUrls = []url.URL{loopback}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = true
	// A lone member elects itself; short ticks make that take tens of
	// milliseconds instead of a second.
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(etcdLogger(logs))

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd failed while starting: %w", err)
	case <-ctx.Done():
		e.Close()
		return nil, "", fmt.Errorf("wait for etcd: %w", context.Cause(ctx))
	}
	if len(e.Clients) == 0 {
		e.Close()
		return nil, "", fmt.Errorf("etcd started without a client listener")
	}
	return e, "http://" + e.Clients[0].Addr().String(), nil
}

// etcdLogger writes etcd's warnings and errors to w, or nothing when w is
// nil. etcd logs through zap, not klog, so its lines go only to the
// cluster that asked.
func etcdLogger(w io.Writer) *zap.Logger {
	if w == nil {
		return zap.NewNop()
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.TimeEncoderOfLayout(time.TimeOnly + ".000")
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(w), zapcore.WarnLevel)
	return zap.New(core).Named("etcd")
}
