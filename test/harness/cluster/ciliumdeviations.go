package cluster

import "slices"

// Reasons that several rows share.
const (
	noEnvoy  = "no Envoy binary can be had here (Cilium's cilium-envoy image carries it, and it is not built from Go)"
	noHealth = "no cilium-health binary is built (build/tools.sh builds cilium-agent and cilium-cni), and one node has no peer to probe"
)

// ciliumDeviations is every difference of the cilium dataplane from
// Cozystack's Cilium. The agent's values are Cozystack's files
// ([ciliumValueFiles]) with the Ours of the rows that are chart values
// ([DefaultCiliumValues]); a test holds the rendered cilium-config to
// Cozystack's rendering but for the rows' Config keys.
var ciliumDeviations = append(slices.Clone(commonCiliumDeviations),
	// Talos's node, which this machine is not.
	Deviation{Path: "cgroup.hostRoot", Cozystack: "/sys/fs/cgroup", Ours: "/run/cilium/cgroupv2", Value: true,
		Reason: "the agent's cgroup root is the node's child of the cgroup2 hierarchy, bind-mounted there in the agent's own mount namespace (agentMounts): the machine's /sys/fs/cgroup holds cgroup v1 controllers, and the hierarchy's root would reach every process of the machine",
		Config: []string{"cgroup-root"}},
	Deviation{Path: "cgroup.autoMount", Cozystack: "off: Talos mounts cgroup2 at /sys/fs/cgroup", Ours: "off: the harness bind-mounts the node's child cgroup at cgroup.hostRoot",
		Reason: "no mount-cgroup init container runs (the agent is a process, not a Pod), and a fresh cgroup2 mount shows the hierarchy's root, the machine's"},
	Deviation{Path: "k8sServiceHost, k8sServicePort", Cozystack: "localhost:7445 (Talos's KubePrism)", Ours: "the test apiserver, through the agent's --k8s-kubeconfig-path; the DaemonSet record keeps Cozystack's",
		Reason: "no KubePrism runs on this node: the agent is given the control plane's kubeconfig"},
	// Kube-OVN's pieces: cilium-cni is chained (generic-veth) on the CNI
	// reference plugins' ptp and host-local in Kube-OVN's place, whose
	// module is not served (ciliumchain.go).
	Deviation{Path: "devices", Cozystack: "ovn0 genev_sys_6081", Ours: nil, Value: true,
		Reason: "ovn0 and genev_sys_6081 are Kube-OVN's devices, which ptp does not make; the agent detects the node's own (eth0; the Pods' veths have no default route, so it leaves them out)",
		Config: []string{"devices"}},
	Deviation{Path: "cozy-cilium/cni-configuration ConfigMap", Cozystack: "Kube-OVN, portmap (snat) and cilium-cni, chained (packages/system/cilium/templates/cni.yaml)",
		Ours:   "ptp with host-local IPAM in the node's podCIDR (state in the test's folder), portmap and cilium-cni: the same list with ptp in Kube-OVN's place",
		Reason: "Kube-OVN cannot be built here (its module is not served); ptp, like Kube-OVN, makes the Pod's veth and gives it its address, and cilium-cni attaches to that veth"},
	Deviation{Path: "cilium_host's address", Cozystack: "Kube-OVN's gateway of the node's subnet", Ours: "the podCIDR's first address, written into the node's CiliumNode (spec.addresses CiliumInternalIP) before the agent starts",
		Reason: "left alone, the agent takes a random free address of the podCIDR, which host-local may also hand out; .1 is the gateway host-local's range leaves out"},
	// Cozystack's other package of the variant.
	Deviation{Path: "CiliumClusterwideNetworkPolicy restrict-system-components", Cozystack: "applied (packages/system/cilium-networkpolicy): denies world ingress to the node's ports 2379, 2380, 3367, 7946, 8123, 9120, 9121, 9140, 9141, 9443, 10250, 10257, 10259",
		Ours:   "not applied",
		Reason: "not applied until the stories have run under it: it is the host firewall's first policy here, and puts the node's own endpoint under enforcement; the ports it closes to world are reached here only from the node itself"},
)

