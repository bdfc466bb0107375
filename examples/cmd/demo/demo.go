package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/config"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kubetest"
)

// Options change what Run does.
type Options struct {
	// Keep leaves the cluster and the operator running once the demo is
	// done, and prints a kubeconfig for kubectl, until ctx ends.
	Keep bool
}

const (
	// namespace is where the demo's Memcacheds live: the one namespace
	// whose Memcacheds the operator trusts with a failure scenario.
	namespace = "staging"
	// operatorNamespace is where the operator's Leases are, as in
	// deploy/.
	operatorNamespace = "memcached-system"
	// scenarioAnnotation and scenarioMember are what the operator reads a
	// scenario from: the demo is the chaos harness that writes it.
	scenarioAnnotation = "acme.example.com/failure-scenario"
	scenarioMember     = "acme.fault"
	// patience bounds each wait for the cluster to reach what the demo
	// expects.
	patience = time.Minute
)

// caches are the demo's Memcacheds and their sizes; the experiment is on
// the second.
var caches = []struct {
	name string
	size int64
}{{"sessions", 1}, {"pages", 2}, {"tokens", 3}}

const experimentOn = "pages"

// demo is one run: its output, the cluster, and the clients of the
// cluster's admin, the demo's own.
type demo struct {
	out        io.Writer
	started    time.Time
	kube       kubernetes.Interface
	memcacheds dynamic.ResourceInterface
	spans      *tracetest.SpanRecorder
	operator   <-chan int // the operator App's exit code
}

// Run runs the demo, writing what it shows to out. It returns an error when
// something didn't go as the demo says it does, and nil once the cluster
// and the operator have stopped cleanly.
func Run(ctx context.Context, out io.Writer, opts Options) (err error) {
	d := &demo{out: out, started: time.Now(), spans: tracetest.NewSpanRecorder()}
	dir, err := os.MkdirTemp("", "memcached-demo-")
	if err != nil {
		return err
	}
	// The kubeconfig and the log are of a cluster that is gone once Run
	// returns, --keep or not.
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()

	d.say("Starting a Kubernetes API server in this process (etcd and kube-apiserver, from kubetest)...")
	cluster, err := d.startCluster(ctx)
	if err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		err = errors.Join(err, cluster.Stop(stopCtx))
	}()
	d.say("API server ready after %s.", d.since())

	if err := d.connect(cluster); err != nil {
		return err
	}
	crd, err := memcached.Memcached.CRD()
	if err != nil {
		return err
	}
	d.say("Installing the Memcached CRD, %s (the YAML in memcached/deploy/crd.yaml)...", crd.Name)
	if err := cluster.InstallCRDs(ctx, crd); err != nil {
		return err
	}
	for _, ns := range []string{namespace, operatorNamespace} {
		if _, err := d.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}

	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, cluster.Kubeconfig(), 0o600); err != nil {
		return err
	}
	codec, err := jsonscenario.New(scenarioMember)
	if err != nil {
		return err
	}
	logPath := filepath.Join(dir, "operator.log")
	d.say("Running the operator (the Memcached controller and Budget) as an App, with memcached.Init;")
	d.say("  its log records go to %s.", logPath)
	opCtx, stopOperator := context.WithCancel(context.WithoutCancel(ctx))
	defer stopOperator()
	if err := d.runOperator(opCtx, kubeconfig, logPath, codec); err != nil {
		return err
	}

	if err := d.reconcileThree(ctx); err != nil {
		return err
	}
	if err := d.experiment(ctx, codec); err != nil {
		return err
	}
	d.printTrace()

	if opts.Keep {
		d.say("")
		d.say("The cluster and the operator keep running. Try:")
		d.say("  kubectl --kubeconfig %s -n %s get memcacheds,deployments,poddisruptionbudgets", kubeconfig, namespace)
		d.say("Interrupt (Ctrl-C) to stop them.")
		<-ctx.Done()
	}

	d.say("")
	d.say("Stopping the operator and the cluster...")
	stopOperator()
	select {
	case code := <-d.operator:
		if code != 0 {
			return fmt.Errorf("the operator exited with %d; its log is %s", code, logPath)
		}
	case <-time.After(patience):
		return errors.New("the operator didn't stop within a minute")
	}
	d.say("Done in %s.", d.since())
	return nil
}

// say writes one line of the demo's output.
func (d *demo) say(format string, args ...any) {
	_, _ = fmt.Fprintf(d.out, format+"\n", args...)
}

// since is how long the demo has run, in tenths of a second.
func (d *demo) since() time.Duration { return time.Since(d.started).Round(100 * time.Millisecond) }

