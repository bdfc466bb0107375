package kubelet

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// start is when the tests' Pods start: on a whole second and a half, so
// that a time truncated to seconds differs from the exact one.
var start = time.Date(2026, 12, 7, 17, 0, 0, 500_000_000, time.UTC)

var testTiming = timing{readyAfter: 2 * time.Second, crashPeriod: 10 * time.Second}

var testStarted = started{at: start, podIP: "10.244.0.7", hostIP: hostIP}

// boundPod is a Pod of one container bound to the Node, as the binding
// leaves it: Pending, with PodScheduled True.
func boundPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", UID: "uid-1", Generation: 1},
		Spec: corev1.PodSpec{
			NodeName:   DefaultNodeName,
			Containers: []corev1.Container{{Name: "web", Image: "nginx:1.29"}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodPending,
			QOSClass:   corev1.PodQOSBestEffort,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(start.Add(-time.Second).Truncate(time.Second))}},
		},
	}
}

func condition(t *testing.T, st corev1.PodStatus, typ corev1.PodConditionType) corev1.PodCondition {
	t.Helper()
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("no condition %s in %v", typ, st.Conditions)
	return corev1.PodCondition{}
}

func TestStatusAt_the_stages_of_a_Pod_under_each_fault(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fault      Fault
		bad        error
		peers      int
		at         time.Duration // after the start
		phase      corev1.PodPhase
		ready      bool
		state      string // the container's: running, or the waiting reason
		restarts   int32
		containerR bool // the container's ready
		next       time.Duration
	}{
		{name: "creating", at: 0, phase: corev1.PodPending, state: reasonContainerCreating, next: 2 * time.Second},
		{name: "still creating", at: 1500 * time.Millisecond, phase: corev1.PodPending, state: reasonContainerCreating, next: 500 * time.Millisecond},
		{name: "running and ready", at: 2 * time.Second, phase: corev1.PodRunning, ready: true, state: "running", containerR: true},
		{name: "never ready: creating", fault: NeverReady, at: time.Second, phase: corev1.PodPending, state: reasonContainerCreating, next: time.Second},
		{name: "never ready: running", fault: NeverReady, at: time.Hour, phase: corev1.PodRunning, state: "running"},
		{name: "crash loop: first crash", fault: CrashLoop, at: 2 * time.Second, phase: corev1.PodRunning, state: reasonCrashLoopBackOff, next: 10 * time.Second},
		{name: "crash loop: two restarts", fault: CrashLoop, at: 27 * time.Second, phase: corev1.PodRunning, state: reasonCrashLoopBackOff, restarts: 2, next: 5 * time.Second},
		{name: "partly ready: a place left", fault: PartlyReady(2), peers: 1, at: 3 * time.Second, phase: corev1.PodRunning, ready: true, state: "running", containerR: true},
		{name: "partly ready: no place left", fault: PartlyReady(2), peers: 2, at: 3 * time.Second, phase: corev1.PodRunning, state: "running"},
		{name: "partly ready: none", fault: PartlyReady(0), at: 3 * time.Second, phase: corev1.PodRunning, state: "running"},
		{name: "a bad fault", bad: errors.New("bad annotation"), at: time.Hour, phase: corev1.PodPending, state: reasonInvalidFault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := boundPod()
			st, next := statusAt(pod, tc.fault, tc.bad, testStarted, tc.peers, start.Add(tc.at), testTiming)
			require.Equal(t, tc.phase, st.Phase)
			require.Equal(t, tc.next, next, "when it changes by itself")
			wantReady := corev1.ConditionFalse
			if tc.ready {
				wantReady = corev1.ConditionTrue
			}
			require.Equal(t, wantReady, condition(t, st, corev1.PodReady).Status)
			require.Equal(t, wantReady, condition(t, st, corev1.ContainersReady).Status)
			if !tc.ready {
				require.Equal(t, reasonContainersNotReady, condition(t, st, corev1.PodReady).Reason)
				require.Equal(t, "containers with unready status: [web]", condition(t, st, corev1.PodReady).Message)
			}
			require.Equal(t, pod.Status.Conditions[0], condition(t, st, corev1.PodScheduled), "the binding's condition is kept")
			require.Equal(t, corev1.PodQOSBestEffort, st.QOSClass)
			require.Equal(t, int64(1), st.ObservedGeneration)
			require.Equal(t, hostIP, st.HostIP)
			require.Equal(t, metav1.NewTime(start.Truncate(time.Second)), *st.StartTime, "whole seconds")

			require.Len(t, st.ContainerStatuses, 1)
			cs := st.ContainerStatuses[0]
			require.Equal(t, "web", cs.Name)
			require.Equal(t, "nginx:1.29", cs.Image)
			require.Equal(t, tc.containerR, cs.Ready)
			require.Equal(t, tc.restarts, cs.RestartCount)
			switch tc.state {
			case "running":
				require.NotNil(t, cs.State.Running, "%+v", cs.State)
				require.True(t, *cs.Started)
				require.Equal(t, metav1.NewTime(start.Add(2*time.Second).Truncate(time.Second)), cs.State.Running.StartedAt)
				require.Equal(t, "fake://uid-1/web", cs.ContainerID)
				require.Equal(t, "10.244.0.7", st.PodIP)
				require.Equal(t, []corev1.PodIP{{IP: "10.244.0.7"}}, st.PodIPs)
			default:
				require.NotNil(t, cs.State.Waiting, "%+v", cs.State)
				require.Equal(t, tc.state, cs.State.Waiting.Reason)
				require.False(t, *cs.Started)
			}
			if tc.state == reasonCrashLoopBackOff {
				last := cs.LastTerminationState.Terminated
				require.NotNil(t, last)
				require.Equal(t, int32(1), last.ExitCode)
				require.Equal(t, reasonError, last.Reason)
				require.Contains(t, cs.State.Waiting.Message, "back-off 10s restarting failed container=web pod=web-1_shop(uid-1)")
			}
			if tc.bad != nil {
				require.Equal(t, "bad annotation", cs.State.Waiting.Message)
				require.Empty(t, cs.ContainerID, "nothing started")
			}
		})
	}
}

