package kubelet

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// timing is how long the stages of a Pod take.
type timing struct {
	readyAfter  time.Duration // from the Pod's start to its containers running
	crashPeriod time.Duration // between two crashes of a CrashLoop Pod's containers
}

// started is what the kubelet remembers of a Pod it runs: when it started
// it, the addresses it gave it, and when its fault became CrashLoop.
type started struct {
	at     time.Time
	podIP  string
	hostIP string
	// crashFrom is when the kubelet first saw the Pod under CrashLoop, zero
	// while it is under another fault: a Pod that ran for an hour before
	// starts crashing then, and its restart count grows from then on.
	crashFrom time.Time
	// restartsBefore are its containers' restart counts at crashFrom, by
	// name, which its crashes since add to: a crash loop that healed and
	// came back counts on from where the last one left off.
	restartsBefore map[string]int32
}

// Reasons the fake kubelet writes, as the real one does, and one of its
// own.
const (
	reasonContainerCreating  = "ContainerCreating"
	reasonPodInitializing    = "PodInitializing"
	reasonCrashLoopBackOff   = "CrashLoopBackOff"
	reasonContainersNotReady = "ContainersNotReady"
	reasonNotInitialized     = "ContainersNotInitialized"
	reasonError              = "Error"
	reasonCompleted          = "Completed"
	// reasonInvalidFault is the waiting reason of the containers of a Pod
	// whose FaultAnnotation is no Fault: the Pod never starts.
	reasonInvalidFault = "InvalidFault"
)

// statusAt returns the status pod has at now, when the kubelet started it
// as s says, under the fault f (or, when bad is not nil, with an
// annotation that is no Fault), while readyPeers other Pods of its
// controller are ready; and how long until it changes by itself (0: it
// doesn't, until something else does).
//
// It starts from pod's current status, so it keeps what others wrote
// (PodScheduled, QOSClass), a restart count that only grows, and the
// times of conditions and states that don't change. Every time it writes
// is in whole seconds, as the API stores times, so a status already
// written compares equal to the one computed again and is not written
// twice.
func statusAt(pod *corev1.Pod, f Fault, bad error, s started, readyPeers int, now time.Time, t timing) (corev1.PodStatus, time.Duration) {
	st := *pod.Status.DeepCopy()
	st.ObservedGeneration = pod.Generation
	st.HostIP, st.HostIPs = s.hostIP, []corev1.HostIP{{IP: s.hostIP}}
	st.StartTime = stamp(s.at)
	setCondition(&st, pod.Generation, corev1.PodScheduled, true, "", "", now)

	if bad != nil {
		if st.Phase != corev1.PodRunning {
			st.Phase = corev1.PodPending // a Running Pod never goes back
		}
		waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonInvalidFault, Message: bad.Error()}}
		st.InitContainerStatuses = containerStatuses(pod, pod.Spec.InitContainers, st.InitContainerStatuses, func(_ corev1.Container, cs *corev1.ContainerStatus) {
			cs.State, cs.Ready, cs.Started = waiting, false, new(false)
		})
		st.ContainerStatuses = containerStatuses(pod, pod.Spec.Containers, st.ContainerStatuses, func(_ corev1.Container, cs *corev1.ContainerStatus) {
			cs.State, cs.Ready, cs.Started = waiting, false, new(false)
		})
		setReadiness(&st, pod, false, false, false, now)
		return st, 0
	}

	running := s.at.Add(t.readyAfter)
	if now.Before(running) {
		// The sandbox is being made and the images pulled.
		st.Phase = corev1.PodPending
		st.InitContainerStatuses = containerStatuses(pod, pod.Spec.InitContainers, st.InitContainerStatuses, func(_ corev1.Container, cs *corev1.ContainerStatus) {
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonPodInitializing}}
			cs.Ready, cs.Started = false, new(false)
		})
		st.ContainerStatuses = containerStatuses(pod, pod.Spec.Containers, st.ContainerStatuses, func(_ corev1.Container, cs *corev1.ContainerStatus) {
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonContainerCreating}}
			cs.Ready, cs.Started = false, new(false)
		})
		setReadiness(&st, pod, false, len(pod.Spec.InitContainers) == 0, false, now)
		return st, running.Sub(now)
	}

	st.Phase = corev1.PodRunning
	if st.PodIP == "" {
		st.PodIP, st.PodIPs = s.podIP, []corev1.PodIP{{IP: s.podIP}}
	}
	ready := f.kind == healthy || f.kind == partlyReady && readyPeers < f.readyAtMost
	crashing := f.kind == crashLoop
	if crashing && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		return failed(pod, st, running, now), 0
	}
	var next time.Duration
	var restarts int32
	var lastCrash time.Time
	if crashing {
		firstCrash := running
		if s.crashFrom.After(firstCrash) {
			firstCrash = s.crashFrom
		}
		crashes := now.Sub(firstCrash) / t.crashPeriod
		restarts = int32(crashes) //nolint:gosec // a test's Pod doesn't crash-loop for 2^31 periods
		lastCrash = firstCrash.Add(crashes * t.crashPeriod)
		next = lastCrash.Add(t.crashPeriod).Sub(now)
	}
	st.InitContainerStatuses = containerStatuses(pod, pod.Spec.InitContainers, st.InitContainerStatuses, func(c corev1.Container, cs *corev1.ContainerStatus) {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			runContainer(cs, ready, running, now) // a sidecar
			return
		}
		if cs.State.Terminated == nil {
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: reasonCompleted, StartedAt: *stamp(running), FinishedAt: *stamp(running),
			}}
		}
		cs.Ready, cs.Started = true, new(false)
	})
	st.ContainerStatuses = containerStatuses(pod, pod.Spec.Containers, st.ContainerStatuses, func(c corev1.Container, cs *corev1.ContainerStatus) {
		if !crashing {
			runContainer(cs, ready, running, now)
			return
		}
		cs.RestartCount = max(cs.RestartCount, s.restartsBefore[c.Name]+restarts)
		cs.Ready, cs.Started = false, new(false)
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: reasonCrashLoopBackOff,
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
				t.crashPeriod, c.Name, pod.Name, pod.Namespace, pod.UID),
		}}
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: reasonError, StartedAt: *stamp(lastCrash), FinishedAt: *stamp(lastCrash),
		}}
	})
	setReadiness(&st, pod, true, true, ready && !crashing, now)
	return st, next
}

