package node_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/netns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestNode runs Pods on one node agent against a real control plane; the
// subtests share the node, each in its own namespace, and the last one
// stops it.
func TestNode(t *testing.T) {
	f := newFixture(t)
	t.Run("RegistersAReadyNode", func(t *testing.T) { testNodeObject(t, f) })
	t.Run("HostImagePodServesOnItsIPFromTheNode", func(t *testing.T) { testServes(t, f) })
	t.Run("Environment", func(t *testing.T) { testEnv(t, f) })
	t.Run("ResolvConfFollowsDNSPolicy", func(t *testing.T) { testResolvConf(t, f) })
	t.Run("ConfigMapUpdateSwapsData", func(t *testing.T) { testConfigMapUpdate(t, f) })
	t.Run("MissingConfigMapHoldsThePodUntilItExists", func(t *testing.T) { testLateConfigMap(t, f) })
	t.Run("ProjectedTokenIsAcceptedByTheAPIServer", func(t *testing.T) { testToken(t, f) })
	t.Run("SecurityContext", func(t *testing.T) { testSecurityContext(t, f) })
	t.Run("ReadinessProbes", func(t *testing.T) { testReadiness(t, f) })
	t.Run("RestartPolicy", func(t *testing.T) { testRestarts(t, f) })
	t.Run("InitContainersRunFirst", func(t *testing.T) { testInit(t, f) })
	t.Run("HostNetworkPodRunsInTheNodeNamespace", func(t *testing.T) { testHostNetwork(t, f) })
	t.Run("OCIImageRunsAsItsUserWithFileCapabilities", func(t *testing.T) { testCoreDNS(t, f) })
	t.Run("ProxyImageWithTheChartsSecurityContextReachesAnotherPod", func(t *testing.T) { testProxy(t, f) })
	t.Run("UnknownImageIsErrImagePull", func(t *testing.T) { testUnknownImage(t, f) })
	t.Run("LogsLocallyAndThroughTheKubeletAPI", func(t *testing.T) { testLogs(t, f) })
	t.Run("KubectlRunAttaches", func(t *testing.T) { testKubectlRunAttaches(t, f) })
	t.Run("KubectlPortForward", func(t *testing.T) { testKubectlPortForward(t, f) })
	t.Run("DeleteStopsTheProcessAndRemovesTheNamespace", func(t *testing.T) { testDelete(t, f) })
	t.Run("DeletionGracePeriod", func(t *testing.T) { testGrace(t, f) })
	t.Run("ReadinessIsProbedWhileTerminating", func(t *testing.T) { testReadinessWhileTerminating(t, f) })
	t.Run("LifecycleHooks", func(t *testing.T) { testLifecycle(t, f) })
	t.Run("StopLeavesNothing", func(t *testing.T) { testStop(t, f) })
}

func testNodeObject(t *testing.T, f *fixture) {
	n, err := f.client.CoreV1().Nodes().Get(t.Context(), "node-a", metav1.GetOptions{})
	must(t, err)
	ready := false
	for _, c := range n.Status.Conditions {
		ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
	}
	var internal string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal = a.Address
		}
	}
	if !ready || internal != nodeIP.String() || n.Spec.PodCIDR != podCIDR.String() ||
		n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 || n.Status.Allocatable.Pods().Value() == 0 {
		t.Fatalf("node: ready=%v internalIP=%s podCIDR=%s kubelet port=%d allocatable=%v",
			ready, internal, n.Spec.PodCIDR, n.Status.DaemonEndpoints.KubeletEndpoint.Port, n.Status.Allocatable)
	}
	// The agent's lease controller writes the Lease in a goroutine of its
	// own, after the Node that Start waited for.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := harness.PollGet(ctx, f.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get, "node-a"); err != nil {
		t.Fatalf("node lease: %v", err)
	}
}

// nginxPod is a Host-image nginx with its port named http.
func nginxPod(name string) *corev1.Pod {
	pod := hostPod(name, "nginx", "-g", "daemon off;")
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80}}
	return pod
}