// commonCiliumDeviations are the deviations of every shape of Cilium's
// ([ciliumShapes]): what no shape can have on this machine.
var commonCiliumDeviations = []Deviation{
	// Envoy, and what needs it.
	// envoy.enabled stays Cozystack's true: without the L7 proxy the chart
	// renders no Envoy DaemonSet and no Envoy setting (a row for it would
	// change nothing).
	{Path: "l7Proxy", Cozystack: true, Ours: false, Value: true, Reason: noEnvoy + ": the agent's L7 proxy is Envoy, and without it the chart renders no cilium-envoy DaemonSet",
		Config: []string{"enable-l7-proxy", "external-envoy-proxy", "proxy-prometheus-port"}},
	{Path: "gatewayAPI.enabled", Cozystack: true, Ours: false, Value: true, Reason: noEnvoy + ": Cilium's Gateway API is served by Envoy, and the Gateway stories run nginx as NGINX Gateway Fabric renders it",
		Config: []string{"enable-envoy-config", "envoy-config-retry-interval", "enable-gateway-api", "enable-gateway-api-alpn", "enable-gateway-api-app-protocol", "enable-gateway-api-proxy-protocol",
			"enable-gateway-api-secrets-sync", "gateway-api-hostnetwork-enabled", "gateway-api-hostnetwork-nodelabelselector",
			"gateway-api-secrets-namespace", "gateway-api-service-externaltrafficpolicy", "gateway-api-xff-num-trusted-hops"}},
	{Path: "agent paths (procfs, lib-dir, write-cni-conf-when-ready, cni-log-file)", Cozystack: "the DaemonSet's container paths (/host/proc, /host/etc/cni/net.d)", Ours: "the agent's flags: the node's /proc and the test's own folders",
		Reason: "the agent is a process of the harness in the node's namespaces, not a container with the host mounted at /host"},
	// Cilium's other processes.
	{Path: "healthChecking", Cozystack: true, Ours: false, Value: true, Reason: noHealth,
		Config: []string{"enable-health-checking"}},
	{Path: "cilium-operator process", Cozystack: "one replica", Ours: "none",
		Reason: "the operator is neither built nor pulled here, and one node needs nothing of it: IPAM from Node.spec.podCIDR (ipam.mode kubernetes), identities in CRDs that the agent allocates, no CiliumLoadBalancerIPPool for its LB-IPAM (the harness writes LoadBalancer status as MetalLB does), and the harness installs the CRDs"},
	{Path: "cilium-operator Deployment spec.paused", Cozystack: false, Ours: true,
		Reason: "recorded as rendered (its image names Cilium's version for `kubectl hairpin check`) but paused, so kube-controller-manager's deployment controller, which every other Deployment needs, makes it no ReplicaSet and the node agent is never asked to run the operator's image",
		record: func(in *ciliumInstall) { in.operator.Spec.Paused = true }},
	{Path: "cilium DaemonSet Pods", Cozystack: "one per node", Ours: "none: kube-controller-manager runs without its daemonset controller",
		Reason: "the agent is a process of the harness; no other DaemonSet runs here"},
	{Path: "the chart's other objects (ServiceAccounts, RBAC, the cilium-secrets Namespace)", Cozystack: "installed", Ours: "not recorded",
		Reason: "the agent reaches the apiserver with the control plane's admin kubeconfig, and nothing else reads them"},
	// The image.
	{Path: "image", Cozystack: "ghcr.io/cozystack/cozystack/cilium:v1.6.0@sha256:136a7dff… (recorded)", Ours: "cilium-agent and cilium-cni v1.19.5, built from github.com/cilium/cilium by build/tools.sh, run as processes",
		Reason: "an image cannot be pulled here; Cozystack's image is upstream's v1.19.5 but for the patch below"},
	{Path: "bpf/bpf_host.c", Cozystack: "patched: IPv6 passes to the kernel stack under the host firewall while the IPv6 datapath is off (packages/system/cilium/images/cilium/patches)", Ours: "upstream's: the host firewall drops the node's IPv6",
		Reason: "the agent compiles the module's BPF sources, which carry no patch; every address of the test cluster is IPv4 (198.18.0.0/15, 203.0.113.0/24), so only unused IPv6 (link-local Neighbor Discovery) is dropped"},
}

// DefaultCiliumValues are the chart values of the cilium dataplane on top of
// Cozystack's files: the Ours of every row of the deviation table that is
// a chart value. A fresh map each call: a caller may change its copy.
func DefaultCiliumValues() CiliumValues { return ciliumModeShape.values() }
