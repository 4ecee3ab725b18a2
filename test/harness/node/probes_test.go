package node_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

func testLiveness(t *testing.T, f *fixture) {
	ns := f.namespace(t, "live")
	pod := hostPod("flaky", "sleep", "3600")
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}},
		PeriodSeconds: 1, FailureThreshold: 2,
	}
	f.create(t, ns, pod)
	p := f.waitPod(t, ns, "flaky", "two restarts", 60*time.Second, func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 2
	})
	last := p.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if last == nil || last.ExitCode != 128+15 || last.Reason != "Error" || last.Message == "" {
		t.Fatalf("last termination after a liveness failure: %+v", last)
	}
	t.Logf("last termination: %s (exit %d): %s", last.Reason, last.ExitCode, last.Message)
}
