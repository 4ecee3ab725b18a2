package kubectlhairpin

import (
	"fmt"
	"slices"
	"strings"

	core "k8s.io/api/core/v1"
)

// directTarget judges a direct target: its annotations and zones as any
// target's, then, in place of the proxy's address and routes, the Service
// it answers with.
func directTarget(f *Facts, t TargetFacts) []Check {
	name := targetName(t)
	obj := serviceObject(t.Service)
	if t.DirectErr != nil {
		return []Check{newCheck(idTargetAnnotations, Fail, "target %s is disabled: %v", name, t.DirectErr).on(obj).
			hint("fix targets.%s.direct in the chart's values: {namespace: NS, name: NAME} of the controller's Service", chartName(name)), targetZones(f, t)}
	}
	return []Check{targetAnnotations(t), targetZones(f, t), directAddress(t)}
}

// directAddress: a direct target answers with the ClusterIPs of the
// Service it names, which must exist and have them.
func directAddress(t TargetFacts) Check {
	name := targetName(t)
	c := newCheck(idTargetAddress, OK, "target %s answers with %s (no PROXY)", name, t.Direct).on(serviceObject(t.Service), "service/"+t.Direct)
	svc := t.DirectService
	var ips []string
	if svc != nil {
		ips = svc.Spec.ClusterIPs
		if len(ips) == 0 && svc.Spec.ClusterIP != "" {
			ips = []string{svc.Spec.ClusterIP}
		}
	}
	switch {
	case !t.DirectRead:
		c.Status = Warn
		c.Message = fmt.Sprintf("target %s answers with %s (no PROXY), whose address could not be read", name, t.Direct)
		return c.hint("see cluster-access")
	case svc == nil:
		c.Status = Fail
		c.Message = fmt.Sprintf("target %s answers with %s (no PROXY), which does not exist: its hosts are not answered, they pass through", name, t.Direct)
		return c.hint("create it, or name the controller's Service in targets.%s.direct", chartName(name))
	case len(ips) == 0 || slices.Contains(ips, core.ClusterIPNone):
		c.Status = Fail
		c.Message = fmt.Sprintf("target %s answers with %s (no PROXY), which has no ClusterIP (headless): its hosts are not answered, they pass through", name, t.Direct)
		return c.hint("name a Service with a ClusterIP in targets.%s.direct: kubectl -n %s get svc %s -o wide", chartName(name), svc.Namespace, svc.Name)
	}
	c.Message += ": " + strings.Join(ips, ", ")
	return c
}

// directRequiresProxy fails each direct target in front of a controller
// that requires PROXY: in-cluster clients then reach it without a header,
// and it refuses them.
func directRequiresProxy(f *Facts) []Check {
	var out []Check
	for _, t := range f.Targets {
		if t.Direct == "" || t.DirectErr != nil {
			continue
		}
		name := targetName(t)
		for _, c := range f.Controllers {
			what := selectsAny(f, c, name)
			if slices.ContainsFunc(c.LBs, func(svc *core.Service) bool { return svc.Namespace+"/"+svc.Name == t.Direct }) ||
				c.Upstream != nil && c.Upstream.Namespace+"/"+c.Upstream.Name == t.Direct {
				what = append(what, "Service "+t.Direct)
			}
			if len(what) == 0 {
				continue
			}
			var reasons []string
			for _, r := range c.Reasons {
				reasons = append(reasons, r.Text)
			}
			out = append(out, newCheck(idTargetDirectRequiresProxy, Fail, "direct target %s fronts %s of %s %s, which requires PROXY (%s): in-cluster clients reach it without a header, and it refuses them",
				name, strings.Join(what, ", "), c.Kind, c.Object, strings.Join(reasons, "; ")).on(serviceObject(t.Service), c.Object).
				hint("a direct target is for controllers that need no PROXY header; make this one proxied: --set-json 'targets.%s.direct=null' and set targets.%s.upstream (namespace, name, ports) to %s", chartName(name), chartName(name), upstreamName(c)))
		}
	}
	if len(out) == 0 {
		out = append(out, newCheck(idTargetDirectRequiresProxy, OK, "no direct target fronts a controller that requires PROXY"))
	}
	return out
}

// upstreamName names the controller's Service for a hint.
func upstreamName(c Controller) string {
	if c.Upstream == nil {
		return "the controller's Service"
	}
	return "its Service " + c.Upstream.Namespace + "/" + c.Upstream.Name
}
