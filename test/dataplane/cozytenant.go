package dataplane

import (
	"net/netip"

	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
)

// CozyTenantDistribution names the stock Corefile of a Cozystack tenant
// cluster's CoreDNS (e2e.Distributions), whose workload kube-dns takes
// from [kubeDNSWorkloads].
const CozyTenantDistribution = "cozystack-tenant"

// CozyPlatformDomain is the platform's domain of a Cozystack tenant's
// node: the node's own search domain (Cozystack's Talos reconcile job
// writes the management cluster's domain there), which kubelet appends
// after the tenant's cluster.local entries.
const CozyPlatformDomain = "cozy.local"

// CozyTenantIngress is a tenant's own ingress-nginx as Cozystack renders
// it with exposeMethod LoadBalancer (packages/apps/kubernetes,
// templates/helmreleases/ingress-nginx.yaml of cozystack/cozystack at
// 3c780acd: namespace cozy-ingress-nginx, fullnameOverride ingress-nginx,
// so the Service ingress-nginx-controller; the chart's default class
// nginx; use-proxy-protocol from the addon's valuesOverride), which
// examples/cozystack-tenant.yaml targets.
var CozyTenantIngress = cluster.IngressController{
	Namespace: "cozy-ingress-nginx", Class: "nginx", Hosts: []string{"shop.foo.example.net"},
	LBIP: netip.MustParseAddr("203.0.113.30"),
}

// CozyTenantZone is the zone of [CozyTenantIngress]'s host, which the
// tenant's install names on the command line.
const CozyTenantZone = "foo.example.net"

// KubeDNSClusterIPDeviation is the tenant's kube-dns address: Cozystack's
// (packages/apps/kubernetes/templates/helmreleases/coredns.yaml of
// cozystack/cozystack at 3c780acd), and the test cluster's.
var KubeDNSClusterIPDeviation = cluster.Deviation{Path: "kube-system/kube-dns spec.clusterIP", Cozystack: "10.95.0.10", Ours: cluster.DNSIP.String(),
	Reason: "10.95.0.10 is a private-range address, which the test cluster may not use: its Services come from " + cluster.ServiceCIDR.String()}

// CozyTenantDeviations are the tenant cluster's differences from
// Cozystack's rendering beyond Cilium's (cluster.CozyTenant's values):
// its CoreDNS and its ingress.
var CozyTenantDeviations = []cluster.Deviation{
	KubeDNSClusterIPDeviation,
	{Path: "CoreDNS image", Cozystack: "registry.k8s.io/coredns/coredns:v1.12.4", Ours: "ours, at the chart's appVersion",
		Reason: "the product's image-only activation, as examples/cozystack-coredns/values.yaml swaps it"},
	{Path: "CoreDNS Deployment", Cozystack: "the coredns chart's (labels app.kubernetes.io/*, ports udp-53/tcp-53, readiness after 30 s, 128Mi)", Ours: "kubeadm's with Cozystack's ServiceAccount, replicas and coredns-custom mount",
		Reason: "what the hairpin chart and kubectl hairpin check read is the same: the k8s-app: kube-dns label, the ServiceAccount, the Corefile and its mounts"},
	{Path: "ingress-nginx kind", Cozystack: "DaemonSet on nodes labelled node-role.kubernetes.io/ingress-nginx", Ours: "Deployment",
		Reason: "the harness runs its ingress controllers as Deployments (cluster.IngressController); on one node either runs one Pod there"},
	{Path: "ingress-nginx Service externalTrafficPolicy", Cozystack: "Local (packages/system/ingress-nginx/values.yaml)", Ours: "Cluster",
		Reason: "the one node holds the controller's Pod, and the load balancer's PROXY header carries the client's address either way"},
	{Path: "ingress-nginx controller", Cozystack: "ghcr.io/cozystack/ingress-nginx-with-protobuf-exporter/controller:v1.11.2", Ours: "nginx configured as ingress-nginx renders use-proxy-protocol",
		Reason: "no image is pulled here; what matters is that every listener requires the PROXY header"},
}
