package node_test

import (
	"context"
	"io"
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

// testProxy runs our hairpin-proxy image with the chart's security context
// and probes, its route pointing at the nginx Pod of testServes: the
// proxy's readiness needs that upstream, and a request through it reaches
// nginx, which answers the PROXY header with 400 (it does not expect one).
// So Pod-to-Pod traffic crosses the node.
func testProxy(t *testing.T, f *fixture) {
	upstream, ok := f.node.PodIP("serve", "web")
	if !ok {
		t.Fatal("the nginx pod of the serve subtest is not running")
	}
	ns := f.namespace(t, "proxy")
	uid, no, yes := int64(65532), false, true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "proxy"},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: &no,
			EnableServiceLinks:           &no,
			SecurityContext:              &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid},
			Containers: []corev1.Container{{
				Name:  "main",
				Image: proxyImage,
				Args:  []string{"--route=:8080=" + upstream.String() + ":80", "--health-addr=:9090", "--ready-interval=1s", "--proxy-protocol=1"},
				Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid,
					ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("metrics")}}, PeriodSeconds: 1},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("metrics")}}, PeriodSeconds: 2},
			}},
		},
	}
	f.create(t, ns, pod)
	p := f.waitReady(t, ns, "proxy")
	pid, _ := f.node.ContainerPID(ns, "proxy", "main")
	if st := procStatus(t, pid); st["Uid"] != "65532\t65532\t65532\t65532" || st["CapEff"] != "0000000000000000" {
		t.Errorf("proxy runs with Uid %q CapEff %s", st["Uid"], st["CapEff"])
	}
	c, err := f.nodeNS.DialContext(t.Context(), "tcp", p.Status.PodIP+":8080")
	must(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	must(t, err)
	resp, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(resp), "HTTP/1.1 400") {
		t.Fatalf("through the proxy to nginx at %s: %q", upstream, resp)
	}
}