// startCluster starts the cluster, saying how long it has taken every
// second until it is up.
func (d *demo) startCluster(ctx context.Context) (*kubetest.Cluster, error) {
	done := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				d.say("  ...still starting (%s)", d.since())
			}
		}
	}()
	cluster, err := kubetest.Run(ctx)
	close(done)
	<-ticked
	return cluster, err
}

// connect makes the demo's own clients, as the cluster's admin.
func (d *demo) connect(cluster *kubetest.Cluster) error {
	k, err := kubernetes.NewForConfig(cluster.RESTConfig())
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cluster.RESTConfig())
	if err != nil {
		return err
	}
	d.kube = k
	d.memcacheds = dyn.Resource(memcached.Memcached.GVR()).Namespace(namespace)
	return nil
}

// runOperator runs the operator's App in a goroutine, as its main does but
// for three things: it connects with the kubeconfig, as
// MEMCACHED_KUBECONFIG lets it; its failure injection reads scenarios with
// jsonscenario's codec; and its spans are recorded for the trace at the
// end. The operator's exit code goes to d.operator.
func (d *demo) runOperator(ctx context.Context, kubeconfig, logPath string, codec *jsonscenario.Codec) error {
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	logs := memcached.Telemetry("memcached-operator")
	telemetry := func(ctx context.Context, p app.Process) (app.Telemetry, func(context.Context) error, error) {
		t, shutdown, err := logs(ctx, p)
		if err != nil {
			return t, shutdown, err
		}
		traces := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(d.spans))
		t.TracerProvider = traces
		return t, func(ctx context.Context) error {
			return errors.Join(traces.Shutdown(ctx), shutdown(ctx), logFile.Close())
		}, nil
	}
	env := config.Map{
		"CONTROLLER_NAME":      "memcached-controller",
		"POD_NAMESPACE":        operatorNamespace,
		"POD_NAME":             "memcached-controller-demo",
		"PROBE_ADDRESS":        "127.0.0.1:0",
		"MEMCACHED_KUBECONFIG": kubeconfig,
	}
	exited := make(chan int, 1)
	d.operator = exited
	go func() {
		exited <- app.Run(ctx, memcached.Init,
			app.WithHost(app.OSHost()),
			app.WithProcess(app.Process{Environment: env, Stdout: logFile, Stderr: logFile}),
			app.WithTelemetry(telemetry),
			app.WithFaults(fault.Settings{Decoder: codec}),
		)
	}()
	return nil
}

// reconcileThree creates the demo's Memcacheds, and shows what the
// operator made of them.
func (d *demo) reconcileThree(ctx context.Context) error {
	d.say("")
	d.say("Creating three Memcacheds in %s: %s.", namespace, names())
	for _, c := range caches {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": memcached.Memcached.Group + "/" + memcached.Memcached.Version,
			"kind":       memcached.Memcached.Kind,
			"metadata":   map[string]any{"name": c.name, "namespace": namespace},
			"spec":       map[string]any{"size": c.size},
		}}
		if _, err := d.memcacheds.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, c := range caches {
		if err := d.waitFor(ctx, c.name+"'s Deployment and PodDisruptionBudget", func(s state) bool {
			return s.replicas == c.size && s.pdb && s.available != nil
		}, c.name); err != nil {
			return err
		}
	}
	d.say("The operator applied a Deployment for each (Memcached controller) and a PodDisruptionBudget")
	d.say("for each Deployment (Budget). No kubelet runs here, so no pod starts:")
	if err := d.table(ctx); err != nil {
		return err
	}

	d.say("")
	d.say("Playing the Deployment controller: writing each Deployment's status as if its pods were ready.")
	for _, c := range caches {
		if err := d.deploymentReady(ctx, c.name); err != nil {
			return err
		}
	}
	for _, c := range caches {
		if err := d.waitFor(ctx, c.name+"'s status to follow its Deployment's", func(s state) bool {
			return s.ready == c.size && s.available != nil && s.available.Status == metav1.ConditionTrue
		}, c.name); err != nil {
			return err
		}
	}
	d.say("Each Memcached's status follows its Deployment's through Owns, with no polling:")
	return d.table(ctx)
}

