// Command webhookcel is a probe of package initcost: it imports
// kube/webhookcel, as an operator that makes match conditions does: kube
// and CEL. It prints /proc/self/status as main starts.
package main

import (
	"os"

	_ "github.com/loam-dev/loam/kube/webhookcel"
)

func main() {
	b, err := os.ReadFile("/proc/self/status") //nolint:forbidigo // the probe's one job: a program, not an App
	if err != nil {
		panic(err)
	}
	_, _ = os.Stdout.Write(b)
}
