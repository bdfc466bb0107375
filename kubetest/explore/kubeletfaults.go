package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/kubelet"
)

// Kubelet faults (issue #47) are the world's, not the operator's: with
// Faults.Kubelet, a step may, right before its change, set the replay
// namespace's kubelet.FaultAnnotation, so that the fake kubelet keeps the
// Pods of every Deployment and StatefulSet there from becoming ready
// (NeverReady), crash-loops them (CrashLoop), lets only n of each
// controller's be ready (PartlyReady=n), or lets them all be ready again
// (Healthy). The Pods follow the annotation while the operator handles
// the step's change, and stay so until a later step changes it.
//
// Since they are the world's state, both differential oracles compare
// under the same one: a fresh object is created in the replay's
// namespace, under its annotation as it is then, and the replay of a
// sequence without its faults keeps its kubelet faults, step for step,
// dropping only the operator's (crashes, stale views, restarts, failed
// requests). A correct operator whose Deployment can't become available
// says so in both runs alike; one that says Available all the same does
// too, which is why the health oracle (health.go) is needed to find it.
// A sequence whose only faults are the kubelet's has no unfaulted replay:
// it would be the same replay again.

// namespacesGVR is the resource whose objects carry the kubelet faults.
var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// kubeletHealthy is how a step's Kubelet names kubelet.Healthy, whose own
// name is "", which a Step's Kubelet uses for no change.
const kubeletHealthy = "Healthy"

// kubeletOdds is the odds of a step changing the kubelet's fault, 1 in
// kubeletOdds, and kubeletStream the stream it is drawn from, so that
// adding it left every seed's other faults as they were.
const (
	kubeletOdds   = 3
	kubeletStream = 0x4b75626c6574
)

// kubeletFaults are the faults a step may set, each as a Step's Kubelet
// names it. PartlyReady's n is 1 or 2: an operator's Deployment of one
// replica is whole under either, one of three is not.
var kubeletFaults = []string{
	kubeletHealthy,
	kubelet.NeverReady.String(),
	kubelet.CrashLoop.String(),
	kubelet.PartlyReady(1).String(),
	kubelet.PartlyReady(2).String(),
}

// drawKubelet draws, with probability 1/kubeletOdds, the kubelet fault a
// step sets, and "", no change, otherwise. It draws the fault whether or
// not it sets one, so that the draws of the next steps stay the same.
func drawKubelet(rng *rand.Rand) string {
	change := rng.IntN(kubeletOdds) == 0
	fault := kubeletFaults[rng.IntN(len(kubeletFaults))]
	if !change {
		return ""
	}
	return fault
}

// annotationValue returns the value of kubelet.FaultAnnotation that a
// step's Kubelet, not "", names, or an error when it names no fault.
func annotationValue(k string) (string, error) {
	if k == kubeletHealthy {
		return "", nil
	}
	f, err := kubelet.ParseFault(k)
	if err != nil || f == kubelet.Healthy {
		return "", fmt.Errorf("kubelet %q: want %s, %s, %s or PartlyReady=n", k, kubeletHealthy, kubelet.NeverReady, kubelet.CrashLoop)
	}
	return f.String(), nil
}

// setKubelet sets the kubelet fault k, when it isn't "", on the
// namespace ns, for the fake kubelet to apply to its Pods: k's value of
// kubelet.FaultAnnotation, or none for Healthy.
func (e *explorer) setKubelet(ctx context.Context, ns, k string) error {
	if k == "" {
		return nil
	}
	v, err := annotationValue(k)
	if err != nil {
		return err
	}
	value := any(nil)
	if v != "" {
		value = v
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{kubelet.FaultAnnotation: value}}})
	if err != nil {
		return err
	}
	if _, err := e.admin.Resource(namespacesGVR).Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("setting the kubelet's fault %s on the namespace %s: %w", k, ns, err)
	}
	return nil
}

// kubeletNeeds says which options of kubetest.Start a cluster lacks for
// kubelet faults to do anything, or "" when it has them: the fake
// kubelet, which reads the annotation, and the workload controllers,
// without which no Deployment has Pods.
func kubeletNeeds(c *kubetest.Cluster) string {
	var missing []string
	if !c.RunsFakeKubelet() {
		missing = append(missing, "kubetest.WithFakeKubelet(kubelet.Config{})")
	}
	if !c.RunsWorkloadControllers() {
		missing = append(missing, "kubetest.WithWorkloadControllers()")
	}
	return strings.Join(missing, " and ")
}

// kubeletMistakes returns an error when faults ask for the kubelet's on a
// cluster that can't have them, naming the options to start it with.
func kubeletMistakes(c *kubetest.Cluster, faults Faults) error {
	if !faults.Kubelet {
		return nil
	}
	if needs := kubeletNeeds(c); needs != "" {
		return fmt.Errorf("explore.Config.Faults.Kubelet: the cluster runs no fake kubelet to fail Pods with: start it with %s", needs)
	}
	return nil
}

// keptKubeletMistake returns an error when a kept sequence's steps set
// kubelet faults and the cluster can't have them, which needs says
// (kubeletNeeds): a kept sequence replays its faults whatever the Config,
// and these would do nothing.
func keptKubeletMistake(path string, steps []Step, needs string) error {
	if needs == "" {
		return nil
	}
	for i, s := range steps {
		if s.Kubelet != "" {
			return fmt.Errorf("kept sequence %s: step %d sets the kubelet's fault %s, which needs a cluster started with %s", path, i+1, s.Kubelet, needs)
		}
	}
	return nil
}
