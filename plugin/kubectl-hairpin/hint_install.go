package kubectlhairpin

import (
	"fmt"
	"strings"

	core "k8s.io/api/core/v1"
)

// The released chart, and its default target (manifests/coredns-hairpin/
// values.yaml, targets.ingress-nginx): ingress-nginx's own Service and
// class, which the chart installs unless told otherwise.
const (
	chartRef                 = "oci://ghcr.io/coredns-hairpin/charts/coredns-hairpin"
	defaultTargetName        = "ingress-nginx"
	defaultTargetClass       = "nginx"
	defaultUpstreamNamespace = "ingress-nginx"
	defaultUpstreamName      = "ingress-nginx-controller"
)

// defaultTargetUpstream is the controller Service the chart's default
// target relays to, when the cluster has it behind the default class and
// that controller requires PROXY behind a short-circuited load balancer;
// nil otherwise.
func defaultTargetUpstream(f *Facts) *core.Service {
	for _, c := range f.Controllers {
		if c.Upstream == nil || c.Upstream.Namespace != defaultUpstreamNamespace || c.Upstream.Name != defaultUpstreamName || !judgeLBs(f.Dataplane, c.LBs).needed {
			continue
		}
		for _, class := range c.IngressClasses {
			if class == defaultTargetClass {
				return c.Upstream
			}
		}
	}
	return nil
}

// installCommand is the one helm command that installs the chart with a
// target for every IngressClass and Gateway whose controller requires
// PROXY behind a short-circuited load balancer: the same targets, names
// and container ports as the report's other hints, so that pasting them
// too only repeats values. The chart's default target is kept for its own
// class and controller and disabled where the cluster has none. With no
// controller to front it is the chart's default install.
func installCommand(f *Facts) string {
	var values []string
	for _, c := range f.Controllers {
		if !judgeLBs(f.Dataplane, c.LBs).needed {
			continue
		}
		for _, class := range c.IngressClasses {
			values = append(values, targetValue(f, class, chartTarget{IngressClasses: []string{class}}, c.Upstream,
				func(o HostObject) bool { return o.Gateway == nil && o.IngressClass == class }))
		}
		for _, g := range c.Gateways {
			values = append(values, targetValue(f, g.Name, chartTarget{Gateways: []string{g.Key()}}, c.Upstream,
				func(o HostObject) bool { return o.Gateway != nil && o.Gateway.Key() == g.Key() }))
		}
	}
	cmd := []string{"helm install hairpin", chartRef}
	if v, ok := strings.CutPrefix(f.Options.Version, "v"); ok {
		cmd = append(cmd, "--version", v)
	}
	cmd = append(cmd, "-n", f.Options.TargetsNamespace, "--create-namespace")
	switch {
	case len(values) == 0:
		values = []string{fmt.Sprintf("targets.%s.zones=%s", defaultTargetName, jsonList([]string{"example.com"}))}
	case defaultTargetUpstream(f) == nil:
		values = append([]string{fmt.Sprintf("targets.%s.enabled=false", defaultTargetName)}, values...)
	}
	values = append(values, clusterValues(f)...)
	for _, v := range values {
		cmd = append(cmd, "--set-json", "'"+v+"'")
	}
	return strings.Join(cmd, " ")
}

// The chart's defaults for what a cluster may have otherwise
// (manifests/coredns-hairpin/values.yaml).
const (
	defaultClusterDomain           = "cluster.local"
	defaultCoreDNSServiceAccount   = "coredns"
	defaultCoreDNSServiceAccountNS = "kube-system"
)

// clusterValues are the chart values the cluster differs from the
// chart's defaults in, as its CoreDNS shows them: the cluster domain
// (the zone of the Corefile's kubernetes directive: the proxy dials its
// upstreams by their names in it, so a cozy.local cluster needs it), and
// the ServiceAccount CoreDNS runs as (the chart grants it the reads of
// the targets).
func clusterValues(f *Facts) []string {
	var values []string
	if d := clusterDomain(f); d != "" && d != defaultClusterDomain {
		values = append(values, fmt.Sprintf("clusterDomain=%q", d))
	}
	if len(f.CoreDNS) > 0 && f.CoreDNS[0].Pod != nil {
		p := f.CoreDNS[0].Pod
		if sa := p.Spec.ServiceAccountName; sa != "" && (sa != defaultCoreDNSServiceAccount || p.Namespace != defaultCoreDNSServiceAccountNS) {
			values = append(values, fmt.Sprintf(`coredns.serviceAccount={"namespace":%q,"name":%q}`, p.Namespace, sa))
		}
	}
	return values
}

// clusterDomain is the first forward zone of a kubernetes directive in
// the Corefile CoreDNS reads, without its final dot; "" when none was
// read.
func clusterDomain(f *Facts) string {
	if f.Corefile == nil {
		return ""
	}
	for _, b := range f.Corefile.Blocks {
		for _, z := range b.Kubernetes {
			if !strings.HasSuffix(z, ".in-addr.arpa.") && !strings.HasSuffix(z, ".ip6.arpa.") && z != "in-addr.arpa." && z != "ip6.arpa." && z != "." {
				return strings.TrimSuffix(z, ".")
			}
		}
	}
	return ""
}
