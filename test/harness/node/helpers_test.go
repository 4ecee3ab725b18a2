package node_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/netns"
	"github.com/coredns-hairpin/hairpin/test/harness/node"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

var (
	nodeIP     = netip.MustParseAddr("198.18.0.10")
	podCIDR    = netip.MustParsePrefix("198.18.1.0/24")
	clusterDNS = netip.MustParseAddr("198.19.0.10")
)

// hostResolvConf stands for the node's resolv.conf.
const hostResolvConf = "nameserver 203.0.113.53\nsearch example.test\noptions timeout:2\n"

// imageLayout returns bin/images/NAME of the repository, as `make images`
// writes it, or skips (fails under HAIRPIN_REQUIRE_E2E=1).
func imageLayout(t *testing.T, name string) string {
	t.Helper()
	dir, _ := os.Getwd()
	for ; dir != "/"; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
	}
	p := filepath.Join(dir, "bin", "images", name)
	if _, err := os.Stat(filepath.Join(p, "index.json")); err != nil {
		harness.SkipOrFail(t, "no OCI layout %s; run `make images`", p)
	}
	return p
}

// fixture is a control plane and one node agent in its own namespace.
type fixture struct {
	cp     *harness.ControlPlane
	client kubernetes.Interface
	nodeNS *netns.NS
	node   *node.Node
	dir    string
	log    *syncBuffer
}

// Image references the tests use.
const (
	hostImage    = "registry.test/host:1"
	corednsImage = "registry.test/coredns:1"
	proxyImage   = "registry.test/hairpin-proxy:1"
)

func newFixture(t *testing.T) *fixture {
	t.Helper()
	harness.RequireRoot(t, "node agent", "ip", "nsenter")
	corednsLayout, proxyLayout := imageLayout(t, "coredns"), imageLayout(t, "hairpin-proxy")
	ns, err := netns.New("node")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	must(t, ns.Sysctl("net.ipv4.ip_forward", "1"))
	must(t, ns.AddAddr("lo", netip.PrefixFrom(nodeIP, 32)))
	// The apiserver runs in the node's namespace, as on a control-plane
	// node, so that it reaches the kubelet API on the node's address
	// (kubectl logs, exec, attach and run -i).
	cp := harness.NewControlPlane(t, harness.ControlPlaneOptions{
		Netns:            ns,
		AdvertiseAddress: nodeIP,
		APIServerFlags:   map[string][]string{"kubelet-preferred-address-types": {"InternalIP"}},
	})
	f := &fixture{cp: cp, client: cp.Clientset, nodeNS: ns, dir: filepath.Join(t.TempDir(), "node"), log: &syncBuffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node agent log:\n%s", f.log.String())
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	f.node, err = node.Start(ctx, node.Config{
		Client:         cp.Clientset,
		NodeName:       "node-a",
		NodeIP:         nodeIP,
		NodeNS:         ns,
		PodCIDR:        podCIDR,
		ClusterDNS:     clusterDNS,
		ClusterDomain:  "cluster.local",
		HostResolvConf: hostResolvConf,
		Images: map[string]node.Image{
			hostImage:    {Host: true},
			corednsImage: {OCILayout: corednsLayout},
			proxyImage:   {OCILayout: proxyLayout},
		},
		Dir:            f.dir,
		KubeletPort:    10250,
		RestartBackoff: 500 * time.Millisecond,
		MaxGracePeriod: 2 * time.Second,
		Logf:           f.log.Printf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.node.Stop() })
	return f
}

// namespace creates a namespace with what kube-controller-manager would
// put there: the default ServiceAccount and the kube-root-ca.crt ConfigMap.
func (f *fixture) namespace(t *testing.T, name string) string {
	t.Helper()
	ctx := t.Context()
	_, err := f.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	must(t, err)
	_, err = f.client.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	must(t, err)
	_, err = f.client.CoreV1().ConfigMaps(name).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"},
		Data:       map[string]string{"ca.crt": string(f.cp.Config.CAData)},
	}, metav1.CreateOptions{})
	must(t, err)
	return name
}

// hostPod is a Pod of one Host-image container running cmd.
func hostPod(name string, cmd ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:   "node-a",
			Containers: []corev1.Container{{Name: "main", Image: hostImage, Command: cmd}},
		},
	}
}

func (f *fixture) create(t *testing.T, ns string, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	pod.Spec.NodeName = "node-a"
	p, err := f.client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
	must(t, err)
	return p
}

// waitPod waits until cond holds for the Pod in the apiserver, and fails
// with its status and logs otherwise.
func (f *fixture) waitPod(t *testing.T, ns, name, what string, timeout time.Duration, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *corev1.Pod
	for time.Now().Before(deadline) {
		p, err := f.client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err == nil {
			last = p
			if cond(p) {
				return p
			}
		} else if !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("pod %s/%s: timed out after %s waiting for %s; status: %s", ns, name, timeout, what, describe(last))
	return nil
}

// waitGone waits until the Pod is deleted from the apiserver: the node
// has stopped it and confirmed its deletion.
func (f *fixture) waitGone(t *testing.T, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		_, err := f.client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("pod %s/%s is still there 30s after its deletion", ns, name)
}

func (f *fixture) waitReady(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	return f.waitPod(t, ns, name, "Ready", 60*time.Second, isReady)
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func describe(p *corev1.Pod) string {
	if p == nil {
		return "<none>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s ip=%s", p.Status.Phase, p.Status.PodIP)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
	}
	for _, cs := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, "\n  %s: ready=%v restarts=%d state=%+v last=%+v", cs.Name, cs.Ready, cs.RestartCount, cs.State, cs.LastTerminationState)
	}
	return b.String()
}

func (f *fixture) exec(t *testing.T, ns, pod string, cmd ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	out, errOut, err := f.node.Exec(ctx, ns, pod, "main", cmd...)
	if err != nil {
		t.Fatalf("exec %q: %v\nstdout: %s\nstderr: %s", cmd, err, out, errOut)
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// syncBuffer collects the agent's log lines, or a command's output, from
// their goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Printf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(&b.buf, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
