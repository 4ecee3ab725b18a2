package cluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"net/netip"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/hoststate"
	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// rootRules is the root namespace's whole netfilter state, as iptables
// (both backends) and nft print it.
func rootRules(t *testing.T) string {
	t.Helper()
	all, err := hoststate.RootRules()
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestKubeProxyProgramsOnlyTheNode starts the control plane and kube-proxy
// in each mode without Pods: kube-proxy must serve the kubernetes Service
// inside the node (its ClusterIP reaches the apiserver), and the machine's
// own namespace must hold exactly the rules it held before.
func TestKubeProxyProgramsOnlyTheNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and kube-proxy")
	}
	if os.Geteuid() != 0 {
		harness.SkipOrFail(t, "cluster: needs root (network namespaces)")
	}
	assets := harness.RequireAssets(t)
	for _, b := range []string{"kube-controller-manager", "kube-scheduler", "kube-proxy"} {
		harness.RequireExecutable(t, filepath.Join(assets, b))
	}
	before := rootRules(t)
	for _, mode := range KubeProxyModes {
		t.Run(mode, func(t *testing.T) {
			c := &Cluster{opts: Options{Dataplane: KubeProxy(mode), AssetsDir: assets}, dir: t.TempDir()}
			if err := c.planNodes(); err != nil {
				t.Fatal(err)
			}
			n := c.Nodes[0]
			var err error
			if c.topo, err = newTopology(mode, n.NodePlan, KubeProxy(mode).Capabilities()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := c.topo.close(); err != nil {
					t.Error(err)
				}
			})
			c.CP, err = harness.StartControlPlane(harness.ControlPlaneOptions{
				AssetsDir: assets, Dir: filepath.Join(c.dir, "controlplane"), Netns: c.topo.node,
				ServiceCIDR: ServiceCIDR, AdvertiseAddress: n.IP, ServingIPs: []netip.Addr{KubernetesIP},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.CP.Stop() })
			if err := c.startComponents(t); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			// kube-proxy waits for its Node before it programs anything.
			if _, err := c.CP.Clientset.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name},
				Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.IP.String()}}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			err = harness.Poll(ctx, func(ctx context.Context) error {
				conn, err := c.topo.node.DialContext(ctx, "tcp", netip.AddrPortFrom(KubernetesIP, 443).String())
				if err == nil {
					conn.Close()
				}
				return err
			})
			if err != nil {
				t.Fatalf("kubernetes Service %s:443 from the node: %v", KubernetesIP, err)
			}
			if _, err := c.topo.node.Run(map[string]string{"iptables": "iptables-save", "nftables": "nft"}[mode], map[string][]string{"iptables": nil, "nftables": {"list", "table", "ip", "kube-proxy"}}[mode]...); err != nil {
				t.Errorf("kube-proxy's %s rules are not in the node: %v", mode, err)
			}
		})
	}
	if after := rootRules(t); after != before {
		t.Errorf("the root namespace's rules changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if left := netns.Ours(); len(left) > 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
}
