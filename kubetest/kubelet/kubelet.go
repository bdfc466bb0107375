package kubelet

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Defaults of Config.
const (
	// DefaultNodeName is the name of the Node a kubelet registers when
	// Config.NodeName is "".
	DefaultNodeName = "kubetest-node"
	// DefaultReadyAfter is how long a Pod takes from the kubelet's first
	// sight of it on its Node to its containers running, when
	// Config.ReadyAfter is 0.
	DefaultReadyAfter = 200 * time.Millisecond
	// DefaultCrashLoopPeriod is how often a CrashLoop Pod's containers
	// restart when Config.CrashLoopPeriod is 0.
	DefaultCrashLoopPeriod = time.Second
)

// Config is how a fake kubelet behaves. Its zero value is the defaults.
type Config struct {
	// NodeName is the Node the kubelet registers and runs Pods on:
	// DefaultNodeName when "".
	NodeName string
	// ReadyAfter is how long a Pod stays Pending, its containers
	// ContainerCreating, from the kubelet's first sight of it bound to its
	// Node, before its containers run: DefaultReadyAfter when 0.
	ReadyAfter time.Duration
	// CrashLoopPeriod is how often the containers of a CrashLoop Pod
	// restart, and its restart count grows: DefaultCrashLoopPeriod when
	// 0. A real kubelet backs off from 10 seconds to 5 minutes instead.
	CrashLoopPeriod time.Duration
	// Version is the kubelet version the Node reports. kubetest sets its
	// Kubernetes release.
	Version string
}

// withDefaults returns c with its zero fields set to the defaults, or an
// error naming every field that is wrong.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.ReadyAfter < 0 {
		errs = append(errs, fmt.Errorf("ReadyAfter %v: must not be negative", c.ReadyAfter))
	}
	if c.CrashLoopPeriod < 0 {
		errs = append(errs, fmt.Errorf("CrashLoopPeriod %v: must not be negative", c.CrashLoopPeriod))
	}
	if c.NodeName == "" {
		c.NodeName = DefaultNodeName
	}
	if c.ReadyAfter == 0 {
		c.ReadyAfter = DefaultReadyAfter
	}
	if c.CrashLoopPeriod == 0 {
		c.CrashLoopPeriod = DefaultCrashLoopPeriod
	}
	if c.Version == "" {
		c.Version = "v0.0.0-kubetest"
	}
	return c, errors.Join(errs...)
}

// Check reports every field of c that is wrong, for an option that takes a
// Config to report with its other mistakes.
func (c Config) Check() error {
	_, err := c.withDefaults()
	return err
}

// Kubelet is a fake kubelet running: see the package's documentation.
type Kubelet struct {
	cfg        Config
	timing     timing
	client     kubernetes.Interface
	factory    informers.SharedInformerFactory
	pods       corelisters.PodLister
	namespaces corelisters.NamespaceLister
	// replicaSets finds the Deployment of a ReplicaSet's Pod, whose
	// ReplicaSets share PartlyReady's places.
	replicaSets appslisters.ReplicaSetLister
	queue       workqueue.TypedRateLimitingInterface[string]
	cancel      context.CancelFunc
	done        chan struct{} // closed when the worker has returned
	working     bool          // whether Start started the worker

	// Only the worker reads and writes these.
	runs   map[string]*podRun // by the Pod's namespace/name
	nextIP int
}

// podRun is a Pod the kubelet runs.
type podRun struct {
	uid   types.UID
	owner types.UID // its group's under PartlyReady: see groupOf
	started
	ready bool // as last written
}

