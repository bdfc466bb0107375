// Command kubetest starts a Kubernetes API server and etcd in this process,
// writes a kubeconfig for its administrator and waits until interrupted:
// a cluster to point kubectl or a controller at, with nothing to install.
//
//	go run ./cmd/kubetest -kubeconfig /tmp/kubetest.kubeconfig -controller-manager
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/kubelet"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "kubetest:", err)
		}
		os.Exit(1) //nolint:forbidigo // a command for people, not an App
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kubetest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "write the admin kubeconfig to this file, removed at exit (default: kubeconfig in a new temporary directory)")
	controllerManager := fs.Bool("controller-manager", false, "also run the garbage collector (which notices CRDs applied later within 5s) and ClusterRole aggregation")
	workloads := fs.Bool("workloads", false, "also run the Deployment, ReplicaSet, StatefulSet and ServiceAccount controllers and a fake kubelet, so Pods become Running and Ready (no container runs)")
	authorization := fs.String("authorization", string(kubetest.RBAC), "authorization mode: RBAC or AlwaysAllow")
	verbosity := fs.Int("v", -1, "write the components' logs to standard error at this klog verbosity (-1: none)")
	gates := fs.String("feature-gates", "", "feature gates to set, as kube-apiserver's flag reads them, such as ShardedListAndWatch=true")
	if err := fs.Parse(args); err != nil {
		return err
	}
	featureGates, err := parseGates(*gates)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}

	//nolint:forbidigo // a command for people, not an App: it runs until Ctrl-C
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	opts := []kubetest.Option{kubetest.WithAuthorization(kubetest.Authorization(*authorization))}
	if *controllerManager {
		opts = append(opts, kubetest.WithControllerManager())
	}
	if *workloads {
		opts = append(opts, kubetest.WithWorkloadControllers(), kubetest.WithFakeKubelet(kubelet.Config{}))
	}
	if *verbosity >= 0 {
		opts = append(opts, kubetest.WithLogs(stderr), kubetest.WithVerbosity(*verbosity))
	}
	if len(featureGates) > 0 {
		opts = append(opts, kubetest.WithFeatureGates(featureGates))
	}

	path := *kubeconfig
	if path == "" {
		dir, err := os.MkdirTemp("", "kubetest-kubeconfig-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "kubeconfig")
	}

	started := time.Now()
	cluster, err := kubetest.Run(ctx, opts...)
	if err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cluster.Stop(stopCtx); err != nil {
			fmt.Fprintln(stderr, "kubetest: stop:", err)
		}
	}()
	//nolint:forbidigo // writing the kubeconfig file is this command's job
	if err := os.WriteFile(path, cluster.Kubeconfig(), 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	defer os.Remove(path)

	fmt.Fprintf(stdout, `Kubernetes API server ready at https://%s (started in %s).
Kubeconfig: %s

  export KUBECONFIG=%s
  kubectl get namespaces

Press Ctrl-C to stop.
`, cluster.Connection().Server, time.Since(started).Round(10*time.Millisecond), path, path)

	<-ctx.Done()
	fmt.Fprintln(stdout, "Stopping.")
	return nil
}

// parseGates reads -feature-gates: Name=true or Name=false, comma
// separated, as kube-apiserver's flag does. It fails naming each entry
// that isn't one.
func parseGates(s string) (map[string]bool, error) {
	gates := map[string]bool{}
	if s == "" {
		return gates, nil
	}
	var errs []error
	for _, entry := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(entry), "=")
		on, err := strconv.ParseBool(value)
		if !ok || name == "" || err != nil {
			errs = append(errs, fmt.Errorf("-feature-gates: %q is not Name=true or Name=false", entry))
			continue
		}
		gates[name] = on
	}
	return gates, errors.Join(errs...)
}
