package kube

import "fmt"

// ClientOption changes how NewClient builds a Client: WithGzip makes one.
// Options apply in order, so the last of each kind wins.
type ClientOption interface {
	applyClient(clientConfig) clientConfig
}

// clientConfig is what the ClientOptions set; its zero value is the
// Client's default.
type clientConfig struct {
	gzip bool
}

// clientOptionFunc is a ClientOption that is a function.
type clientOptionFunc func(clientConfig) clientConfig

func (f clientOptionFunc) applyClient(c clientConfig) clientConfig { return f(c) }

// WithGzip sets whether the Client asks the API server to gzip its
// answers and watch events, which the Client's transport then decompresses
// for every client built on Config. Off, the default, it asks for no
// compression.
//
// Turn it on for an API server at the end of a slow or metered link, such
// as a managed cluster's public endpoint reached from another region or a
// laptop: there the bytes saved outweigh the CPU both ends spend
// compressing and decompressing every list, answer and watch event. Leave
// it off in-cluster and on a LAN, where bandwidth is plentiful and the CPU
// is the cost, which is why kube-controller-manager and the scheduler
// turn gzip off too. The API server compresses only answers above its own
// threshold, and only with its APIResponseCompression feature on, as it
// is by default.
func WithGzip(on bool) ClientOption {
	return clientOptionFunc(func(c clientConfig) clientConfig {
		c.gzip = on
		return c
	})
}

// applyClientOptions returns the config opts set, in order, and a mistake
// for each nil option.
func applyClientOptions(opts []ClientOption) (clientConfig, []error) {
	var (
		cfg  clientConfig
		errs []error
	)
	for i, o := range opts {
		if o == nil {
			errs = append(errs, fmt.Errorf("kube: NewClient: option %d is nil", i))
			continue
		}
		cfg = o.applyClient(cfg)
	}
	return cfg, errs
}
