package cluster

import "slices"

// CozyTenant is the shape of a Cozystack tenant cluster's dataplane
// ([Shapes]): Cilium as packages/apps/kubernetes installs it into a tenant
// (templates/helmreleases/cilium.yaml of cozystack/cozystack at 3c780acd),
// the only CNI with its own IPAM, as kube-proxy replacement with no
// kube-proxy, in tunnel mode, masquerading what Pods send out of the node.
// On one node the tunnel carries nothing: every Pod is local.
const CozyTenant = "cozy-tenant"

// cozyTenant is the [CozyTenant] dataplane.
func cozyTenant() Dataplane {
	return ciliumDataplane{shape: cozyTenantShape, values: cozyTenantShape.values()}
}

// cozyTenantValueFiles are the tenant Cilium's values files: the released
// chart's, packages/system/cilium/values.yaml alone (no networking
// variant's: a tenant's Cilium is not chained on Kube-OVN and runs on
// Talos VMs whose cgroup2 its chart mounts), then what the tenant's
// HelmRelease sets over it.
var cozyTenantValueFiles = []valueFile{
	{"released-chart.yaml", ""},
	{"values.yaml", "cilium"},
	{"tenant-helmrelease.yaml", "cilium"},
}

// cozyTenantDeviations is every difference of the [CozyTenant] dataplane
// from Cozystack's tenant Cilium, as [ciliumDeviations] is the cilium
// mode's.
var cozyTenantDeviations = append(slices.Clone(commonCiliumDeviations),
	Deviation{Path: "cgroup.autoMount", Cozystack: "on: the mount-cgroup init container mounts cgroup2 at cgroup.hostRoot (/run/cilium/cgroupv2)", Ours: "the harness bind-mounts the node's child cgroup there",
		Reason: "no init container runs (the agent is a process, not a Pod), and a fresh cgroup2 mount shows the hierarchy's root, the machine's"},
	Deviation{Path: "k8sServiceHost, k8sServicePort", Cozystack: "kubernetes-foo.tenant-foo.svc:6443 (the tenant's Kamaji Service)", Ours: "the test apiserver, through the agent's --k8s-kubeconfig-path; the DaemonSet record keeps Cozystack's",
		Reason: "no Kamaji runs here: the control plane is the node's, and the agent is given its kubeconfig"},
	Deviation{Path: "cni.exclusive", Cozystack: true, Ours: false, Value: true,
		Reason: "the agent writes its conflist into the test's own folder, where it would rename nothing else; false keeps it from touching any other CNI folder",
		Config: []string{"cni-exclusive"}},
	Deviation{Path: "endpointHealthChecking.enabled", Cozystack: true, Ours: false, Value: true, Reason: noHealth,
		Config: []string{"enable-endpoint-health-checking"}},
)
