package cluster

import (
	"fmt"
	"net/netip"
)

// The address plan. Every address lives only inside the test's namespaces.
var (
	// NodeLink is the link between the nodes and outside.
	NodeLink = netip.MustParsePrefix("198.18.0.0/24")
	// OutsideIP is outside's end of that link, the nodes' default gateway.
	OutsideIP = netip.MustParseAddr("198.18.0.1")
	// ServiceCIDR is the Service ClusterIP range.
	ServiceCIDR = netip.MustParsePrefix("198.19.0.0/16")
	// KubernetesIP is the ClusterIP of default/kubernetes.
	KubernetesIP = netip.MustParseAddr("198.19.0.1")
	// DNSIP is the ClusterIP of kube-system/kube-dns, kubelet's --cluster-dns.
	DNSIP = netip.MustParseAddr("198.19.0.10")
	// LBPool is where LoadBalancer IPs come from.
	LBPool = netip.MustParsePrefix("203.0.113.0/26")
	// PublicDNSIP is the address of the public DNS, which the node's
	// resolv.conf names.
	PublicDNSIP = netip.MustParseAddr("203.0.113.53")
	// ExternalClientIP is the source address of clients "on the internet",
	// in outside.
	ExternalClientIP = netip.MustParseAddr("203.0.113.100")
)

// The nodes' share of the plan, which [PlanNode] counts out: node i's
// address is firstNodeAddr plus i on NodeLink, its Pods get the (i+1)th /24
// of podRanges.
var (
	firstNodeAddr = netip.MustParseAddr("198.18.0.10")
	podRanges     = netip.MustParsePrefix("198.18.0.0/16")
)

// maxNodes is how many nodes the plan has room for: NodeLink's addresses
// from firstNodeAddr up, short of its broadcast address.
const maxNodes = 255 - 10

// ClusterDomain is the cluster's DNS domain unless [Options.ClusterDomain]
// says otherwise.
const ClusterDomain = "cluster.local"

// KubeletPort is where the node agent serves the kubelet API (container
// logs, exec, running pods) on its node's IP, which the apiserver reaches
// for `kubectl logs`, `kubectl exec` and `kubectl run -i`: the kubelet's
// port.
const KubeletPort = 10250

// NodePlan is one node's share of the address plan: what the node agent,
// the dataplane and outside's routes know of that node.
type NodePlan struct {
	// Name is the Node object's name.
	Name string
	// IP is the node's InternalIP, its address on NodeLink.
	IP netip.Addr
	// PodCIDR is the node's Pod range, the Node's spec.podCIDR; its first
	// address is the gateway of the node's Pods.
	PodCIDR netip.Prefix
	// Gateway is the node's default gateway: outside's end of NodeLink.
	Gateway netip.Addr
	// Dev is the node's end of its link to outside, OutsideDev outside's.
	Dev, OutsideDev string
}

// PlanNode is the plan of node i, counting from 0: node-1 at 198.18.0.10
// with its Pods in 198.18.1.0/24, node-2 at 198.18.0.11 with 198.18.2.0/24,
// and so on.
func PlanNode(i int) (NodePlan, error) {
	if i < 0 || i >= maxNodes {
		return NodePlan{}, fmt.Errorf("cluster: no node %d in the plan: it has room for %d", i, maxNodes)
	}
	ip := firstNodeAddr.As4()
	ip[3] += byte(i)
	pods := podRanges.Addr().As4()
	pods[2] = byte(i + 1)
	return NodePlan{
		Name:       fmt.Sprintf("node-%d", i+1),
		IP:         netip.AddrFrom4(ip),
		PodCIDR:    netip.PrefixFrom(netip.AddrFrom4(pods), 24),
		Gateway:    OutsideIP,
		Dev:        "eth0",
		OutsideDev: fmt.Sprintf("node%d", i),
	}, nil
}

// linkAddr is the node's address with NodeLink's length, as its Dev holds
// it.
func (p NodePlan) linkAddr() netip.Prefix { return netip.PrefixFrom(p.IP, NodeLink.Bits()) }

// podRoute is outside's route back to the node's Pods. Pod traffic leaves
// the node unmasqueraded, as with a routed (BGP) Pod network.
func (p NodePlan) podRoute() []string { return []string{p.PodCIDR.String(), "via", p.IP.String()} }