// restartCounts returns the restart count of each of statuses, by the
// container's name.
func restartCounts(statuses []corev1.ContainerStatus) map[string]int32 {
	out := make(map[string]int32, len(statuses))
	for _, cs := range statuses {
		out[cs.Name] = cs.RestartCount
	}
	return out
}

// failed returns st of a crashing pod whose restart policy is Never: the
// kubelet restarts nothing, so the first crash, at running, ends it. Its
// containers stay terminated with exit code 1, and the Pod's phase is
// Failed for good.
func failed(pod *corev1.Pod, st corev1.PodStatus, running, now time.Time) corev1.PodStatus {
	st.Phase = corev1.PodFailed
	crashed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 1, Reason: reasonError, StartedAt: *stamp(running), FinishedAt: *stamp(running),
	}}
	st.InitContainerStatuses = containerStatuses(pod, pod.Spec.InitContainers, st.InitContainerStatuses, func(c corev1.Container, cs *corev1.ContainerStatus) {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			cs.State = crashed // a sidecar, stopped with the Pod
		} else if cs.State.Terminated == nil {
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: reasonCompleted, StartedAt: *stamp(running), FinishedAt: *stamp(running),
			}}
		}
		cs.Ready, cs.Started = false, new(false)
	})
	st.ContainerStatuses = containerStatuses(pod, pod.Spec.Containers, st.ContainerStatuses, func(_ corev1.Container, cs *corev1.ContainerStatus) {
		cs.State, cs.Ready, cs.Started = crashed, false, new(false)
	})
	setReadiness(&st, pod, false, true, false, now)
	return st
}

