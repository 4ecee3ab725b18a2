package cluster

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/node"
)

// kubeProxy is kube-proxy in one of its modes over the node agent's own
// veth networking: a routed Pod network, translated per packet.
type kubeProxy struct{ mode string }

// KubeProxy is the dataplane of kube-proxy in mode ("iptables",
// "nftables").
func KubeProxy(mode string) Dataplane { return kubeProxy{mode: mode} }

func (k kubeProxy) Name() string { return k.mode }

func (k kubeProxy) Mode() string { return k.mode }

func (k kubeProxy) Capabilities() Capabilities {
	// kube-proxy DNATs per packet everywhere, masquerades nothing a Pod
	// sends out of the cluster (--cluster-cidr), and deletes the UDP
	// conntrack entries of an endpoint that stops serving.
	return Capabilities{Agent: "kube-proxy", MasqueradesExternal: true, MasqueradesNodeToClusterIP: true}
}

func (k kubeProxy) prepare(t testing.TB, c *Cluster) error {
	return harness.Executable(filepath.Join(c.opts.AssetsDir, "kube-proxy"))
}

func (kubeProxy) crdDirs(*Cluster) []string { return nil }

// controllers: Deployments -> ReplicaSets -> Pods, EndpointSlices, the
// default ServiceAccounts, kube-root-ca.crt, garbage collection (helm
// uninstall), namespace deletion; no cloud, no node IPAM.
func (kubeProxy) controllers() string { return "*,-nodeipam" }

func (kubeProxy) cni(*Cluster) *node.CNI { return nil }

func (kubeProxy) waitReady(testing.TB, *Cluster) error { return nil }

// start starts kube-proxy in its mode. Its conntrack
// settings are left alone: the conntrack table size and timeouts are the
// machine's, not the node namespace's.
func (k kubeProxy) start(t testing.TB, c *Cluster) error {
	n := c.Nodes[0]
	c.kubeProxy = harness.StartCmd(t, "kube-proxy", c.topo.node.Command(filepath.Join(c.opts.AssetsDir, "kube-proxy"),
		"--kubeconfig="+c.CP.Kubeconfig,
		"--proxy-mode="+k.mode,
		"--hostname-override="+n.Name,
		"--cluster-cidr="+n.PodCIDR.String(),
		"--nodeport-addresses="+n.IP.String()+"/32",
		"--conntrack-max-per-core=0",
		"--conntrack-tcp-timeout-established=0",
		"--conntrack-tcp-timeout-close-wait=0",
		"--metrics-bind-address=127.0.0.1:10249",
		"--healthz-bind-address=127.0.0.1:10256",
		"-v=1",
	))
	return nil
}

// HTTPFromNode is an HTTP client that connects from inside the node, as
// kubelet's probes and a node's Prometheus do.
func (c *Cluster) HTTPFromNode() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) { return c.DialNode(ctx, addr) },
	}}
}
