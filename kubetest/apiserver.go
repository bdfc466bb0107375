package kubetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompatibility "k8s.io/component-base/compatibility"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	apiserveroptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// apiServer is one run of kube-apiserver. A cluster's API server can be
// stopped and started again; each start is a new apiServer on the same
// address and the same etcd.
type apiServer struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned
	err    error         // what Run returned; read after done
}

// apiServerFlags are the flags kube-apiserver would get on its command line.
func (c *Cluster) apiServerFlags() []string {
	flags := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--cert-dir=" + filepath.Join(c.dir, "apiserver-certs"),
		"--tls-cert-file=" + c.creds.servingCert,
		"--tls-private-key-file=" + c.creds.servingKey,
		"--token-auth-file=" + c.creds.tokenFile,
		"--authorization-mode=" + string(c.settings.authorization),
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + c.creds.saKey,
		"--service-account-signing-key-file=" + c.creds.saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		// Nothing serves the kubernetes Service's endpoints, and the
		// reconciler would only write a loopback address into them.
		"--endpoint-reconciler-type=none",
		// Priority and fairness queues requests by FlowSchemas that a
		// test never tunes; without it a request is served at once.
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		// A watch ends as soon as the server begins to stop, as a client of
		// a real API server sees it end: without it, StopAPIServer waits
		// out the 60s request timeout while any watch is open.
		"--shutdown-watch-termination-grace-period=2s",
	}
	if gates := c.settings.featureGates; len(gates) > 0 {
		pairs := make([]string, 0, len(gates))
		for _, name := range slices.Sorted(maps.Keys(gates)) {
			pairs = append(pairs, fmt.Sprintf("%s=%t", name, gates[name]))
		}
		flags = append(flags, "--feature-gates="+strings.Join(pairs, ","))
	}
	return flags
}

// startAPIServer builds kube-apiserver as its own command does — options,
// flags, Complete, Validate, config, server chain — and runs it on ln. The
// server keeps running after ctx ends; stop it with stop. It returns once
// the server runs, not once it is ready.
func (c *Cluster) startAPIServer(ctx context.Context, ln net.Listener) (*apiServer, error) {
	closeListener := true
	defer func() {
		if closeListener {
			_ = ln.Close()
		}
	}()

	// The gates of WithFeatureGates go on the process's global gate first:
	// the storage layer and other parts of k8s.io/apiserver read it and not
	// the server's copy. They stay set for the whole process.
	if gates := c.settings.featureGates; len(gates) > 0 {
		if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(gates); err != nil {
			return nil, fmt.Errorf("set the process's feature gates %v: %w", slices.Sorted(maps.Keys(gates)), err)
		}
	}

	// Each server gets its own copy of the feature gates and its own
	// registry of component versions, so that two clusters in a process do
	// not share the mutable state the command keeps in globals. The copy,
	// taken after the line above, has the gates of WithFeatureGates, and
	// --feature-gates sets them on it again.
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	registry := basecompatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(basecompatibility.DefaultKubeComponent, effectiveVersion(), featureGate); err != nil {
		return nil, fmt.Errorf("register the API server's version and feature gates: %w", err)
	}
	registerDefaultGlobals()
	opts := apiserveroptions.NewServerRunOptions()
	opts.GenericServerRunOptions.ComponentGlobalsRegistry = registry

	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, set := range opts.Flags().FlagSets {
		fs.AddFlagSet(set)
	}
	if err := fs.Parse(c.apiServerFlags()); err != nil {
		return nil, fmt.Errorf("parse kube-apiserver flags: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	opts.SecureServing.Listener = ln
	opts.SecureServing.BindPort = port
	if err := registry.Set(); err != nil {
		return nil, fmt.Errorf("apply the API server's version and feature gates: %w", err)
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	prepared, err := func() (interface{ Run(context.Context) error }, error) {
		completed, err := opts.Complete(runCtx)
		if err != nil {
			return nil, fmt.Errorf("complete kube-apiserver options: %w", err)
		}
		if errs := completed.Validate(); len(errs) > 0 {
			return nil, fmt.Errorf("validate kube-apiserver options: %w", utilerrors.NewAggregate(errs))
		}
		config, err := apiserverapp.NewConfig(completed)
		if err != nil {
			return nil, fmt.Errorf("configure kube-apiserver: %w", err)
		}
		completedConfig, err := config.Complete()
		if err != nil {
			return nil, fmt.Errorf("complete kube-apiserver config: %w", err)
		}
		chain, err := apiserverapp.CreateServerChain(completedConfig)
		if err != nil {
			return nil, fmt.Errorf("create kube-apiserver server chain: %w", err)
		}
		prepared, err := chain.PrepareRun()
		if err != nil {
			return nil, fmt.Errorf("prepare kube-apiserver: %w", err)
		}
		return prepared, nil
	}()
	if err != nil {
		cancel()
		return nil, err
	}

	s := &apiServer{cancel: cancel, done: make(chan struct{})}
	closeListener = false // Run owns it now and closes it when it stops
	go func() {
		defer close(s.done)
		s.err = prepared.Run(runCtx)
	}()
	return s, nil
}

// stop ends the server and waits until Run has returned: in-flight requests
// finish, watches end, the listener closes. It returns what Run returned,
// or ctx's error if ctx ends first (the server then still stops in the
// background).
func (s *apiServer) stop(ctx context.Context) error {
	s.cancel()
	select {
	case <-s.done:
		if s.err != nil && !errors.Is(s.err, context.Canceled) {
			return fmt.Errorf("kube-apiserver stopped with an error: %w", s.err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for kube-apiserver to stop: %w", context.Cause(ctx))
	}
}

// listenAgain binds addr again after the previous server on it stopped.
// The port may still be held for a moment by the closing listener, so
// "address in use" is retried until ctx ends.
func listenAgain(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	for {
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err == nil {
			return ln, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("listen on %s again: %w", addr, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("listen on %s again: %w (%w)", addr, err, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}
