package explore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The health oracle (issue #47), as Acto's, needs no invariant: after
// each step has settled, an explored object that says it serves, by a
// condition of Config.HealthConditions' types (Available and Ready by
// default) that is True, while a Deployment or StatefulSet it controls,
// by its controller ownerReference, isn't available, fails the step.
// The differential oracles can't find that: a fresh object of the same
// spec, and the sequence without its faults, say the same. It takes the
// failure to be stable: it must hold when the step has settled and still
// after the Quiet the checks wait, so that an operator that follows its
// child a moment late is not blamed for the moment.
//
// A Deployment isn't available while its controller is still to observe
// its latest spec, or while its own Available condition isn't True: the
// Deployment controller's judgement, which counts its maxUnavailable, not
// its ready replicas against its replicas. A StatefulSet, which has no
// such condition, isn't available while fewer of its replicas are ready
// than its spec asks for. On a cluster without the workload controllers
// (kubetest.WithWorkloadControllers) no Deployment has a status to judge
// it by, and the oracle judges nothing.

var (
	deploymentsGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	statefulSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	replicaSetsGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	podsGVR         = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// defaultHealthConditions are the condition types the health oracle
// reads as an explored object's word that it serves, by default.
var defaultHealthConditions = []string{"Available", "Ready"}

// health returns what the health oracle finds wrong in namespace ns now:
// for each explored object that says it serves while a Deployment or
// StatefulSet it controls isn't available, why, by the object, condition
// and child. It returns nothing when the oracle is off, or the cluster
// can't say.
func (e *explorer) health(ctx context.Context, ns string) (map[string]string, error) {
	if e.noHealth || !e.workloads {
		return nil, nil
	}
	parents, err := e.admin.Resource(e.gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	// The conditions each object says it serves by, by its UID.
	claims := map[types.UID][]string{}
	names := map[types.UID]string{}
	for _, p := range parents.Items {
		if held := e.claims(&p); len(held) > 0 {
			claims[p.GetUID()], names[p.GetUID()] = held, p.GetName()
		}
	}
	if len(claims) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kind := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{deploymentsGVR, "Deployment"}, {statefulSetsGVR, "StatefulSet"}} {
		children, err := e.admin.Resource(kind.gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range children.Items {
			child := &children.Items[i]
			ref := metav1.GetControllerOfNoCopy(child)
			if ref == nil || claims[ref.UID] == nil {
				continue
			}
			why := unavailable(child, kind.name)
			if why == "" {
				continue
			}
			for _, c := range claims[ref.UID] {
				key := fmt.Sprintf("%s %s %s %s", names[ref.UID], c, kind.name, child.GetName())
				out[key] = fmt.Sprintf("the %s %s says %s True while the %s %s it controls isn't available: %s",
					e.kind, names[ref.UID], c, kind.name, child.GetName(), why)
			}
		}
	}
	return out, nil
}

// claims returns the types of e's health conditions that u has True.
func (e *explorer) claims(u *unstructured.Unstructured) []string {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []string
	for _, c := range conditions {
		c, _ := c.(map[string]any)
		typ, _ := c["type"].(string)
		if c["status"] == string(metav1.ConditionTrue) && slices.Contains(e.healthTypes, typ) {
			out = append(out, typ)
		}
	}
	return out
}

// unavailable says why u, a Deployment or a StatefulSet as kind says,
// isn't available, with its numbers, or "" when it is.
func unavailable(u *unstructured.Unstructured, kind string) string {
	replicas, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !found {
		replicas = 1 // the API server's default
	}
	ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	available, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	numbers := fmt.Sprintf("%d of %d replicas ready, %d available, generation %d observed of %d", ready, replicas, available, observed, u.GetGeneration())
	if observed < u.GetGeneration() {
		return "its controller is still to observe its latest spec; " + numbers
	}
	if kind != "Deployment" {
		if ready < replicas {
			return numbers
		}
		return ""
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		c, _ := c.(map[string]any)
		if c["type"] != "Available" {
			continue
		}
		if c["status"] == "True" {
			return ""
		}
		return fmt.Sprintf("Available %v (%v: %v); %s", c["status"], c["reason"], c["message"], numbers)
	}
	return "no Available condition; " + numbers
}

// stillUnhealthy returns an error naming each failure of before, what
// health found when the step had settled, that health still finds, or
// nil when none is.
func (e *explorer) stillUnhealthy(ctx context.Context, ns string, before map[string]string) error {
	if len(before) == 0 {
		return nil
	}
	after, err := e.health(ctx, ns)
	if err != nil {
		return err
	}
	var found []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; ok {
			found = append(found, after[k])
		}
	}
	if len(found) == 0 {
		return nil
	}
	return fmt.Errorf("the health oracle: %s", strings.Join(found, "; "))
}

// worldQuiet is how many Quiets the Pods and workloads must have stayed
// as they are before a step settles: the operator's reaction to the
// last change, a watch event, a reconcile and a write, must come within
// it. With one, a loaded machine (a load average of 3 to 9 on two cores,
// eight replays side by side) once let a fresh object be compared before
// its operator had written that its Deployment had become available.
const worldQuiet = 2

// world is what the explorer last saw of the Pods and workloads of a
// replay's namespace, and since when: they change by themselves, as the
// kubelet starts Pods and the workload controllers count them, and the
// operator follows them, so a step hasn't settled until they have.
type world struct {
	seen  string
	since time.Time
}

// worldSettled says why the Pods and workloads of namespace ns haven't
// settled, or "" when they have, on a cluster with the workload
// controllers: a Pod still Pending, which the fake kubelet starts after
// its delay (on a cluster without it, a Pod stays Pending for good, and
// is no wait); a Deployment, ReplicaSet or StatefulSet whose controller is
// still to observe its latest spec; or any of them changed within
// worldQuiet Quiets.
// A Pod's restarts, which a CrashLoop fault counts up for ever, are no
// change: its phase and readiness are.
func (e *explorer) worldSettled(ctx context.Context, ns string, w *world) (string, error) {
	if !e.workloads {
		return "", nil
	}
	var b strings.Builder
	why := ""
	for _, gvr := range []schema.GroupVersionResource{deploymentsGVR, replicaSetsGVR, statefulSetsGVR} {
		list, err := e.admin.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", err
		}
		for _, u := range list.Items {
			fmt.Fprintf(&b, "%s %s %s\n", gvr.Resource, u.GetName(), u.GetResourceVersion())
			observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
			if why == "" && observed < u.GetGeneration() {
				why = fmt.Sprintf("%s %s: its controller is still to observe generation %d", gvr.Resource, u.GetName(), u.GetGeneration())
			}
		}
	}
	pods, err := e.admin.Resource(podsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		phase, _, _ := unstructured.NestedString(p.Object, "status", "phase")
		ready := ""
		conditions, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
		for _, c := range conditions {
			if c, _ := c.(map[string]any); c["type"] == "Ready" {
				ready, _ = c["status"].(string)
			}
		}
		fmt.Fprintf(&b, "Pod %s %s %s %s %t\n", p.GetName(), p.GetUID(), phase, ready, p.GetDeletionTimestamp() != nil)
		if why == "" && e.kubelet && (phase == "" || phase == "Pending") {
			why = fmt.Sprintf("the Pod %s is Pending: the kubelet is still to start it", p.GetName())
		}
	}
	now := time.Now()
	if seen := b.String(); seen != w.seen || w.since.IsZero() {
		w.seen, w.since = seen, now
	}
	if why == "" && now.Sub(w.since) < worldQuiet*e.quiet {
		why = fmt.Sprintf("the Pods and workloads changed %v ago", now.Sub(w.since).Round(time.Millisecond))
	}
	return why, nil
}
