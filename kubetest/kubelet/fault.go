package kubelet

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// FaultAnnotation is the annotation that chooses how a Pod fails, on the
// Pod itself (its template's, for a Pod a controller makes) or on its
// namespace, for every Pod in it that has none of its own. Its value is a
// Fault: "NeverReady", "CrashLoop" or "PartlyReady=n"; "" or no annotation
// is a healthy Pod. A namespace's annotation may change at any time: the
// kubelet looks at its Pods again, so a test can let Pods come alive, or
// fail, while an operator watches.
const FaultAnnotation = "kubetest.loam.dev/fault"

// Fault is how the fake kubelet lets a Pod fail. The zero Fault is none:
// the Pod runs and becomes ready.
type Fault struct {
	kind        faultKind
	readyAtMost int // PartlyReady's n
}

type faultKind int

const (
	healthy faultKind = iota
	neverReady
	crashLoop
	partlyReady
)

// Healthy is no fault: the Pod runs and becomes ready.
var Healthy = Fault{}

// NeverReady is a Pod whose containers run but never pass their readiness:
// phase Running, each container running and started but not ready, and
// the Pod's Ready and ContainersReady conditions False.
var NeverReady = Fault{kind: neverReady}

// CrashLoop is a Pod whose containers exit with code 1 as soon as they
// start, over and over: phase Running, each container waiting with the
// reason CrashLoopBackOff, its last state terminated with the reason Error,
// its restart count growing by one every CrashLoopPeriod, and the Pod's
// Ready and ContainersReady conditions False. A Pod whose restart policy
// is Never is not restarted: its first crash ends it, phase Failed, each
// container terminated with exit code 1.
var CrashLoop = Fault{kind: crashLoop}

// PartlyReady returns the fault under which at most n of the Pods with the
// same controller (a Deployment's, across its ReplicaSets, so a rollout
// doesn't double them; a ReplicaSet's; a StatefulSet's) are ready at a time;
// the others run but never become ready, as under NeverReady. A Pod
// without a controller is a group of its own. Which Pods are the ready ones
// is first come, first served: a ready Pod stays ready, and when one goes
// another may take its place. n must not be negative.
func PartlyReady(n int) Fault { return Fault{kind: partlyReady, readyAtMost: n} }

// String returns the Fault as FaultAnnotation's value: "" for Healthy,
// "NeverReady", "CrashLoop" or "PartlyReady=n".
func (f Fault) String() string {
	switch f.kind {
	case neverReady:
		return "NeverReady"
	case crashLoop:
		return "CrashLoop"
	case partlyReady:
		return "PartlyReady=" + strconv.Itoa(f.readyAtMost)
	default:
		return ""
	}
}

// ParseFault reads a Fault from FaultAnnotation's value. It returns an
// error that quotes the value and says what a Fault may be when it is none.
func ParseFault(s string) (Fault, error) {
	switch s {
	case "":
		return Healthy, nil
	case "NeverReady":
		return NeverReady, nil
	case "CrashLoop":
		return CrashLoop, nil
	}
	if v, ok := strings.CutPrefix(s, "PartlyReady="); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return Fault{}, fmt.Errorf("fault %q: PartlyReady's n must be a whole number, 0 or more", s)
		}
		return PartlyReady(n), nil
	}
	return Fault{}, fmt.Errorf(`fault %q: want "", "NeverReady", "CrashLoop" or "PartlyReady=n"`, s)
}

// errNoFault is what faultOf returns for a Pod whose fault could not be
// read; the Pod's status then says why, and it never starts.
var errNoFault = errors.New("kubetest's fake kubelet can't start the Pod")

// faultOf returns the Fault that pod's FaultAnnotation chooses or, when it
// has none, its namespace's (nsAnnotations). An annotation that is no
// Fault is an error that names where it is.
func faultOf(pod *corev1.Pod, nsAnnotations map[string]string) (Fault, error) {
	if v, ok := pod.Annotations[FaultAnnotation]; ok {
		f, err := ParseFault(v)
		if err != nil {
			return Fault{}, fmt.Errorf("%w: the Pod's annotation %s: %w", errNoFault, FaultAnnotation, err)
		}
		return f, nil
	}
	f, err := ParseFault(nsAnnotations[FaultAnnotation])
	if err != nil {
		return Fault{}, fmt.Errorf("%w: the namespace %s's annotation %s: %w", errNoFault, pod.Namespace, FaultAnnotation, err)
	}
	return f, nil
}