func testServes(t *testing.T, f *fixture) {
	ns := f.namespace(t, "serve")
	pod := nginxPod("web")
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
		PeriodSeconds: 1,
	}
	f.create(t, ns, pod)
	p := f.waitReady(t, ns, "web")
	if p.Status.Phase != corev1.PodRunning || !podCIDR.Contains(mustAddr(t, p.Status.PodIP)) || p.Status.HostIP != nodeIP.String() {
		t.Fatalf("pod status: %s", describe(p))
	}
	for _, cond := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		if !hasCondition(p, cond) {
			t.Errorf("condition %s is not True: %s", cond, describe(p))
		}
	}
	cs := p.Status.ContainerStatuses[0]
	if cs.State.Running == nil || !cs.Ready || cs.Started == nil || !*cs.Started || cs.RestartCount != 0 || cs.ContainerID == "" {
		t.Errorf("container status: %+v", cs)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: f.nodeNS.DialContext}, Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + net.JoinHostPort(p.Status.PodIP, "80") + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "nginx") {
		t.Fatalf("GET /: %d %q", resp.StatusCode, body)
	}
	if ip, ok := f.node.PodIP(ns, "web"); !ok || ip.String() != p.Status.PodIP {
		t.Errorf("PodIP = %v, %v; status says %s", ip, ok, p.Status.PodIP)
	}
	// The pod's side: eth0 with its /32 and the default route via .1.
	routes := f.exec(t, ns, "web", "cat", "/proc/net/route")
	if !strings.Contains(routes, "eth0\t00000000\t010112C6") { // default via 198.18.1.1, little-endian hex
		t.Errorf("pod routes:\n%s", routes)
	}
	if links, _ := f.nodeNS.Links(); !slices.ContainsFunc(links, func(l string) bool { return strings.HasPrefix(l, "veth") }) {
		t.Errorf("no veth in the node namespace: %v", links)
	}
}