// roundTrip is pod as the API server hands it back: through JSON, its
// times in whole seconds and local.
func roundTrip(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	b, err := json.Marshal(pod)
	require.NoError(t, err)
	var out corev1.Pod
	require.NoError(t, json.Unmarshal(b, &out))
	return &out
}

// A status written and read back is the status computed again, at every
// stage and under every fault, a second later as well: the kubelet writes
// a Pod only when something changed, and doesn't chase its own writes.
func TestStatusAt_is_settled_once_written(t *testing.T) {
	for _, f := range []Fault{Healthy, NeverReady, CrashLoop, PartlyReady(1)} {
		for _, at := range []time.Duration{0, 1900 * time.Millisecond, 2 * time.Second, 2*time.Second + 900*time.Millisecond, time.Minute} {
			pod := boundPod()
			st, _ := statusAt(pod, f, nil, testStarted, 0, start.Add(at), testTiming)
			pod.Status = st
			pod = roundTrip(t, pod)
			again, _ := statusAt(pod, f, nil, testStarted, 0, start.Add(at), testTiming)
			require.True(t, apiequality.Semantic.DeepEqual(pod.Status, again), "%v at %v: written %+v, then %+v", f, at, pod.Status, again)
			if f == CrashLoop || at >= time.Minute || at < 2*time.Second {
				continue
			}
			later, _ := statusAt(pod, f, nil, testStarted, 0, start.Add(at+time.Second), testTiming)
			require.True(t, apiequality.Semantic.DeepEqual(pod.Status, later), "%v at %v and a second later", f, at)
		}
	}
}

// A condition keeps the time it last changed; a fault's change moves it.
func TestStatusAt_keeps_transition_times_until_a_change(t *testing.T) {
	pod := boundPod()
	st, _ := statusAt(pod, Healthy, nil, testStarted, 0, start.Add(3*time.Second), testTiming)
	readySince := condition(t, st, corev1.PodReady).LastTransitionTime
	require.Equal(t, metav1.NewTime(start.Add(3*time.Second).Truncate(time.Second)), readySince)
	pod.Status = st

	st, _ = statusAt(pod, Healthy, nil, testStarted, 0, start.Add(time.Hour), testTiming)
	require.Equal(t, readySince, condition(t, st, corev1.PodReady).LastTransitionTime)

	st, _ = statusAt(pod, NeverReady, nil, testStarted, 0, start.Add(time.Hour), testTiming)
	require.Equal(t, corev1.ConditionFalse, condition(t, st, corev1.PodReady).Status)
	require.Equal(t, metav1.NewTime(start.Add(time.Hour).Truncate(time.Second)), condition(t, st, corev1.PodReady).LastTransitionTime)
	require.Equal(t, metav1.NewTime(start.Add(2*time.Second).Truncate(time.Second)), st.ContainerStatuses[0].State.Running.StartedAt,
		"the container still runs since it started")
}

