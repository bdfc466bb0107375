// Command empty is a probe of package initcost: it imports nothing but the
// standard library's os: the baseline of every probe, and prints
// /proc/self/status as main starts.
package main

import (
	"os"
)

func main() {
	b, err := os.ReadFile("/proc/self/status") //nolint:forbidigo // the probe's one job: a program, not an App
	if err != nil {
		panic(err)
	}
	_, _ = os.Stdout.Write(b)
}
