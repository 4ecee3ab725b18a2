package kubectlhairpin

import (
	"fmt"
	"strings"

	core "k8s.io/api/core/v1"
)

// lbVerdict is what a controller's LoadBalancer status says about the
// hairpin problem. kube-proxy (and CNIs that replace it) short-circuits
// every IP of status.loadBalancer.ingress[] unless its ipMode is Proxy
// (KEP-1860); a hostname is never short-circuited: in-cluster clients
// resolve it and go through the load balancer, header and all.
type lbVerdict struct {
	needed  bool   // some address is short-circuited, or nothing is known
	pending bool   // a LoadBalancer Service without any address yet
	why     string // for the report
}

// judgeLBs classifies the LoadBalancer Services of one controller.
func judgeLBs(lbs []*core.Service) lbVerdict {
	if len(lbs) == 0 {
		return lbVerdict{needed: true, why: "no LoadBalancer Service was found for it"}
	}
	var shortcut, proxied, hostnames, pending []string
	for _, svc := range lbs {
		name := svc.Namespace + "/" + svc.Name
		ingress := svc.Status.LoadBalancer.Ingress
		if len(ingress) == 0 {
			pending = append(pending, name)
		}
		for _, in := range ingress {
			switch {
			case in.IP != "" && in.IPMode != nil && *in.IPMode == core.LoadBalancerIPModeProxy:
				proxied = append(proxied, fmt.Sprintf("%s %s (ipMode: Proxy)", name, in.IP))
			case in.IP != "":
				shortcut = append(shortcut, fmt.Sprintf("%s %s (ipMode: %s)", name, in.IP, ipModeOf(in)))
			case in.Hostname != "":
				hostnames = append(hostnames, fmt.Sprintf("%s %s (hostname only)", name, in.Hostname))
			}
		}
	}
	switch {
	case len(shortcut) > 0:
		return lbVerdict{needed: true, why: "kube-proxy short-circuits " + strings.Join(shortcut, ", ")}
	case len(pending) > 0:
		return lbVerdict{needed: true, pending: true, why: "LoadBalancer " + strings.Join(pending, ", ") + " has no address yet"}
	}
	return lbVerdict{why: "nothing is short-circuited: " + strings.Join(append(proxied, hostnames...), ", ")}
}

func ipModeOf(in core.LoadBalancerIngress) string {
	if in.IPMode == nil {
		return "VIP, the default"
	}
	return string(*in.IPMode)
}
