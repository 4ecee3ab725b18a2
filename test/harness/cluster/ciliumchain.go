package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// Chaining, as Cozystack's default networking runs Cilium: cilium-cni
// chained (generic-veth) after a primary CNI plugin that makes the Pod's
// veth and gives it its address. That plugin is Kube-OVN in Cozystack;
// here, whose module is not served, it is the CNI reference plugins' ptp
// with host-local IPAM in the node's podCIDR (test/tools/cni).

// ciliumChainPlugins are the primary network's plugins, which
// build/tools.sh links into the control-plane folder as cni/.
var ciliumChainPlugins = []string{"ptp", "host-local", "portmap"}

// ciliumChain is the primary network that cilium-cni is chained on.
type ciliumChain struct {
	// conf is the conflist the agent reads (its --read-cni-conf) and
	// writes as its own when it is ready.
	conf string
	// bin holds the primary network's plugins.
	bin string
	// dataDir is host-local's: its leases are files under
	// dataDir/NETWORK, named by the address.
	dataDir string
	// routerIP is cilium_host's address: the Pods' gateway, which
	// host-local never hands out.
	routerIP netip.Addr
	// node is the name of the node it attaches the Pods of.
	node string
}

// newCiliumChain provides what the rendered install asks of the node when
// it chains: a conflist in the ConfigMap that the agent's DaemonSet mounts
// (cni.configMap), read from cilium-config's read-cni-conf. It records the
// ConfigMap, as Cozystack's chart applies it, writes its conflist under
// dir for the agent, and records cilium_host's address. nil when the
// install does not chain, or writes its own conflist.
func newCiliumChain(ctx context.Context, cp *harness.ControlPlane, install *ciliumInstall, assets, dir string, node NodePlan) (*ciliumChain, error) {
	read := install.config.Data["read-cni-conf"]
	if read == "" {
		return nil, nil
	}
	if mode := install.config.Data["cni-chaining-mode"]; mode != "generic-veth" {
		return nil, fmt.Errorf("cilium: cni-chaining-mode %q with read-cni-conf: the harness chains on a veth plugin only (generic-veth)", mode)
	}
	name, err := cniConfigMapName(install.daemonSet)
	if err != nil {
		return nil, err
	}
	ch := &ciliumChain{
		conf:     filepath.Join(dir, "cni-configuration", filepath.Base(read)),
		bin:      filepath.Join(assets, "cni"),
		dataDir:  filepath.Join(dir, "cni-networks"),
		routerIP: node.PodCIDR.Addr().Next(),
		node:     node.Name,
	}
	for _, p := range ciliumChainPlugins {
		if err := harness.Executable(filepath.Join(ch.bin, p)); err != nil {
			return nil, fmt.Errorf("cilium: chained on ptp: %w; run `build/tools.sh cilium`", err)
		}
	}
	conf, err := ciliumChainConf(node.PodCIDR, ch.routerIP, ch.dataDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(ch.conf), 0o755); err != nil {
		return nil, fmt.Errorf("cilium: %w", err)
	}
	if err := os.WriteFile(ch.conf, conf, 0o644); err != nil {
		return nil, fmt.Errorf("cilium: %w", err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: install.config.Namespace},
		Data:       map[string]string{filepath.Base(read): string(conf)},
	}
	if _, err := cp.Clientset.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("cilium: %w", err)
	}
	if err := ch.recordRouterIP(ctx, cp); err != nil {
		return nil, err
	}
	return ch, nil
}

// cniConfigMapName is the ConfigMap that the agent's DaemonSet mounts as
// its CNI configuration (the chart's cni-configuration volume).
func cniConfigMapName(ds *appsv1.DaemonSet) (string, error) {
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.Name == "cni-configuration" && v.ConfigMap != nil {
			return v.ConfigMap.Name, nil
		}
	}
	return "", fmt.Errorf("cilium: the chart's DaemonSet mounts no cni-configuration ConfigMap, but cilium-config reads one")
}

// ciliumChainConf is Cozystack's cni-configuration conflist
// (packages/system/cilium/templates/cni.yaml at 3c780acd) with ptp in
// Kube-OVN's place: ptp makes the veth, host-local gives the Pod an
// address of podCIDR with a default route via gateway, and keeps its
// state under dataDir (not the machine's /var/lib/cni/networks). ptp does
// not masquerade (its ipMasq is off by default): outside routes podCIDR
// back to the node. portmap stays as Cozystack has it; with no port
// mappings from the runtime, which this one passes none of, it passes the
// result through (plugins/meta/portmap/main.go, containernetworking/plugins
// v1.9.1). The list's name selects cilium-cni's generic-veth chaining
// (getChainedAction in plugins/cilium-cni/cmd/cmd.go, cilium v1.19.5).
func ciliumChainConf(podCIDR netip.Prefix, gateway netip.Addr, dataDir string) ([]byte, error) {
	type obj = map[string]any
	conf := obj{
		"name":       "generic-veth",
		"cniVersion": "0.3.1",
		"plugins": []obj{
			{
				"type": "ptp",
				"ipam": obj{
					"type":    "host-local",
					"ranges":  [][]obj{{{"subnet": podCIDR.String(), "gateway": gateway.String()}}},
					"routes":  []obj{{"dst": "0.0.0.0/0"}},
					"dataDir": dataDir,
				},
			},
			{
				"type":         "portmap",
				"snat":         true,
				"capabilities": obj{"portMappings": true},
			},
			{
				"type": "cilium-cni",
			},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cilium: the chain's conflist: %w", err)
	}
	return b, nil
}

// ciliumNodeGVR is Cilium's CiliumNode resource.
var ciliumNodeGVR = schema.GroupVersionResource{Group: "cilium.io", Version: "v2", Resource: "ciliumnodes"}

// recordRouterIP records the Node's CiliumNode with cilium_host's address,
// the Pods' gateway, from which the agent takes it at start as one that
// restarts does (initFromK8s in pkg/node/sync/local_node_sync.go and
// AllocateIPs in daemon/infraendpoints/infra_ip_allocation.go, cilium
// v1.19.5); the agent updates the rest. Left to the agent's IPAM,
// cilium_host's address would be a random free one of podCIDR
// (pkg/ipam/service/allocator), which host-local, knowing nothing of it,
// may give a Pod too.
func (ch *ciliumChain) recordRouterIP(ctx context.Context, cp *harness.ControlPlane) error {
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		return fmt.Errorf("cilium: %w", err)
	}
	cn := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cilium.io/v2",
		"kind":       "CiliumNode",
		"metadata":   map[string]any{"name": ch.node},
		"spec": map[string]any{
			"addresses": []any{map[string]any{"type": "CiliumInternalIP", "ip": ch.routerIP.String()}},
		},
	}}
	if _, err := dyn.Resource(ciliumNodeGVR).Create(ctx, cn, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("cilium: record cilium_host's address: %w", err)
	}
	return nil
}
