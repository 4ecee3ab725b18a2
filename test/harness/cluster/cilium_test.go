package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/cgroup2"
	"github.com/coredns-hairpin/hairpin/test/harness/hoststate"
	"github.com/coredns-hairpin/hairpin/test/harness/netns"
	"github.com/coredns-hairpin/hairpin/test/harness/node"
)

// TestCiliumLeavesNothingBehind runs the cilium mode chained as Cozystack
// chains it, with one Pod attached through ptp and cilium-cni, kills the
// agent as a crash would, and tears the cluster down: the machine must be
// as it was, its kernel. and net. sysctls, its own rule sets, no BPF
// program attached to a cgroup or a device, no bpffs mount, no namespace,
// no /run/cilium, no host-local state.
func TestCiliumLeavesNothingBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and cilium-agent")
	}
	if !slices.Contains(Dataplanes, ciliumName) {
		t.Skipf("the cilium dataplane is left out: %s", EnvDataplanes)
	}
	if os.Geteuid() != 0 {
		harness.SkipOrFail(t, "cluster: needs root (network namespaces, BPF)")
	}
	before, err := hoststate.Take()
	if err != nil {
		harness.SkipOrFail(t, "cluster: %v", err)
	}
	_, runCilium := os.Stat("/run/cilium")
	// host-local's state of the chain's network, had it been left at its
	// default folder.
	machineLeases := filepath.Join("/var/lib/cni/networks", "generic-veth")
	_, leases := os.Stat(machineLeases)
	t.Run(ciliumName, func(t *testing.T) {
		const image = "registry.k8s.io/pause:3.10"
		dp := Cilium(DefaultCiliumValues())
		c := Start(t, Options{Dataplane: dp, Images: map[string]node.Image{image: {Host: true}}})
		ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
		defer cancel()
		if _, err := c.CP.Clientset.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "sleeper", Namespace: "default"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "sleeper", Image: image, Command: []string{"sleep", "infinity"}}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var ip netip.Addr
		if err := harness.Poll(ctx, func(context.Context) error {
			var ok bool
			if ip, ok = c.Nodes[0].PodIP("default", "sleeper"); !ok {
				return os.ErrNotExist
			}
			return nil
		}); err != nil {
			t.Fatalf("the pod got no IP from cilium-cni: %v", err)
		}
		if !c.Nodes[0].PodCIDR.Contains(ip) {
			t.Errorf("the chain gave the pod %s, outside the node's podCIDR %s", ip, c.Nodes[0].PodCIDR)
		}
		// The address is host-local's, leased in the test's folder, and
		// the agent has an endpoint for it on ptp's veth.
		ch := c.cilium.chain
		if ch == nil {
			t.Fatal("the cilium mode is not chained")
		}
		if _, err := os.Stat(filepath.Join(ch.dataDir, "generic-veth", ip.String())); err != nil {
			t.Errorf("host-local holds no lease for the pod's %s: %v", ip, err)
		}
		if out, err := c.NodeNS.IP("-4", "-o", "addr", "show", "dev", "cilium_host"); err != nil || !strings.Contains(out, " "+ch.routerIP.String()+"/") {
			t.Errorf("cilium_host's address is not the Pods' gateway %s: %q (%v)", ch.routerIP, out, err)
		}
		var ep CiliumEndpoint
		if err := harness.Poll(ctx, func(ctx context.Context) error {
			var err error
			ep, err = c.CiliumEndpoint(ctx, "default", "sleeper")
			return err
		}); err != nil {
			t.Fatalf("cilium-agent: %v", err)
		}
		if ep.IPv4 != ip || ep.Interface == "" {
			t.Errorf("cilium-agent's endpoint of the pod is %s on %q; want %s on ptp's veth", ep.IPv4, ep.Interface, ip)
		}
		// The agent attaches the Pod's programs once it has compiled
		// them for the new endpoint, after cilium-cni has returned.
		var progs []string
		want := dp.Capabilities().BPFPrograms
		if err := harness.Poll(ctx, func(context.Context) error {
			onVeth, err := c.DeviceBPFPrograms(ep.Interface)
			if err != nil {
				return err
			}
			if !slices.Contains(onVeth, "cil_from_container") {
				return fmt.Errorf("no cil_from_container on %s: %v", ep.Interface, onVeth)
			}
			if progs, err = c.AttachedBPFPrograms(); err != nil {
				return err
			}
			for _, p := range want {
				if !slices.Contains(progs, p) {
					return fmt.Errorf("no %s attached", p)
				}
			}
			return nil
		}); err != nil {
			t.Errorf("%v; attached: %v", err, progs)
		}
		// Socket load balancing is the node's alone: its programs sit
		// on the node's cgroup, the Pod is in it, and the machine's
		// cgroup2 root has what it had.
		pid, ok := c.Nodes[0].ContainerPID("default", "sleeper", "sleeper")
		if !ok {
			t.Fatal("the sleeper has no process")
		}
		if got, err := cgroup2.Of(pid); err != nil || got != c.NodeCgroup() {
			t.Errorf("the Pod's process is in cgroup %q (%v); want the node's %q", got, err, c.NodeCgroup())
		}
		onNode, err := c.NodeCgroupPrograms()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(onNode, func(a hoststate.Attachment) bool { return a.Name == "cil_sock4_connect" }) {
			t.Errorf("cil_sock4_connect is not attached to the node's cgroup; attached: %v", onNode)
		}
		now, err := hoststate.TakeBPF()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(now.Cgroup, before.BPF.Cgroup) {
			t.Errorf("the cgroup2 root's programs changed while the agent runs: %v, were %v", now.Cgroup, before.BPF.Cgroup)
		}
		// The agent dies; teardown must still take what it attached.
		_ = c.cilium.agent.StopTimeout(0)
	})
	if diff := hoststate.WaitSame(before, 15*time.Second); len(diff) > 0 {
		t.Errorf("the machine is not as it was:\n%s", strings.Join(diff, "\n"))
	}
	if left := netns.Ours(); len(left) > 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
	if left, err := cgroup2.Ours(); err != nil || slices.ContainsFunc(left, func(n string) bool { return strings.HasPrefix(n, netns.Prefix) }) {
		t.Errorf("cgroups left behind: %v (%v)", left, err)
	}
	if after, err := hoststate.TakeBPF(); err != nil || slices.ContainsFunc(after.Cgroup, func(a hoststate.Attachment) bool { return strings.HasPrefix(a.Name, "cil_") }) {
		t.Errorf("programs attached to the cgroup2 root after teardown: %v (%v)", after.Cgroup, err)
	}
	if _, err := os.Stat("/run/cilium"); runCilium != nil && err == nil {
		t.Errorf("cilium-agent left /run/cilium on the machine")
	}
	if _, err := os.Stat(machineLeases); leases != nil && err == nil {
		t.Errorf("host-local left %s on the machine", machineLeases)
	}
}
