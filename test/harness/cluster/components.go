package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// KubeProxyModes are kube-proxy's modes the cluster runs in.
var KubeProxyModes = []string{"iptables", "nftables"}

// ProxyModes are the service dataplanes the e2e matrix runs: kube-proxy in
// each of its modes, and Cilium as kube-proxy replacement. HAIRPIN_CILIUM=0
// leaves the cilium mode out, for a quick local run on a machine that has
// not built the agent (10-15 minutes cold); `make test` always runs it.
var ProxyModes = proxyModes()

// EnvCilium set to 0 leaves the cilium mode out of [ProxyModes].
const EnvCilium = "HAIRPIN_CILIUM"

func proxyModes() []string {
	modes := append([]string{}, KubeProxyModes...)
	if os.Getenv(EnvCilium) != "0" {
		modes = append(modes, CiliumMode)
	}
	return modes
}

// startComponents starts kube-controller-manager, kube-scheduler and the
// service dataplane (kube-proxy, or cilium-agent) inside the node, each
// with the admin kubeconfig (inside the node, its 127.0.0.1 is the
// apiserver itself).
func (c *Cluster) startComponents(t testing.TB) error {
	bin := func(name string) string { return filepath.Join(c.opts.AssetsDir, name) }
	kc := c.CP.Kubeconfig
	// Deployments -> ReplicaSets -> Pods, EndpointSlices, the default
	// ServiceAccounts, kube-root-ca.crt, garbage collection (helm
	// uninstall), namespace deletion; no cloud, no node IPAM. In the
	// cilium mode no daemonset controller either: the cilium DaemonSet is a
	// record, its agent a process of the harness.
	controllers := "--controllers=*,-nodeipam"
	if c.opts.ProxyMode == CiliumMode {
		controllers += ",-daemonset"
	}
	c.kcm = harness.StartCmd(t, "kube-controller-manager", c.topo.node.Command(bin("kube-controller-manager"),
		"--kubeconfig="+kc,
		"--authentication-kubeconfig="+kc,
		"--authorization-kubeconfig="+kc,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=10257",
		"--service-cluster-ip-range="+ServiceCIDR.String(),
		"--root-ca-file="+c.CP.CAFile,
		"--service-account-private-key-file="+c.CP.ServiceAccountKeyFile,
		"--use-service-account-credentials=false",
		controllers,
		"--concurrent-deployment-syncs=5",
		"-v=1",
	))
	c.scheduler = harness.StartCmd(t, "kube-scheduler", c.topo.node.Command(bin("kube-scheduler"),
		"--kubeconfig="+kc,
		"--authentication-kubeconfig="+kc,
		"--authorization-kubeconfig="+kc,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=10259",
		"-v=1",
	))
	if c.opts.ProxyMode == CiliumMode {
		return c.startCilium(t, c.opts.Helm)
	}
	return c.startKubeProxy(t)
}

// startKubeProxy starts kube-proxy in the cluster's mode. Its conntrack
// settings are left alone: the conntrack table size and timeouts are the
// machine's, not the node namespace's.
func (c *Cluster) startKubeProxy(t testing.TB) error {
	switch c.opts.ProxyMode {
	case "iptables", "nftables":
	default:
		return fmt.Errorf("cluster: dataplane mode %q: want one of %v", c.opts.ProxyMode, ProxyModes)
	}
	c.kubeProxy = harness.StartCmd(t, "kube-proxy", c.topo.node.Command(filepath.Join(c.opts.AssetsDir, "kube-proxy"),
		"--kubeconfig="+c.CP.Kubeconfig,
		"--proxy-mode="+c.opts.ProxyMode,
		"--hostname-override="+NodeName,
		"--cluster-cidr="+PodCIDR.String(),
		"--nodeport-addresses="+NodeIP.String()+"/32",
		"--conntrack-max-per-core=0",
		"--conntrack-tcp-timeout-established=0",
		"--conntrack-tcp-timeout-close-wait=0",
		"--metrics-bind-address=127.0.0.1:10249",
		"--healthz-bind-address=127.0.0.1:10256",
		"-v=1",
	))
	return nil
}
