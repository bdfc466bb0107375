package ports

// ScopeName is the instrumentation scope of everything loam's controllers
// and webhooks record: their spans, their records and their instruments,
// and client-go's records through them. It is the kube package's path,
// the package the end user meets, whichever adapter does the recording,
// so that one scope holds all of a controller's telemetry.
const ScopeName = "github.com/loam-dev/loam/kube"