// runContainer sets cs to a running container, ready or not, that has
// run since it last started (running, or now when it was crashing or held
// by a bad fault).
func runContainer(cs *corev1.ContainerStatus, ready bool, running, now time.Time) {
	since := *stamp(now)
	if r := cs.State.Running; r != nil {
		since = r.StartedAt
	} else if w := cs.State.Waiting; w == nil || w.Reason != reasonCrashLoopBackOff && w.Reason != reasonInvalidFault {
		since = *stamp(running) // its first start, maybe seen late
	}
	cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: since}}
	cs.Ready, cs.Started = ready, new(true)
}

// containerStatuses returns the status of each of containers, in their
// order: the one of current with its name, or a new one, each changed by
// set. A container that has started has an image ID and a container ID,
// both made up.
func containerStatuses(pod *corev1.Pod, containers []corev1.Container, current []corev1.ContainerStatus, set func(corev1.Container, *corev1.ContainerStatus)) []corev1.ContainerStatus {
	if len(containers) == 0 {
		return current
	}
	out := make([]corev1.ContainerStatus, 0, len(containers))
	for _, c := range containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
		if i := slices.IndexFunc(current, func(cs corev1.ContainerStatus) bool { return cs.Name == c.Name }); i >= 0 {
			cs = current[i]
		}
		cs.Image = c.Image
		set(c, &cs)
		cs.ImageID, cs.ContainerID = "", ""
		if cs.State.Waiting == nil || cs.State.Waiting.Reason == reasonCrashLoopBackOff {
			// Made up, as no container runs: the image was pulled and a
			// container made.
			cs.ImageID = "fake://" + c.Image
			cs.ContainerID = "fake://" + string(pod.UID) + "/" + c.Name
		}
		out = append(out, cs)
	}
	return out
}

// setReadiness sets the Pod's conditions as the kubelet does:
// PodReadyToStartContainers once its sandbox exists, Initialized once its
// init containers have run, and ContainersReady and Ready when every
// container is ready.
func setReadiness(st *corev1.PodStatus, pod *corev1.Pod, sandbox, initialized, ready bool, now time.Time) {
	gen := pod.Generation
	setCondition(st, gen, corev1.PodReadyToStartContainers, sandbox, "", "", now)
	if initialized {
		setCondition(st, gen, corev1.PodInitialized, true, "", "", now)
	} else {
		setCondition(st, gen, corev1.PodInitialized, false, reasonNotInitialized,
			"containers with incomplete status: "+names(pod.Spec.InitContainers), now)
	}
	if ready {
		setCondition(st, gen, corev1.ContainersReady, true, "", "", now)
		setCondition(st, gen, corev1.PodReady, true, "", "", now)
		return
	}
	message := "containers with unready status: " + names(pod.Spec.Containers)
	setCondition(st, gen, corev1.ContainersReady, false, reasonContainersNotReady, message, now)
	setCondition(st, gen, corev1.PodReady, false, reasonContainersNotReady, message, now)
}

// setCondition sets the condition typ of st, keeping its place and, when
// its status doesn't change, its last transition time.
func setCondition(st *corev1.PodStatus, gen int64, typ corev1.PodConditionType, ok bool, reason, message string, now time.Time) {
	status := corev1.ConditionFalse
	if ok {
		status = corev1.ConditionTrue
	}
	c := corev1.PodCondition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: gen, LastTransitionTime: *stamp(now)}
	i := slices.IndexFunc(st.Conditions, func(c corev1.PodCondition) bool { return c.Type == typ })
	if i < 0 {
		st.Conditions = append(st.Conditions, c)
		return
	}
	old := st.Conditions[i]
	if old.Status == c.Status {
		if typ == corev1.PodScheduled {
			return // the binding's, as it wrote it
		}
		c.LastTransitionTime = old.LastTransitionTime
	}
	c.LastProbeTime = old.LastProbeTime
	st.Conditions[i] = c
}

// names lists the names of containers as the kubelet's messages do: [a b].
func names(containers []corev1.Container) string {
	ns := make([]string, 0, len(containers))
	for _, c := range containers {
		ns = append(ns, c.Name)
	}
	return "[" + strings.Join(ns, " ") + "]"
}

// stamp returns t in whole seconds, as the API server keeps a time.
func stamp(t time.Time) *metav1.Time {
	m := metav1.NewTime(t.Truncate(time.Second))
	return &m
}
