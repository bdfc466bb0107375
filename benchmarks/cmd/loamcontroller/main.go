// Command loamcontroller is the comparison's loam controller: the App of
// package loamcontroller, as app.Main runs it. The harness (cmd/compare)
// starts it with its settings in the environment; see that package.
package main

import (
	"os"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/benchmarks/loamcontroller"
)

func main() {
	app.Main(loamcontroller.Init(os.Stdin))
}
