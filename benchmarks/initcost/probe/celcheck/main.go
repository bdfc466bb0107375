// Command celcheck is a probe of package initcost: it imports
// adapters/celcheck, loam's check of webhook match conditions: cel-go and
// the API server's CEL libraries, and prints /proc/self/status as main
// starts.
package main

import (
	"os"

	_ "github.com/loam-dev/loam/adapters/celcheck"
)

func main() {
	b, err := os.ReadFile("/proc/self/status") //nolint:forbidigo // the probe's one job: a program, not an App
	if err != nil {
		panic(err)
	}
	_, _ = os.Stdout.Write(b)
}