// experiment aborts experimentOn's applies of its Deployment, resizes it,
// shows the failure and the backoff, and ends the experiment.
func (d *demo) experiment(ctx context.Context, codec *jsonscenario.Codec) error {
	value, err := annotationValue(codec, fit.Scenario{Rules: []fit.Rule{
		{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}},
	}})
	if err != nil {
		return err
	}
	d.say("")
	d.say("Experiment: the reconciles of %s abort every apply of a Deployment (kube:deployments.apps:patch).", experimentOn)
	d.say("  %s: %s", scenarioAnnotation, value)
	before := d.reconciles(experimentOn)
	if err := d.patch(ctx, experimentOn, map[string]any{"metadata": map[string]any{"annotations": map[string]any{scenarioAnnotation: value}}}); err != nil {
		return err
	}
	d.say("Resizing %s from 2 to 3, so its next reconcile must apply its Deployment...", experimentOn)
	if err := d.patch(ctx, experimentOn, map[string]any{"spec": map[string]any{"size": 3}}); err != nil {
		return err
	}
	if err := d.waitFor(ctx, experimentOn+"'s ApplyFailed condition", func(s state) bool {
		return s.available != nil && s.available.Reason == "ApplyFailed" && s.available.ObservedGeneration == s.generation
	}, experimentOn); err != nil {
		return err
	}
	s, err := d.state(ctx, experimentOn)
	if err != nil {
		return err
	}
	d.say("  Available=%s reason=%s", s.available.Status, s.available.Reason)
	d.say("  message: %s", s.available.Message)
	d.say("  its Deployment still has %d replicas: the apply never left the process.", s.replicas)
	d.say("Each failure retries it after a backoff that doubles, so its reconciles slow down:")
	for _, wait := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		d.say("  reconciles of %s since the experiment began: %d", experimentOn, d.reconciles(experimentOn)-before)
	}
	d.say("The others are not touched by it, and stay available (* marks the annotated one):")
	if err := d.table(ctx); err != nil {
		return err
	}

	d.say("")
	d.say("Ending the experiment: removing the annotation reconciles %s at once, without the scenario.", experimentOn)
	if err := d.patch(ctx, experimentOn, map[string]any{"metadata": map[string]any{"annotations": map[string]any{scenarioAnnotation: nil}}}); err != nil {
		return err
	}
	if err := d.waitFor(ctx, experimentOn+"'s Deployment to be resized", func(s state) bool {
		return s.replicas == 3 && s.available != nil && s.available.Reason != "ApplyFailed"
	}, experimentOn); err != nil {
		return err
	}
	if err := d.deploymentReady(ctx, experimentOn); err != nil {
		return err
	}
	if err := d.waitFor(ctx, experimentOn+" to be available again", func(s state) bool {
		return s.ready == 3 && s.available != nil && s.available.Status == metav1.ConditionTrue && s.available.ObservedGeneration == s.generation
	}, experimentOn); err != nil {
		return err
	}
	d.say("Recovered: its Deployment has 3 replicas, and (once the Deployment controller's part is played) it is available:")
	return d.table(ctx)
}

// annotationValue returns the value of an annotation that carries s,
// written with codec: the W3C baggage fit.ContextWithScenario leaves.
func annotationValue(codec fit.Encoder, s fit.Scenario) (string, error) {
	ctx, err := fit.ContextWithScenario(context.Background(), codec, s)
	if err != nil {
		return "", err
	}
	return baggage.FromContext(ctx).String(), nil
}

// patch applies a JSON merge patch to the Memcached name.
func (d *demo) patch(ctx context.Context, name string, patch map[string]any) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = d.memcacheds.Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{})
	return err
}

// deploymentReady plays the Deployment controller for the Deployment name:
// its replicas are all ready and available.
func (d *demo) deploymentReady(ctx context.Context, name string) error {
	deployments := d.kube.AppsV1().Deployments(namespace)
	dep, err := deployments.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	n := *dep.Spec.Replicas
	dep.Status = appsv1.DeploymentStatus{
		ObservedGeneration: dep.Generation,
		Replicas:           n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
		Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
			Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.",
			LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
	}
	_, err = deployments.UpdateStatus(ctx, dep, metav1.UpdateOptions{})
	return err
}

// state is what the demo shows of one Memcached.
type state struct {
	generation int64
	size       int64
	replicas   int64 // its Deployment's spec; 0 when there is none
	pdb        bool
	ready      int64
	available  *metav1.Condition
	annotated  bool
}

// state reads the Memcached name, its Deployment and its budget.
func (d *demo) state(ctx context.Context, name string) (state, error) {
	u, err := d.memcacheds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return state{}, err
	}
	var m memcached.Object
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &m); err != nil {
		return state{}, err
	}
	s := state{
		generation: m.Generation,
		size:       int64(m.Spec.Size),
		ready:      int64(m.Status.ReadyReplicas),
		available:  meta.FindStatusCondition(m.Status.Conditions, "Available"),
	}
	_, s.annotated = m.Annotations[scenarioAnnotation]
	dep, err := d.kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return state{}, err
	default:
		s.replicas = int64(*dep.Spec.Replicas)
	}
	_, err = d.kube.PolicyV1().PodDisruptionBudgets(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return state{}, err
	default:
		s.pdb = true
	}
	return s, nil
}

