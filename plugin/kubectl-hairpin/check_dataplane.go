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
		c.Message += "; " + d.Unknown + versionCases(d, proxied)
		return c.hint("grant the read-only role of this page (get configmaps, list daemonsets and deployments), or read them by hand: kubectl get configmap -A --field-selector metadata.name=%s -o yaml | grep %s; kubectl get ds,deploy -A -o wide | grep -e %s -e %s", ciliumConfig, ciliumKPRKey, ciliumName, kubeProxyName)
	case why != "" && len(proxied) > 0:
		c.Status = Warn
		c.Message += fmt.Sprintf(", and ipMode: Proxy does not help: %s; so %s %s short-circuited all the same", why, listed(proxied), verb(len(proxied), "is", "are"))
		return c.hint("%s; until then the controllers behind them need a target (see their lb-status lines)", d.upgradeHint())
	case why != "":
		c.Message += fmt.Sprintf(", and ipMode: Proxy would not help: %s", why)
	case d.Version == nil:
		noVersion := d.NoVersion
		if noVersion == "" {
			noVersion = "its version is unknown"
		}
		c.Message += "; " + noVersion + versionCases(d, proxied)
		if len(proxied) > 0 {
			c.Status = Warn
			return c.hint("find the version (%s); if it ignores ipMode, the controllers behind them need a target (see their lb-status lines): %s", d.versionHowTo(), d.upgradeHint())
		}
	default:
		c.Message += ", but not those with ipMode: Proxy"
	}
	return c
}

// versionCases is, for a dataplane of unknown version, the verdict of each
// version it may have, and that the addresses proxied are taken not to be
// short-circuited: a check never fails on a version it does not know.
func versionCases(d Dataplane, proxied []string) string {
	if d.Version != nil {
		return ""
	}
	s := ": " + d.ipModeCases()
	if len(proxied) > 0 {
		s += fmt.Sprintf("; so whether %s %s short-circuited is unknown too (taken not to be)", listed(proxied), verb(len(proxied), "is", "are"))
	}
	return s
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
