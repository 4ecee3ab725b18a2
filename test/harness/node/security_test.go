package node_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func testSecurityContext(t *testing.T, f *fixture) {
	ns := f.namespace(t, "security")
	u, g, sup, fs, root := int64(1000), int64(2000), int64(3000), int64(4000), int64(0)
	yes := true
	for _, tc := range []struct {
		name   string
		psc    *corev1.PodSecurityContext
		sc     *corev1.SecurityContext
		check  []string // a command that must succeed
		refuse []string // a command that must fail
		capEff string
		reason string // a waiting reason instead of running
	}{
		{name: "ids", psc: &corev1.PodSecurityContext{RunAsUser: &u, RunAsGroup: &g, SupplementalGroups: []int64{sup}, FSGroup: &fs},
			check: []string{"sh", "-c", `test "$(id -u):$(id -g):$(id -G)" = "1000:2000:2000 3000 4000"`}, capEff: "0000000000000000"},
		{name: "container-over-pod", psc: &corev1.PodSecurityContext{RunAsUser: &u}, sc: &corev1.SecurityContext{RunAsUser: &root},
			check: []string{"sh", "-c", `test "$(id -u)" = 0`}, capEff: "00000000a80425fb"},
		{name: "read-only-root", sc: &corev1.SecurityContext{ReadOnlyRootFilesystem: &yes},
			refuse: []string{"touch", "/tmp/x"}, check: []string{"test", "-w", "/dev/shm"}},
		{name: "drop-all", sc: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			refuse: []string{"chown", "1:1", "/tmp"}, capEff: "0000000000000000"},
		{name: "non-root-refused", sc: &corev1.SecurityContext{RunAsNonRoot: &yes}, reason: "CreateContainerConfigError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := hostPod(tc.name, "sleep", "3600")
			pod.Spec.SecurityContext, pod.Spec.Containers[0].SecurityContext = tc.psc, tc.sc
			f.create(t, ns, pod)
			if tc.reason != "" {
				p := f.waitPod(t, ns, tc.name, tc.reason, 20*time.Second, func(p *corev1.Pod) bool {
					return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
						p.Status.ContainerStatuses[0].State.Waiting.Reason == tc.reason
				})
				if msg := p.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "runAsNonRoot") {
					t.Errorf("message %q", msg)
				}
				return
			}
			f.waitReady(t, ns, tc.name)
			if tc.check != nil {
				f.exec(t, ns, tc.name, tc.check...)
			}
			if tc.refuse != nil {
				if _, _, err := f.node.Exec(t.Context(), ns, tc.name, "main", tc.refuse...); err == nil {
					t.Errorf("%q succeeded", tc.refuse)
				}
			}
			if tc.capEff != "" {
				pid, _ := f.node.ContainerPID(ns, tc.name, "main")
				if got := procStatus(t, pid)["CapEff"]; got != tc.capEff {
					t.Errorf("CapEff %s, want %s", got, tc.capEff)
				}
			}
		})
	}
}
