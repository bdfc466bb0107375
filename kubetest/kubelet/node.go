package kubelet

import (
	"fmt"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FakeNodeLabel is the label of the Node a fake kubelet registers, "true",
// so a test or a person can tell it from a real one.
const FakeNodeLabel = "kubetest.loam.dev/fake-kubelet"

// hostIP is the address of every fake kubelet's Node, as kind gives its
// first node.
const hostIP = "172.18.0.2"

// capacity is what the Node offers: more than a test asks for. Nothing
// checks it, as no scheduler runs.
var capacity = corev1.ResourceList{
	corev1.ResourceCPU:              resource.MustParse("64"),
	corev1.ResourceMemory:           resource.MustParse("256Gi"),
	corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	corev1.ResourcePods:             resource.MustParse("1000"),
}

// node returns the Node name that a kubelet of version registers at now:
// Ready, with no pressure, its capacity all allocatable.
func node(name, version string, now time.Time) *corev1.Node {
	at := *stamp(now)
	condition := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{
			Type: typ, Status: status, Reason: reason, Message: message,
			LastHeartbeatTime: at, LastTransitionTime: at,
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   runtime.GOOS,
				corev1.LabelArchStable: runtime.GOARCH,
				FakeNodeLabel:          "true",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity.DeepCopy(),
			Allocatable: capacity.DeepCopy(),
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				condition(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				condition(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				condition(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				condition(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubetest's fake kubelet is posting ready status"),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: hostIP},
				{Type: corev1.NodeHostName, Address: name},
			},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          version,
				OperatingSystem:         runtime.GOOS,
				Architecture:            runtime.GOARCH,
				ContainerRuntimeVersion: "fake://kubetest",
			},
		},
	}
}

// podIP returns the n-th Pod address the kubelet hands out, from
// 10.244.0.1 on, as kind's first node's Pod range.
func podIP(n int) string {
	return fmt.Sprintf("10.244.%d.%d", n/250%256, n%250+1)
}