// Start registers the Node and runs the kubelet until Stop, with client. It
// returns once the Node exists and the kubelet has seen every Pod,
// namespace and ReplicaSet (client must be allowed to list and watch
// them), or an error when cfg is wrong, the Node can't be registered,
// or ctx ends first. ctx bounds the start only.
func Start(ctx context.Context, client kubernetes.Interface, cfg Config) (*Kubelet, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("fake kubelet: %w", err)
	}
	if err := register(ctx, client, node(cfg.NodeName, cfg.Version, time.Now())); err != nil {
		return nil, err
	}

	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer := factory.Core().V1().Pods()
	nsInformer := factory.Core().V1().Namespaces()
	k := &Kubelet{
		cfg:        cfg,
		timing:     timing{readyAfter: cfg.ReadyAfter, crashPeriod: cfg.CrashLoopPeriod},
		client:     client,
		factory:    factory,
		pods:       podInformer.Lister(),
		namespaces: nsInformer.Lister(),
		// Registered before the factory starts, so it is listed too.
		replicaSets: factory.Apps().V1().ReplicaSets().Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{}),
		done: make(chan struct{}),
		runs: map[string]*podRun{},
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add(key)
		}
	}
	_, err = podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	if err == nil {
		_, err = nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: k.faultMayHaveChanged,
		})
	}
	if err != nil {
		k.queue.ShutDown()
		return nil, fmt.Errorf("fake kubelet: watch Pods and namespaces: %w", err)
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	k.cancel = cancel
	factory.Start(runCtx.Done())
	synced := factory.WaitForCacheSync(ctx.Done())
	for typ, ok := range synced {
		if !ok {
			k.stop()
			return nil, fmt.Errorf("fake kubelet: list %v: %w", typ, context.Cause(ctx))
		}
	}
	k.working = true
	go func() {
		defer close(k.done)
		for k.processNext(runCtx) {
		}
	}()
	return k, nil
}

// register creates the Node, or, when it exists, sets its status.
func register(ctx context.Context, client kubernetes.Interface, n *corev1.Node) error {
	_, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var old *corev1.Node
		old, err = client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err == nil {
			old.Status = n.Status
			_, err = client.CoreV1().Nodes().UpdateStatus(ctx, old, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("fake kubelet: register the Node %s: %w", n.Name, err)
	}
	return nil
}

// NodeName returns the name of the kubelet's Node.
func (k *Kubelet) NodeName() string { return k.cfg.NodeName }

// Stop stops the kubelet and waits until it has, or until ctx ends. The
// Node and the Pods stay as they were. Calling it again returns nil.
func (k *Kubelet) Stop(ctx context.Context) error {
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		k.stop()
	}()
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the fake kubelet to stop: %w", context.Cause(ctx))
	}
}

// stop ends the worker and the informers and waits for them.
func (k *Kubelet) stop() {
	if k.cancel != nil {
		k.cancel()
	}
	k.queue.ShutDown()
	if k.working {
		<-k.done
	}
	k.factory.Shutdown()
}

// faultMayHaveChanged looks at every Pod of a namespace again when its
// FaultAnnotation changed.
func (k *Kubelet) faultMayHaveChanged(oldObj, newObj any) {
	before, ok1 := oldObj.(*corev1.Namespace)
	after, ok2 := newObj.(*corev1.Namespace)
	if !ok1 || !ok2 || before.Annotations[FaultAnnotation] == after.Annotations[FaultAnnotation] {
		return
	}
	pods, err := k.pods.Pods(after.Name).List(labels.Everything())
	if err != nil {
		return // a lister never fails
	}
	for _, p := range pods {
		k.queue.Add(p.Namespace + "/" + p.Name)
	}
}

// processNext syncs the next Pod of the queue, and reports false once the
// queue is shut down.
func (k *Kubelet) processNext(ctx context.Context) bool {
	key, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(key)
	if err := k.sync(ctx, key); err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).V(2).Info("fake kubelet: will retry", "pod", key, "err", err)
		k.queue.AddRateLimited(key)
		return true
	}
	k.queue.Forget(key)
	return true
}