// A restart count only grows: a crash loop that heals keeps it, and one
// that resumes doesn't count from 0 again but on from it.
func TestStatusAt_restart_count_only_grows(t *testing.T) {
	pod := boundPod()
	st, _ := statusAt(pod, CrashLoop, nil, testStarted, 0, start.Add(52*time.Second), testTiming)
	require.Equal(t, int32(5), st.ContainerStatuses[0].RestartCount)
	pod.Status = st

	healed, _ := statusAt(pod, Healthy, nil, testStarted, 0, start.Add(53*time.Second), testTiming)
	require.Equal(t, int32(5), healed.ContainerStatuses[0].RestartCount)
	require.True(t, healed.ContainerStatuses[0].Ready)
	require.Equal(t, metav1.NewTime(start.Add(53*time.Second).Truncate(time.Second)), healed.ContainerStatuses[0].State.Running.StartedAt,
		"a healed container started when it healed")

	restarted := started{at: start.Add(time.Minute), podIP: testStarted.podIP, hostIP: hostIP}
	pod.Status = healed
	again, _ := statusAt(pod, CrashLoop, nil, restarted, 0, start.Add(time.Minute+2*time.Second), testTiming)
	require.Equal(t, int32(5), again.ContainerStatuses[0].RestartCount)

	// A loop that comes back, as the kubelet saw it come with the five
	// restarts the first left, counts on from them.
	resumed := testStarted
	resumed.crashFrom, resumed.restartsBefore = start.Add(2*time.Minute), restartCounts(healed.ContainerStatuses)
	later, _ := statusAt(pod, CrashLoop, nil, resumed, 0, start.Add(2*time.Minute+25*time.Second), testTiming)
	require.Equal(t, int32(7), later.ContainerStatuses[0].RestartCount, "two periods on, two more")
}

// Init containers complete before the containers run; a sidecar, an init
// container that restarts always, runs beside them.
func TestStatusAt_init_containers_and_sidecars(t *testing.T) {
	pod := boundPod()
	always := corev1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []corev1.Container{{Name: "migrate", Image: "tool"}, {Name: "proxy", Image: "envoy", RestartPolicy: &always}}

	st, _ := statusAt(pod, Healthy, nil, testStarted, 0, start, testTiming)
	require.Equal(t, corev1.ConditionFalse, condition(t, st, corev1.PodInitialized).Status)
	require.Equal(t, "containers with incomplete status: [migrate proxy]", condition(t, st, corev1.PodInitialized).Message)
	require.Equal(t, reasonPodInitializing, st.InitContainerStatuses[0].State.Waiting.Reason)

	st, _ = statusAt(pod, Healthy, nil, testStarted, 0, start.Add(3*time.Second), testTiming)
	require.Equal(t, corev1.ConditionTrue, condition(t, st, corev1.PodInitialized).Status)
	require.Equal(t, reasonCompleted, st.InitContainerStatuses[0].State.Terminated.Reason)
	require.NotNil(t, st.InitContainerStatuses[1].State.Running, "the sidecar runs")
	require.True(t, st.InitContainerStatuses[1].Ready)
}

func TestFaults_parse_and_print(t *testing.T) {
	for _, f := range []Fault{Healthy, NeverReady, CrashLoop, PartlyReady(0), PartlyReady(3)} {
		got, err := ParseFault(f.String())
		require.NoError(t, err)
		require.Equal(t, f, got)
	}
	for _, bad := range []string{"never-ready", "PartlyReady=", "PartlyReady=-1", "PartlyReady=x", " CrashLoop"} {
		_, err := ParseFault(bad)
		require.ErrorContains(t, err, `fault "`+bad+`"`)
	}
}

// A Pod's own annotation chooses its fault before its namespace's.
func TestFaultOf_the_Pod_then_its_namespace(t *testing.T) {
	pod := boundPod()
	ns := map[string]string{FaultAnnotation: "CrashLoop"}
	f, err := faultOf(pod, ns)
	require.NoError(t, err)
	require.Equal(t, CrashLoop, f)

	pod.Annotations = map[string]string{FaultAnnotation: ""}
	f, err = faultOf(pod, ns)
	require.NoError(t, err)
	require.Equal(t, Healthy, f, "the Pod's own says healthy")

	f, err = faultOf(boundPod(), nil)
	require.NoError(t, err)
	require.Equal(t, Healthy, f)

	_, err = faultOf(boundPod(), map[string]string{FaultAnnotation: "Flaky"})
	require.ErrorContains(t, err, "the namespace shop's annotation kubetest.loam.dev/fault")
	pod.Annotations[FaultAnnotation] = "Flaky"
	_, err = faultOf(pod, nil)
	require.ErrorContains(t, err, "the Pod's annotation kubetest.loam.dev/fault")
}

