package node_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const corefile = `.:53 {
    hosts {
        %s a.test
    }
    reload 2s 1s
    health :8080
    ready :8181
}
`

// testCoreDNS runs our coredns image as kubeadm deploys CoreDNS: the
// image's user (65532), all capabilities dropped but NET_BIND_SERVICE, no
// privilege escalation, a read-only root, the Corefile from a ConfigMap.
func testCoreDNS(t *testing.T, f *fixture) {
	ns := f.namespace(t, "oci")
	cms := f.client.CoreV1().ConfigMaps(ns)
	_, err := cms.Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns"},
		Data:       map[string]string{"Corefile": strings.Replace(corefile, "%s", "198.18.9.1", 1)},
	}, metav1.CreateOptions{})
	must(t, err)
	no, yes := false, true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns"},
		Spec: corev1.PodSpec{
			DNSPolicy: corev1.DNSDefault,
			Containers: []corev1.Container{{
				Name:  "main",
				Image: corednsImage,
				Args:  []string{"-conf", "/etc/coredns/Corefile"},
				Ports: []corev1.ContainerPort{{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem:   &yes,
					Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"ALL"}},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}}, PeriodSeconds: 1},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 2},
				VolumeMounts:   []corev1.VolumeMount{{Name: "config-volume", MountPath: "/etc/coredns", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "config-volume", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"},
				Items:                []corev1.KeyToPath{{Key: "Corefile", Path: "Corefile"}},
			}}}},
		},
	}
	f.create(t, ns, pod)
	p := f.waitReady(t, ns, "coredns")
	pid, ok := f.node.ContainerPID(ns, "coredns", "main")
	if !ok {
		t.Fatal("no container process")
	}
	status := procStatus(t, pid)
	if status["Uid"] != "65532\t65532\t65532\t65532" || status["Gid"] != "65532\t65532\t65532\t65532" {
		t.Errorf("coredns runs as Uid %q Gid %q, want the image's 65532", status["Uid"], status["Gid"])
	}
	capEff, _ := strconv.ParseUint(status["CapEff"], 16, 64)
	if capEff != 1<<10 || status["NoNewPrivs"] != "1" { // CAP_NET_BIND_SERVICE, from the file capability
		t.Errorf("CapEff %s NoNewPrivs %s, want only cap_net_bind_service with no_new_privs", status["CapEff"], status["NoNewPrivs"])
	}
	addr := p.Status.PodIP + ":53"
	lookup := func() string {
		var got string
		_ = f.nodeNS.Do(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			m, err := harness.Exchange(ctx, addr, "a.test.", dns.TypeA)
			if err == nil {
				if as := harness.ARecords(m); len(as) == 1 {
					got = as[0].String()
				}
			}
			return nil
		})
		return got
	}
	if got := lookup(); got != "198.18.9.1" {
		t.Fatalf("a.test from coredns on %s: %q", addr, got)
	}
	// kubelet-style propagation: reload sees the new ..data.
	cm, err := cms.Get(t.Context(), "coredns", metav1.GetOptions{})
	must(t, err)
	cm.Data["Corefile"] = strings.Replace(corefile, "%s", "198.18.9.2", 1)
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	must(t, err)
	start := time.Now()
	for lookup() != "198.18.9.2" {
		if time.Since(start) > 20*time.Second {
			logs, _ := f.node.Logs(ns, "coredns", "main")
			t.Fatalf("coredns did not reload the updated Corefile in 20s; logs:\n%s", logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("coredns answered from the updated Corefile after %s", time.Since(start).Round(time.Millisecond))
}

// procStatus parses /proc/PID/status.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/status")
	must(t, err)
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}