func hasCondition(p *corev1.Pod, typ corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func testDelete(t *testing.T, f *fixture) {
	ns := f.namespace(t, "delete")
	f.create(t, ns, hostPod("doomed", "sleep", "3600"))
	f.waitReady(t, ns, "doomed")
	pid, ok := f.node.ContainerPID(ns, "doomed", "main")
	if !ok {
		t.Fatal("no container process")
	}
	out, err := command("ip", "netns", "identify", itoa(pid))
	nsName := strings.TrimSpace(out)
	if err != nil || !strings.HasPrefix(nsName, netns.Prefix+"pod-") {
		t.Fatalf("the container's network namespace: %q %v", out, err)
	}
	must(t, f.client.CoreV1().Pods(ns).Delete(t.Context(), "doomed", metav1.DeleteOptions{}))
	start := time.Now()
	deadline := start.Add(15 * time.Second)
	for {
		_, err := f.client.CoreV1().Pods(ns).Get(t.Context(), "doomed", metav1.GetOptions{})
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pod object is still there 15s after its deletion")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("pod object gone %s after the delete", time.Since(start).Round(time.Millisecond))
	if _, err := os.Stat("/proc/" + itoa(pid)); err == nil {
		t.Errorf("container process %d outlived its pod", pid)
	}
	if _, err := os.Stat("/run/netns/" + nsName); err == nil {
		t.Errorf("network namespace %s outlived its pod", nsName)
	}
}

func testStop(t *testing.T, f *fixture) {
	var pids []int
	for _, key := range [][2]string{{"serve", "web"}, {"env", "links"}} {
		if pid, ok := f.node.ContainerPID(key[0], key[1], "main"); ok {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		t.Fatal("no pods running before Stop")
	}
	must(t, f.node.Stop())
	must(t, f.node.Stop()) // idempotent
	for _, pid := range pids {
		if _, err := os.Stat("/proc/" + itoa(pid)); err == nil {
			t.Errorf("container process %d outlived Stop", pid)
		}
	}
	if ours := netns.Ours(); !slices.Equal(ours, []string{f.nodeNS.Name}) {
		t.Errorf("namespaces left besides the node's: %v", ours)
	}
	if links, _ := f.nodeNS.Links(); !slices.Equal(links, []string{"lo"}) {
		t.Errorf("links left in the node namespace: %v", links)
	}
	if _, err := os.Stat(f.dir); !os.IsNotExist(err) {
		t.Errorf("state folder %s left: %v", f.dir, err)
	}
}

func testLogs(t *testing.T, f *fixture) {
	ns := f.namespace(t, "logs")
	f.create(t, ns, hostPod("talker", "sh", "-c", "echo hello-from-stdout; echo hello-from-stderr >&2; exec sleep 3600"))
	f.waitReady(t, ns, "talker")
	var logs string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(logs, "hello-from-stderr") {
		logs, _ = f.node.Logs(ns, "talker", "main")
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(logs, "hello-from-stdout\n") || !strings.Contains(logs, "hello-from-stderr\n") {
		t.Fatalf("Logs = %q", logs)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext:     f.nodeNS.DialContext,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	resp, err := client.Get("https://" + net.JoinHostPort(nodeIP.String(), "10250") + "/containerLogs/" + ns + "/talker/main?tailLines=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Count(string(body), "\n") != 1 || !strings.Contains(logs, string(body)) {
		t.Fatalf("kubelet API containerLogs?tailLines=1: %d %q", resp.StatusCode, body)
	}
}

func testUnknownImage(t *testing.T, f *fixture) {
	ns := f.namespace(t, "noimage")
	pod := hostPod("ghost", "true")
	pod.Spec.Containers[0].Image = "registry.test/nope:1"
	f.create(t, ns, pod)
	p := f.waitPod(t, ns, "ghost", "ErrImagePull", 30*time.Second, func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff")
	})
	w := p.Status.ContainerStatuses[0].State.Waiting
	if p.Status.Phase != corev1.PodPending || !strings.Contains(w.Message, "registry.test/nope:1") {
		t.Fatalf("status: %s (message %q)", describe(p), w.Message)
	}
}

func testInit(t *testing.T, f *fixture) {
	ns := f.namespace(t, "init")
	pod := hostPod("staged", "sleep", "3600")
	pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	mount := []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "first", Image: hostImage, Command: []string{"sh", "-c", "echo one > /work/log"}, VolumeMounts: mount},
		{Name: "second", Image: hostImage, Command: []string{"sh", "-c", "test -f /work/log && echo two >> /work/log"}, VolumeMounts: mount},
	}
	pod.Spec.Containers[0].VolumeMounts = mount
	f.create(t, ns, pod)
	p := f.waitReady(t, ns, "staged")
	if got := f.exec(t, ns, "staged", "cat", "/work/log"); got != "one\ntwo\n" {
		t.Errorf("init containers wrote %q", got)
	}
	if !hasCondition(p, corev1.PodInitialized) || len(p.Status.InitContainerStatuses) != 2 {
		t.Fatalf("status: %s", describe(p))
	}
	for _, s := range p.Status.InitContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.Reason != "Completed" {
			t.Errorf("init container %s: %+v", s.Name, s.State)
		}
	}
}

func testHostNetwork(t *testing.T, f *fixture) {
	ns := f.namespace(t, "hostnet")
	pod := hostPod("hostnet", "sleep", "3600")
	pod.Spec.HostNetwork = true
	f.create(t, ns, pod)
	p := f.waitReady(t, ns, "hostnet")
	if p.Status.PodIP != nodeIP.String() {
		t.Errorf("podIP %s, want the node's %s", p.Status.PodIP, nodeIP)
	}
	pid, _ := f.node.ContainerPID(ns, "hostnet", "main")
	if out, err := command("ip", "netns", "identify", itoa(pid)); err != nil || strings.TrimSpace(out) != f.nodeNS.Name {
		t.Errorf("runs in namespace %q (%v), want %s", out, err, f.nodeNS.Name)
	}
}

// testGrace deletes Pods whose process handles SIGTERM and whose process
// ignores it: the first goes at once, the second after the (capped) grace
// period, killed.
func testGrace(t *testing.T, f *fixture) {
	ns := f.namespace(t, "grace")
	for _, tc := range []struct {
		name     string
		script   string
		min, max time.Duration
	}{
		{"handles-term", "trap 'exit 0' TERM; while :; do sleep 0.1; done", 0, 1500 * time.Millisecond},
		{"ignores-term", "trap '' TERM; while :; do sleep 0.1; done", 2 * time.Second, 6 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.create(t, ns, hostPod(tc.name, "sh", "-c", tc.script))
			f.waitReady(t, ns, tc.name)
			must(t, f.client.CoreV1().Pods(ns).Delete(t.Context(), tc.name, metav1.DeleteOptions{}))
			start := time.Now()
			for {
				if _, err := f.client.CoreV1().Pods(ns).Get(t.Context(), tc.name, metav1.GetOptions{}); err != nil {
					break
				}
				if time.Since(start) > 15*time.Second {
					t.Fatal("still there after 15s")
				}
				time.Sleep(50 * time.Millisecond)
			}
			if d := time.Since(start); d < tc.min || d > tc.max {
				t.Errorf("deleted after %s, want between %s and %s", d.Round(time.Millisecond), tc.min, tc.max)
			}
		})
	}
}
