package cluster

import "net/netip"

// The address plan. Every address lives only inside the test's namespaces.
var (
	// NodeLink is the link between the node and outside.
	NodeLink = netip.MustParsePrefix("198.18.0.0/24")
	// OutsideIP is outside's end of that link, the node's default gateway.
	OutsideIP = netip.MustParseAddr("198.18.0.1")
	// NodeIP is the node's InternalIP.
	NodeIP = netip.MustParseAddr("198.18.0.10")
	// PodCIDR is the node's Pod range; its first address is every Pod's
	// gateway.
	PodCIDR = netip.MustParsePrefix("198.18.1.0/24")
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

// ClusterDomain is the cluster's DNS domain unless [Options.ClusterDomain]
// says otherwise.
const ClusterDomain = "cluster.local"

// NodeName is the name of the cluster's only Node.
const NodeName = "node-1"

// KubeletPort is where the node agent serves the kubelet API (container
// logs, exec, running pods) on NodeIP, which the apiserver reaches for
// `kubectl logs`, `kubectl exec` and `kubectl run -i`: the kubelet's port.
const KubeletPort = 10250
