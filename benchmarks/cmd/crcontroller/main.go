// Command crcontroller is the comparison's controller-runtime controller:
// package crcontroller's Main. The harness (cmd/compare) starts it with
// its flags and KUBECONFIG; see that package.
package main

import (
	"os"

	"github.com/loam-dev/loam/benchmarks/crcontroller"
)

func main() {
	os.Exit(crcontroller.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) //nolint:forbidigo // a program, not an App: it owns its process, as controller-runtime's main does
}