// sync does for one Pod what the kubelet does: binds it to the Node if it
// has none, deletes it at once once it is being deleted, and otherwise
// writes the status it has now under its fault, and looks at it again
// when that status changes by itself.
func (k *Kubelet) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key the handlers make
	}
	pod, err := k.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		k.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case pod.Spec.NodeName == "":
		if pod.DeletionTimestamp != nil || len(pod.Spec.SchedulingGates) > 0 {
			// The API server deletes an unbound Pod at once, and refuses
			// to bind a gated one: its gates' removal brings it back.
			return nil
		}
		return k.bind(ctx, pod)
	case pod.Spec.NodeName != k.cfg.NodeName:
		return nil
	case pod.DeletionTimestamp != nil:
		k.forget(key)
		return k.remove(ctx, pod)
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		// Ended, by the kubelet or someone else (an eviction): its
		// containers run no more, so under PartlyReady its place goes
		// to another Pod of its controller.
		k.forget(key)
		return nil
	}

	run := k.runs[key]
	if run == nil || run.uid != pod.UID {
		k.forget(key)
		run = &podRun{uid: pod.UID, started: started{at: k.startOf(pod, time.Now()), podIP: podIP(k.nextIP), hostIP: hostIP}}
		k.nextIP++
		k.runs[key] = run
	}
	// Looked at each time: the Pod's ReplicaSet may be seen after it.
	run.owner = k.groupOf(pod)
	var nsAnnotations map[string]string
	if n, err := k.namespaces.Get(ns); err == nil {
		nsAnnotations = n.Annotations
	}
	fault, bad := faultOf(pod, nsAnnotations)
	now := time.Now()
	switch {
	case bad != nil || fault.kind != crashLoop:
		run.crashFrom, run.restartsBefore = time.Time{}, nil
	case run.crashFrom.IsZero():
		run.crashFrom, run.restartsBefore = now, restartCounts(pod.Status.ContainerStatuses)
	}
	status, after := statusAt(pod, fault, bad, run.started, k.readyPeers(run.owner, key), now, k.timing)
	if !apiequality.Semantic.DeepEqual(status, pod.Status) {
		updated := pod.DeepCopy()
		updated.Status = status
		if _, err := k.client.CoreV1().Pods(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("write the status of the Pod %s: %w", key, err)
		}
	}
	wasReady := run.ready
	run.ready = isReady(status)
	if wasReady && !run.ready {
		k.wakePeers(run.owner, key)
	}
	if after > 0 {
		k.queue.AddAfter(key, after)
	}
	return nil
}

// startOf returns when the kubelet, seeing pod first at now, started it:
// now, unless pod runs already, under a kubelet before this one, whose
// start it keeps, so it stays Running and is not Pending again for
// ReadyAfter.
func (k *Kubelet) startOf(pod *corev1.Pod, now time.Time) time.Time {
	if pod.Status.Phase != corev1.PodRunning || pod.Status.StartTime == nil {
		return now
	}
	at := pod.Status.StartTime.Time
	if latest := now.Add(-k.cfg.ReadyAfter); at.After(latest) {
		at = latest // started under a shorter ReadyAfter
	}
	return at
}

// bind binds pod to the kubelet's Node, as the scheduler would.
func (k *Kubelet) bind(ctx context.Context, pod *corev1.Pod) error {
	err := k.client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: k.cfg.NodeName},
	}, metav1.CreateOptions{})
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return fmt.Errorf("bind the Pod %s/%s to the Node %s: %w", pod.Namespace, pod.Name, k.cfg.NodeName, err)
	}
	return nil
}

// remove deletes pod for good, as the kubelet does once its containers
// have stopped: none run here, so at once.
func (k *Kubelet) remove(ctx context.Context, pod *corev1.Pod) error {
	err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64(0)),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete the Pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// forget drops what the kubelet remembers of the Pod key, and lets another
// Pod of its controller become ready in its place.
func (k *Kubelet) forget(key string) {
	run, ok := k.runs[key]
	if !ok {
		return
	}
	delete(k.runs, key)
	if run.ready {
		k.wakePeers(run.owner, key)
	}
}

// readyPeers counts the Pods of owner, other than key, that the kubelet
// made ready.
func (k *Kubelet) readyPeers(owner types.UID, key string) int {
	n := 0
	for other, run := range k.runs {
		if other != key && run.owner == owner && run.ready {
			n++
		}
	}
	return n
}

// wakePeers looks again at the Pods of owner other than key: one of them
// may become ready now.
func (k *Kubelet) wakePeers(owner types.UID, key string) {
	for other, run := range k.runs {
		if other != key && run.owner == owner {
			k.queue.Add(other)
		}
	}
}

// groupOf returns the UID of the group pod shares PartlyReady's places
// with: its Deployment's when its controller is a ReplicaSet that a
// Deployment controls, as the old and new ReplicaSets of a rollout both
// are; otherwise its controller's (ownerOf).
func (k *Kubelet) groupOf(pod *corev1.Pod) types.UID {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" {
		return ownerOf(pod)
	}
	rs, err := k.replicaSets.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return ref.UID // not seen yet, or another of the same name
	}
	if d := metav1.GetControllerOf(rs); d != nil {
		return d.UID
	}
	return ref.UID
}

// ownerOf returns the UID of pod's controller, or pod's own when it has
// none.
func ownerOf(pod *corev1.Pod) types.UID {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return ref.UID
	}
	return pod.UID
}

// isReady reports whether status has the condition Ready True.
func isReady(status corev1.PodStatus) bool {
	for _, c := range status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
