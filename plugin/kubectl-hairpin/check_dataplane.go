package kubectlhairpin

import (
	"fmt"
	"strings"

	core "k8s.io/api/core/v1"
)

// checkDataplane names who short-circuits the load balancers' addresses,
// and warns when it ignores the ipMode: Proxy that a controller's load
// balancer counts on, or when that cannot be known.
func checkDataplane(f *Facts) Check {
	d := f.Dataplane
	c := newCheck(idDataplane, OK, "the Service dataplane is %s%s: it short-circuits LoadBalancer IPs and externalIPs", d, evidence(d.Evidence)).on(d.Objects...)
	proxied := ipModeProxyAddresses(f)
	why := d.ignoresIPMode()
	switch {
	case d.Unknown != "":
		c.Status = Warn
		c.Message += "; " + d.Unknown
		return c.hint("grant the read-only role of this page (get configmaps, list daemonsets), or read it by hand: kubectl -n kube-system get configmap %s -o jsonpath='{.data.%s}'; kubectl get ds -A -l %s=%s", ciliumConfig, ciliumKPRKey, k8sAppLabel, ciliumName)
	case why != "" && len(proxied) > 0:
		c.Status = Warn
		c.Message += fmt.Sprintf(", and ipMode: Proxy does not help: %s; so %s %s short-circuited all the same", why, listed(proxied), verb(len(proxied), "is", "are"))
		return c.hint("%s; until then the controllers behind them need a target (see their lb-status lines)", d.upgradeHint())
	case why != "":
		c.Message += fmt.Sprintf(", and ipMode: Proxy would not help: %s", why)
	case d.Version == nil && len(proxied) > 0:
		c.Status = Warn
		c.Message += fmt.Sprintf("; its version is unknown, so whether it honours the ipMode: Proxy of %s is too (taken to be honoured)", listed(proxied))
		return c.hint("if it is kube-proxy before 1.30 or Cilium before 1.17 or 1.18.0, those controllers need a target: %s", d.upgradeHint())
	default:
		c.Message += ", but not those with ipMode: Proxy"
	}
	return c
}

// evidence is " (what showed it; ...)", or "" when nothing did.
func evidence(e []string) string {
	if len(e) == 0 {
		return ""
	}
	return " (" + strings.Join(e, "; ") + ")"
}

// ipModeProxyAddresses are the load-balancer IPs with ipMode: Proxy of the
// controllers that require PROXY.
func ipModeProxyAddresses(f *Facts) []string {
	var out []string
	for _, c := range f.Controllers {
		for _, svc := range c.LBs {
			for _, in := range svc.Status.LoadBalancer.Ingress {
				if in.IP != "" && in.IPMode != nil && *in.IPMode == core.LoadBalancerIPModeProxy {
					out = append(out, fmt.Sprintf("%s/%s %s", svc.Namespace, svc.Name, in.IP))
				}
			}
		}
	}
	return out
}
