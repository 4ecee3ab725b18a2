package kubectlhairpin

import (
	"fmt"
	"slices"
	"strings"

	core "k8s.io/api/core/v1"
)

// lbVerdict is what a controller's exposed Services say about the hairpin
// problem. The dataplane (kube-proxy, or Cilium replacing it)
// short-circuits every IP of status.loadBalancer.ingress[] unless its
// ipMode is Proxy (KEP-1860) and the dataplane honours that, and every
// spec.externalIPs address; a hostname is never short-circuited: in-cluster
// clients resolve it and go through the load balancer, header and all. Nor
// is a NodePort Service's: the load balancer that dials its NodePorts sits
// outside the cluster (Cozystack's exposeMethod Proxied puts the
// management cluster's ingress there), the hosts resolve to that load
// balancer's address, which the dataplane does not know, so in-cluster
// clients go out to it as outside clients do.
type lbVerdict struct {
	needed  bool   // some address is short-circuited, or nothing is known
	pending bool   // a LoadBalancer Service without any address yet
	why     string // for the report
}

// judgeLBs classifies the exposed Services of one controller on the
// dataplane d.
func judgeLBs(d Dataplane, lbs []*core.Service) lbVerdict {
	if len(lbs) == 0 {
		return lbVerdict{needed: true, why: "no LoadBalancer, NodePort or externalIPs Service was found for it"}
	}
	var shortcut, proxied, hostnames, pending, nodePorts []string
	for _, svc := range lbs {
		name := svc.Namespace + "/" + svc.Name
		for _, ip := range svc.Spec.ExternalIPs {
			shortcut = append(shortcut, fmt.Sprintf("%s %s (externalIPs)", name, ip))
		}
		ingress := svc.Status.LoadBalancer.Ingress
		switch {
		case len(svc.Spec.ExternalIPs) > 0:
		case svc.Spec.Type == core.ServiceTypeNodePort:
			nodePorts = append(nodePorts, fmt.Sprintf("%s NodePort %s (no address of the dataplane's: in-cluster clients reach it through the load balancer outside, as outside clients do)", name, nodePortList(svc)))
		case len(ingress) == 0:
			pending = append(pending, name)
		}
		for _, in := range ingress {
			switch {
			case in.IP != "" && in.IPMode != nil && *in.IPMode == core.LoadBalancerIPModeProxy:
				if why := d.ignoresIPMode(); why != "" {
					shortcut = append(shortcut, fmt.Sprintf("%s %s (ipMode: Proxy, but %s)", name, in.IP, why))
					continue
				}
				proxied = append(proxied, fmt.Sprintf("%s %s (ipMode: Proxy%s)", name, in.IP, honouredProviso(d)))
			case in.IP != "":
				shortcut = append(shortcut, fmt.Sprintf("%s %s (ipMode: %s)", name, in.IP, ipModeOf(in)))
			case in.Hostname != "":
				hostnames = append(hostnames, fmt.Sprintf("%s %s (hostname only)", name, in.Hostname))
			}
		}
	}
	switch {
	case len(shortcut) > 0:
		return lbVerdict{needed: true, why: d.Name() + " short-circuits " + strings.Join(shortcut, ", ")}
	case len(pending) > 0:
		return lbVerdict{needed: true, pending: true, why: "LoadBalancer " + strings.Join(pending, ", ") + " has no address yet"}
	}
	return lbVerdict{why: "nothing is short-circuited: " + strings.Join(slices.Concat(proxied, hostnames, nodePorts), ", ")}
}

// nodePortList is svc's NodePorts, comma-separated.
func nodePortList(svc *core.Service) string {
	var ports []string
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			ports = append(ports, fmt.Sprint(p.NodePort))
		}
	}
	return strings.Join(ports, ", ")
}

// exposed reports whether clients outside reach svc: at an address the
// dataplane knows (a LoadBalancer, or any Service with externalIPs), or
// through a load balancer of their own in front of its NodePorts.
func exposed(svc *core.Service) bool {
	return svc.Spec.Type == core.ServiceTypeLoadBalancer || svc.Spec.Type == core.ServiceTypeNodePort || len(svc.Spec.ExternalIPs) > 0
}

// honouredProviso qualifies an ipMode: Proxy taken to be honoured by a
// dataplane whose version is unknown.
func honouredProviso(d Dataplane) string {
	if d.Version != nil {
		return ""
	}
	return ", taken to be honoured: the dataplane's version is unknown"
}

func ipModeOf(in core.LoadBalancerIngress) string {
	if in.IPMode == nil {
		return "VIP, the default"
	}
	return string(*in.IPMode)
}
