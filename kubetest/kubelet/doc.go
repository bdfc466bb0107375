// Package kubelet is a fake kubelet for kubetest's clusters, in the manner
// of kwok: it registers a Node and plays the part of the scheduler and of
// the kubelet for the Pods of a cluster that runs no container, so that
// the Pods of a Deployment, a ReplicaSet or a StatefulSet come alive and an
// operator that waits on them can be tested. kubetest.WithFakeKubelet runs
// one in a cluster and stops it with the cluster.
//
// What it does:
//
//   - It registers a Node (DefaultNodeName unless Config.NodeName says
//     otherwise): Ready, with no pressure, and more capacity than a test
//     asks for, labelled FakeNodeLabel.
//   - It binds every Pod without a Node to its Node, whatever the Pod's node
//     selector, affinity or tolerations: no scheduler runs. A Pod with
//     scheduling gates waits until they are removed. Pods bound to another
//     Node are not its own.
//   - A Pod bound to its Node is Pending, its containers ContainerCreating,
//     for Config.ReadyAfter from the kubelet's first sight of it; then it
//     is Running, with an IP from 10.244.0.0/16, its init containers
//     Completed and its containers running, started and ready, and its
//     Ready condition True. Times are in whole seconds, as the API keeps them.
//   - A Pod's fault, chosen by FaultAnnotation on the Pod or on its
//     namespace, makes it never ready (NeverReady), crash-loop (CrashLoop:
//     its restart count grows every Config.CrashLoopPeriod from when the
//     fault came; under restartPolicy Never its first crash ends it,
//     Failed) or ready only for the first n Pods of its controller, a
//     Deployment's counted across its ReplicaSets (PartlyReady). A namespace's
//     annotation can change at any time, and its Pods follow.
//   - A Pod being deleted is deleted at once, as the kubelet does once its
//     containers have stopped.
//
// What it does not do: run containers or any process, pull images, run
// probes (readiness is the fault's, not a probe's), mount volumes (a Pod
// whose PersistentVolumeClaim is never bound runs all the same), run
// DaemonSet or static Pods, end a healthy Pod (a Job's Pod runs forever), report
// resource use, serve logs, exec or port-forward, renew a node Lease, or
// give Services endpoints (no EndpointSlice controller runs either).
//
// Its time is the process's clock, so in a testing/synctest bubble with a
// fake client its delays take no real time; decisions about a Pod are
// made by a pure function of the Pod, its fault and the time, which its
// tests check without a cluster.
package kubelet
