// Package scale is loam's scale harness: it measures a controller against
// one kubetest cluster and prints what it found as Markdown tables. It
// holds tests only; run it from the kubetest module:
//
//	cd kubetest && go test -count=1 -timeout 120m -v -run Scale ./scale \
//		-args -scale.n=1000,10000 -scale.w=1,4,16
//
// (`make scale` runs that.) Without -args it runs small (N=200, W=4) and
// fast, as part of `make test`, and still checks that every object
// converges and every figure was taken; the figures themselves are never
// asserted. Its flags:
//
//	-scale.n=200          object counts N, comma-separated
//	-scale.w=4            worker counts W, comma-separated
//	-scale.only=...       phases: limit,convergence,startup,memory,failover,
//	                      priority
//	-scale.load=before    convergence's objects are created before the
//	                      controller starts (before), or while it runs (while)
//	-scale.lease=short    failover's Lease: short (4s, 2s, 0.5s, fenced in
//	                      client-go's whole seconds as the chaos suite's
//	                      are; 2s, 1.2s, 0.4s lost its Lease on a loaded
//	                      machine) or default (kube.DefaultSettings:
//	                      15s, 10s, 2s)
//	-scale.limits=client-go,loam,watched
//	                      the limit's variants: client-go is the limit;
//	                      loam sends the same writes through loam's Client;
//	                      watched runs informers like the Controller's meanwhile
//	-scale.repeat=1       measure each limit, convergence and priority
//	                      variant this many times
//	-scale.loaders=16     parallel clients that create and delete objects
//	-scale.out=FILE       also write the tables to FILE
//	-scale.profile=DIR    write a CPU profile of each limit and convergence
//
// # What each phase measures
//
// The limit: the time for N server-side applies of a ConfigMap and N
// applies of a custom object's status, issued by plain client-go with W
// parallel workers and no client-side rate limit, on objects created
// beforehand, until the harness's own watch has seen every status. It is
// client-go's pace for the writes a reconcile makes, not the API server's
// raw limit: client-go decodes every answer, on the same two cores as the
// API server. The raw write limit, whose answers are never decoded, is
// the limit mode of the comparison in the benchmarks module (make
// compare). Two variants tell costs apart:
// the same writes through a kube.Client (loam's transport), and the same
// writes while informers like the Controller's watch the objects and the
// ConfigMaps (the cost of watching, which the limit leaves out and every
// controller pays).
//
// Convergence: the same N objects (created beforehand, or while the
// controller runs with -scale.load=while) reconciled by a whole App running
// a kube.Controller with Settings.Workers = W, whose Reconciler applies a
// ConfigMap the object owns (kube.Owns) and returns a status whose
// condition observes the object's generation. It is timed from the App's
// start (or the loader's) until the harness's own watch has seen every
// status settled, and reported as a ratio of the limit for the same N and
// W (with -scale.load=while, of the limit plus the time the loader takes
// to create N objects on its own, since the creates then fall inside the
// timing), with what the controller did: reconciles per object, the API
// server's requests per object by verb (from its own
// apiserver_request_total), the time keys waited in the queue and
// reconciles took (the controller's own histograms), and the process's CPU
// time per object next to the CPU the machine's other processes took
// meanwhile.
//
// Start-up and memory: with N objects and N owned ConfigMaps in the
// cluster, the controller runs in a child process (this test binary run
// again with -test.run=TestScaleChild), so that its memory is told apart
// from the API server's. The child reports the time from Serve to caches
// synced and to the first reconcile, its resident memory before Serve and
// its peak (VmHWM, reset before Serve) once synced, and the heap after
// garbage collection before Serve and once synced: the difference per
// object, with and without the owned ConfigMaps, is the heap each cached
// object costs.
//
// Failover: two replicas of the controller in one process, each its own
// App and identity, over N objects. The leader is cut off from the API
// server without releasing its Lease, and then a new leader is sent
// SIGTERM and releases it; each time the harness reports the time until
// the standby's first reconcile, and from the standby acquiring the Lease
// (the App's own "successfully acquired lease" record) to that reconcile.
//
// Priority: the head start the priority queue gives a change over a new
// leader's initial list. N ConfigMaps are listed into one worker's queue,
// each reconcile a fixed sleep (1ms), and once every key is queued a
// ConfigMap is created; the harness reports the time from the create to
// its reconcile, how many reconciles began before it, and how long the
// whole list took. Three variants run in turn: a kube.Controller of the
// ConfigMaps, and the harness's own informer and worker around
// adapters/queue's queue and around client-go's plain FIFO queue, the
// order loam's queue had before — a Controller has no switch to FIFO.
//
// Everything runs on one machine: the API server, etcd, the controller and
// the harness share its cores, so the figures are for comparing, not
// absolute.
package scale