// waitFor waits until cond holds of the Memcached name, or fails after
// patience, or when the operator exits.
func (d *demo) waitFor(ctx context.Context, what string, cond func(state) bool, name string) error {
	deadline := time.Now().Add(patience)
	for {
		s, err := d.state(ctx, name)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if cond(s) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: not within %s; last seen %+v", what, patience, s)
		}
		select {
		case code := <-d.operator:
			return fmt.Errorf("waiting for %s: the operator exited with %d", what, code)
		default:
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// table prints every Memcached's state.
func (d *demo) table(ctx context.Context) error {
	d.say("  %-9s %-5s %-11s %-4s %-6s %-10s %s", "NAME", "SIZE", "DEPLOYMENT", "PDB", "READY", "AVAILABLE", "REASON")
	for _, c := range caches {
		s, err := d.state(ctx, c.name)
		if err != nil {
			return err
		}
		pdb := "no"
		if s.pdb {
			pdb = "yes"
		}
		avail, reason := "-", "-"
		if s.available != nil {
			avail, reason = string(s.available.Status), s.available.Reason
		}
		name := c.name
		if s.annotated {
			name += "*"
		}
		d.say("  %-9s %-5d %-11s %-4s %-6d %-10s %s", name, s.size, fmt.Sprintf("%d replicas", s.replicas), pdb, s.ready, avail, reason)
	}
	return nil
}

// reconciles counts the operator's reconciles of the Memcached name that
// have ended.
func (d *demo) reconciles(name string) int {
	n := 0
	for _, s := range d.spans.Ended() {
		if s.Name() == "reconcile Memcached" && objectName(s) == name {
			n++
		}
	}
	return n
}

// objectName is the reconciled object's name on a reconcile's span.
func objectName(s sdktrace.ReadOnlySpan) string {
	for _, kv := range s.Attributes() {
		if kv.Key == "loam.kube.object.name" {
			return kv.Value.AsString()
		}
	}
	return ""
}

// printTrace prints the first failed reconcile of experimentOn as a tree:
// the reconcile's span, the API requests it made, and the events on each.
func (d *demo) printTrace() {
	ended := d.spans.Ended()
	var root sdktrace.ReadOnlySpan
	for _, s := range ended {
		if s.Name() == "reconcile Memcached" && objectName(s) == experimentOn && s.Status().Code == codes.Error {
			if root == nil || s.StartTime().Before(root.StartTime()) {
				root = s // the first: it also applied the ApplyFailed status
			}
		}
	}
	d.say("")
	if root == nil {
		d.say("No failed reconcile of %s was recorded.", experimentOn)
		return
	}
	d.say("One failed reconcile of %s, as its trace records it (trace %s):", experimentOn, root.SpanContext().TraceID())
	children := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		if s.SpanContext().TraceID() == root.SpanContext().TraceID() && s.Parent().IsValid() {
			p := s.Parent().SpanID().String()
			children[p] = append(children[p], s)
		}
	}
	for _, list := range children {
		slices.SortFunc(list, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	}
	d.printSpan(root, children, "  ")
}

// printSpan prints s, its events and its children, indented.
func (d *demo) printSpan(s sdktrace.ReadOnlySpan, children map[string][]sdktrace.ReadOnlySpan, indent string) {
	line := fmt.Sprintf("%s%s  %s", indent, s.Name(), s.EndTime().Sub(s.StartTime()).Round(10*time.Microsecond))
	if s.Status().Code == codes.Error {
		line += "  ERROR"
	}
	d.say("%s", line)
	var attrs []string
	for _, kv := range s.Attributes() {
		switch kv.Key {
		case "k8s.namespace.name", "loam.kube.object.name", "http.request.method", "url.full", "http.response.status_code", "error.type":
			attrs = append(attrs, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
		}
	}
	if len(attrs) > 0 {
		d.say("%s  | %s", indent, strings.Join(attrs, " "))
	}
	for _, e := range s.Events() {
		var ea []string
		for _, kv := range e.Attributes {
			ea = append(ea, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
		}
		d.say("%s  event %s %s", indent, e.Name, strings.Join(ea, " "))
	}
	for _, c := range children[s.SpanContext().SpanID().String()] {
		d.printSpan(c, children, indent+"    ")
	}
}

// names lists the demo's Memcacheds.
func names() string {
	var n []string
	for _, c := range caches {
		n = append(n, fmt.Sprintf("%s (size %d)", c.name, c.size))
	}
	return strings.Join(n, ", ")
}

// sleep waits for d, or returns ctx's error when it ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
