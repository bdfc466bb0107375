// Command demo shows the Memcached operator at work, in one process: it
// starts a Kubernetes API server with kubetest, runs the operator against
// it, creates three Memcacheds, runs a failure-injection experiment on one
// of them, and prints a reconcile's trace. make demo runs it.
//
//	go run ./cmd/demo          # exits by itself, 0 when all went as shown
//	go run ./cmd/demo --keep   # then leaves the cluster up for kubectl
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	var opts Options
	flag.BoolVar(&opts.Keep, "keep", false, "leave the cluster and the operator running, and print a kubeconfig for kubectl, until interrupted")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Run(ctx, os.Stdout, opts)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
