package main

import (
	"context"
	"errors"
	"os"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/config"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kubetest"
)

// startCluster starts the cluster, saying how long it has taken every
// second until it is up.
func (d *demo) startCluster(ctx context.Context) (*kubetest.Cluster, error) {
	done := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				d.say("  ...still starting (%s)", d.since())
			}
		}
	}()
	cluster, err := kubetest.Run(ctx)
	close(done)
	<-ticked
	return cluster, err
}

// connect makes the demo's own clients, as the cluster's admin.
func (d *demo) connect(cluster *kubetest.Cluster) error {
	k, err := kubernetes.NewForConfig(cluster.RESTConfig())
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cluster.RESTConfig())
	if err != nil {
		return err
	}
	d.kube = k
	d.memcacheds = dyn.Resource(memcached.Memcached.GVR()).Namespace(namespace)
	return nil
}

// runOperator runs the operator's App in a goroutine, as its main does but
// for four things: it connects with the kubeconfig, as
// MEMCACHED_KUBECONFIG lets it; its failure injection reads scenarios with
// jsonscenario's codec; its spans are recorded for the trace at the end;
// and its probes and metrics listen on free loopback ports. The operator's
// exit code goes to d.operator.
func (d *demo) runOperator(ctx context.Context, kubeconfig, logPath string, codec *jsonscenario.Codec) error {
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	op := memcached.NewOperator("memcached-operator")
	telemetry := func(ctx context.Context, p app.Process) (app.Telemetry, func(context.Context) error, error) {
		t, shutdown, err := op.Telemetry(ctx, p)
		if err != nil {
			return t, shutdown, err
		}
		traces := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(d.spans))
		t.TracerProvider = traces
		return t, func(ctx context.Context) error {
			return errors.Join(traces.Shutdown(ctx), shutdown(ctx), logFile.Close())
		}, nil
	}
	env := config.Map{
		"CONTROLLER_NAME":      "memcached-controller",
		"POD_NAMESPACE":        operatorNamespace,
		"POD_NAME":             "memcached-controller-demo",
		"PROBE_ADDRESS":        "127.0.0.1:0",
		"METRICS_ADDRESS":      "127.0.0.1:0",
		"MEMCACHED_KUBECONFIG": kubeconfig,
	}
	exited := make(chan int, 1)
	d.operator = exited
	go func() {
		exited <- app.Run(ctx, op.Init,
			app.WithHost(app.OSHost()),
			app.WithProcess(app.Process{Environment: env, Stdout: logFile, Stderr: logFile}),
			app.WithTelemetry(telemetry),
			app.WithFaults(fault.Settings{Decoder: codec}),
		)
	}()
	return nil
}