func TestOwnerOf_groups_a_controller_s_Pods(t *testing.T) {
	pod := boundPod()
	require.Equal(t, types.UID("uid-1"), ownerOf(pod), "a Pod without a controller is its own group")
	pod.OwnerReferences = []metav1.OwnerReference{{UID: "rs-1", Controller: new(true)}}
	require.Equal(t, types.UID("rs-1"), ownerOf(pod))
}

// A Pod whose restart policy is Never or OnFailure and whose containers
// crash: under Never the kubelet restarts nothing and the Pod fails, its
// container terminated with the exit code; under OnFailure it loops as
// under Always.
func TestStatusAt_crash_loop_under_each_restart_policy(t *testing.T) {
	for _, tc := range []struct {
		policy corev1.RestartPolicy
		phase  corev1.PodPhase
		next   time.Duration
	}{
		{policy: corev1.RestartPolicyAlways, phase: corev1.PodRunning, next: 5 * time.Second},
		{policy: corev1.RestartPolicyOnFailure, phase: corev1.PodRunning, next: 5 * time.Second},
		{policy: corev1.RestartPolicyNever, phase: corev1.PodFailed},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			pod := boundPod()
			pod.Spec.RestartPolicy = tc.policy
			st, next := statusAt(pod, CrashLoop, nil, testStarted, 0, start.Add(27*time.Second), testTiming)
			require.Equal(t, tc.phase, st.Phase)
			require.Equal(t, tc.next, next)
			require.Equal(t, corev1.ConditionFalse, condition(t, st, corev1.PodReady).Status)
			cs := st.ContainerStatuses[0]
			require.False(t, cs.Ready)
			if tc.phase == corev1.PodFailed {
				require.Zero(t, cs.RestartCount, "nothing restarts")
				require.NotNil(t, cs.State.Terminated, "%+v", cs.State)
				require.Equal(t, int32(1), cs.State.Terminated.ExitCode)
				require.Equal(t, reasonError, cs.State.Terminated.Reason)
				require.Equal(t, corev1.ConditionFalse, condition(t, st, corev1.PodReadyToStartContainers).Status, "the sandbox is gone")
				return
			}
			require.Equal(t, int32(2), cs.RestartCount)
			require.Equal(t, reasonCrashLoopBackOff, cs.State.Waiting.Reason)
		})
	}
}

// A running Pod whose fault becomes one that is no Fault (a typo in its
// namespace's annotation) says why in its containers' state and turns
// unready, but stays Running: no kubelet moves a Pod back to Pending.
func TestStatusAt_a_bad_fault_on_a_running_Pod_keeps_it_Running(t *testing.T) {
	pod := boundPod()
	pod.Status, _ = statusAt(pod, Healthy, nil, testStarted, 0, start.Add(time.Minute), testTiming)
	require.Equal(t, corev1.PodRunning, pod.Status.Phase)

	st, next := statusAt(pod, Fault{}, errors.New("bad annotation"), testStarted, 0, start.Add(2*time.Minute), testTiming)
	require.Zero(t, next)
	require.Equal(t, corev1.PodRunning, st.Phase)
	require.Equal(t, reasonInvalidFault, st.ContainerStatuses[0].State.Waiting.Reason)
	require.Equal(t, corev1.ConditionFalse, condition(t, st, corev1.PodReady).Status)
}

// A Pod whose bad fault is put right an hour on starts its containers
// then: their startedAt is when they started, not when they could have.
func TestStatusAt_a_Pod_put_right_starts_when_it_is(t *testing.T) {
	pod := boundPod()
	pod.Status, _ = statusAt(pod, Fault{}, errors.New("bad annotation"), testStarted, 0, start.Add(time.Hour), testTiming)
	st, _ := statusAt(pod, Healthy, nil, testStarted, 0, start.Add(2*time.Hour), testTiming)
	require.Equal(t, corev1.PodRunning, st.Phase)
	require.Equal(t, metav1.NewTime(start.Add(2*time.Hour).Truncate(time.Second)), st.ContainerStatuses[0].State.Running.StartedAt)
}
