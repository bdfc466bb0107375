package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app/fault/jsonscenario"
	"github.com/loam-dev/loam/examples/memcached"
)

// Options change what Run does.
type Options struct {
	// Keep leaves the cluster and the operator running once the demo is
	// done, and prints a kubeconfig for kubectl, until ctx ends.
	Keep bool
}

const (
	// namespace is where the demo's Memcacheds live: the one namespace
	// whose Memcacheds the operator trusts with a failure scenario.
	namespace = "staging"
	// operatorNamespace is where the operator's Leases are, as in
	// deploy/.
	operatorNamespace = "memcached-system"
	// scenarioAnnotation and scenarioMember are what the operator reads a
	// scenario from: the demo is the chaos harness that writes it.
	scenarioAnnotation = "acme.example.com/failure-scenario"
	scenarioMember     = "acme.fault"
	// patience bounds each wait for the cluster to reach what the demo
	// expects.
	patience = time.Minute
)

// caches are the demo's Memcacheds and their sizes; the experiment is on
// the second.
var caches = []struct {
	name string
	size int64
}{{"sessions", 1}, {"pages", 2}, {"tokens", 3}}

const experimentOn = "pages"

// demo is one run: its output, the cluster, and the clients of the
// cluster's admin, the demo's own.
type demo struct {
	out        io.Writer
	started    time.Time
	kube       kubernetes.Interface
	memcacheds dynamic.ResourceInterface
	spans      *tracetest.SpanRecorder
	operator   <-chan int // the operator App's exit code
}

// Run runs the demo, writing what it shows to out. It returns an error when
// something didn't go as the demo says it does, and nil once the cluster
// and the operator have stopped cleanly.
func Run(ctx context.Context, out io.Writer, opts Options) (err error) {
	d := &demo{out: out, started: time.Now(), spans: tracetest.NewSpanRecorder()}
	dir, err := os.MkdirTemp("", "memcached-demo-")
	if err != nil {
		return err
	}
	// The kubeconfig and the log are of a cluster that is gone once Run
	// returns, --keep or not.
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()

	d.say("Starting a Kubernetes API server in this process (etcd and kube-apiserver, from kubetest)...")
	cluster, err := d.startCluster(ctx)
	if err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		err = errors.Join(err, cluster.Stop(stopCtx))
	}()
	d.say("API server ready after %s.", d.since())

	if err := d.connect(cluster); err != nil {
		return err
	}
	crd, err := memcached.Memcached.CRD()
	if err != nil {
		return err
	}
	d.say("Installing the Memcached CRD, %s, v1alpha1 only (memcached/deploy/crd.yaml adds v1beta1, which needs the operator's webhooks)...", crd.Name)
	if err := cluster.InstallCRDs(ctx, crd); err != nil {
		return err
	}
	for _, ns := range []string{namespace, operatorNamespace} {
		if _, err := d.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}

	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, cluster.Kubeconfig(), 0o600); err != nil {
		return err
	}
	codec, err := jsonscenario.New(scenarioMember)
	if err != nil {
		return err
	}
	logPath := filepath.Join(dir, "operator.log")
	d.say("Running the operator (the Memcached controller and Budget) as an App, with memcached.Operator;")
	d.say("  its log records go to %s.", logPath)
	opCtx, stopOperator := context.WithCancel(context.WithoutCancel(ctx))
	defer stopOperator()
	if err := d.runOperator(opCtx, kubeconfig, logPath, codec); err != nil {
		return err
	}

	if err := d.reconcileThree(ctx); err != nil {
		return err
	}
	if err := d.experiment(ctx, codec); err != nil {
		return err
	}
	d.printTrace()

	if opts.Keep {
		d.say("")
		d.say("The cluster and the operator keep running. Try:")
		d.say("  kubectl --kubeconfig %s -n %s get memcacheds,deployments,poddisruptionbudgets", kubeconfig, namespace)
		d.say("Interrupt (Ctrl-C) to stop them.")
		<-ctx.Done()
	}

	d.say("")
	d.say("Stopping the operator and the cluster...")
	stopOperator()
	select {
	case code := <-d.operator:
		if code != 0 {
			return fmt.Errorf("the operator exited with %d; its log is %s", code, logPath)
		}
	case <-time.After(patience):
		return errors.New("the operator didn't stop within a minute")
	}
	d.say("Done in %s.", d.since())
	return nil
}

// say writes one line of the demo's output.
func (d *demo) say(format string, args ...any) {
	_, _ = fmt.Fprintf(d.out, format+"\n", args...)
}

// since is how long the demo has run, in tenths of a second.
func (d *demo) since() time.Duration { return time.Since(d.started).Round(100 * time.Millisecond) }

// sleep waits for d, or returns ctx's error when it ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
