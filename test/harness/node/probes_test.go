package node_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func testReadiness(t *testing.T, f *fixture) {
	ns := f.namespace(t, "ready")
	for _, tc := range []struct {
		name    string
		handler corev1.ProbeHandler
		ready   bool
	}{
		{"http-ok", corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}, true},
		{"http-404", corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/missing", Port: intstr.FromInt32(80)}}, false},
		{"tcp-open", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}, true},
		{"tcp-closed", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(81)}}, false},
		{"exec-true", corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/etc/nginx/nginx.conf"}}}, true},
		{"exec-false", corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/nonexistent"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := nginxPod(tc.name)
			pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: tc.handler, PeriodSeconds: 1, FailureThreshold: 1}
			f.create(t, ns, pod)
			if tc.ready {
				f.waitReady(t, ns, tc.name)
				return
			}
			p := f.waitPod(t, ns, tc.name, "Running", 30*time.Second, func(p *corev1.Pod) bool {
				return p.Status.Phase == corev1.PodRunning
			})
			// Several probe periods later it is still not ready, and running.
			time.Sleep(4 * time.Second)
			p = f.waitPod(t, ns, tc.name, "status", time.Second, func(*corev1.Pod) bool { return true })
			cs := p.Status.ContainerStatuses[0]
			if isReady(p) || hasCondition(p, corev1.ContainersReady) || cs.Ready || cs.State.Running == nil || cs.RestartCount != 0 {
				t.Fatalf("a failing readiness probe: %s", describe(p))
			}
		})
	}
}

func testRestarts(t *testing.T, f *fixture) {
	ns := f.namespace(t, "restart")
	liveness := &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}},
		PeriodSeconds: 1, FailureThreshold: 2,
	}
	for _, tc := range []struct {
		name     string
		policy   corev1.RestartPolicy
		cmd      []string
		liveness *corev1.Probe
		phase    corev1.PodPhase // the final phase; "" for one that keeps restarting
		exit     int32
		reason   string
	}{
		{name: "always-exit", policy: corev1.RestartPolicyAlways, cmd: []string{"sh", "-c", "exit 3"}, exit: 3, reason: "Error"},
		{name: "liveness", policy: corev1.RestartPolicyAlways, cmd: []string{"sleep", "3600"}, liveness: liveness, exit: 128 + 15, reason: "Error"},
		{name: "never-ok", policy: corev1.RestartPolicyNever, cmd: []string{"true"}, phase: corev1.PodSucceeded, reason: "Completed"},
		{name: "never-fail", policy: corev1.RestartPolicyNever, cmd: []string{"sh", "-c", "exit 4"}, phase: corev1.PodFailed, exit: 4, reason: "Error"},
		{name: "onfailure-ok", policy: corev1.RestartPolicyOnFailure, cmd: []string{"true"}, phase: corev1.PodSucceeded, reason: "Completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := hostPod(tc.name, tc.cmd...)
			pod.Spec.RestartPolicy = tc.policy
			pod.Spec.Containers[0].LivenessProbe = tc.liveness
			f.create(t, ns, pod)
			if tc.phase != "" {
				p := f.waitPod(t, ns, tc.name, string(tc.phase), 30*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == tc.phase })
				cs := p.Status.ContainerStatuses[0]
				if term := cs.State.Terminated; term == nil || term.ExitCode != tc.exit || term.Reason != tc.reason || cs.RestartCount != 0 {
					t.Fatalf("final status: %s", describe(p))
				}
				return
			}
			p := f.waitPod(t, ns, tc.name, "two restarts", 60*time.Second, func(p *corev1.Pod) bool {
				return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 2
			})
			last := p.Status.ContainerStatuses[0].LastTerminationState.Terminated
			if last == nil || last.ExitCode != tc.exit || last.Reason != tc.reason || p.Status.Phase != corev1.PodRunning {
				t.Fatalf("after restarts: %s", describe(p))
			}
			if tc.liveness != nil && !strings.Contains(last.Message, "Liveness probe failed") {
				t.Errorf("termination message %q does not name the liveness probe", last.Message)
			}
		})
	}
}

// testReadinessWhileTerminating: kubelet stops only the liveness and
// startup probes of a terminating Pod; its readiness probe goes on until
// the container exits, so that a Pod in its lame duck (serving, but its
// readiness failing) is taken out of its Service's endpoints, and of the
// dataplane's UDP flows to it, before its process ends.
func testReadinessWhileTerminating(t *testing.T, f *fixture) {
	ns := f.namespace(t, "terminating")
	// Ready while /work/ready exists; on SIGTERM the file goes and the
	// process runs on until the grace period (the fixture's 2 s) ends.
	pod := hostPod("lameduck", "sh", "-c", "touch /work/ready; trap 'rm -f /work/ready' TERM; while :; do sleep 0.1; done")
	pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/work/ready"}}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	f.create(t, ns, pod)
	f.waitReady(t, ns, "lameduck")
	must(t, f.client.CoreV1().Pods(ns).Delete(t.Context(), "lameduck", metav1.DeleteOptions{}))
	var last *corev1.Pod
	for start := time.Now(); time.Since(start) < 15*time.Second; time.Sleep(50 * time.Millisecond) {
		p, err := f.client.CoreV1().Pods(ns).Get(t.Context(), "lameduck", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the Pod went without ever being reported not ready while its container ran; last seen: %s", describe(last))
		}
		last = p
		if cs := p.Status.ContainerStatuses; !isReady(p) && len(cs) == 1 && cs[0].State.Running != nil {
			return
		}
	}
	t.Fatalf("still there after 15 s: %s", describe(last))
}
