// Command crcontroller is a probe of package initcost: it imports the
// comparison's controller-runtime controller (benchmarks/crcontroller), as
// cmd/crcontroller does, and prints /proc/self/status as main starts.
package main

import (
	"os"

	_ "github.com/loam-dev/loam/benchmarks/crcontroller"
)

func main() {
	b, err := os.ReadFile("/proc/self/status") //nolint:forbidigo // the probe's one job: a program, not an App
	if err != nil {
		panic(err)
	}
	_, _ = os.Stdout.Write(b)
}
