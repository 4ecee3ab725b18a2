package kubectlhairpin

import (
	"strings"
)

// checkLoadBalancers names the dataplane, says per controller whether its
// load balancer's status makes hairpin needed at all, and warns of targets
// that front a controller that needs none.
func checkLoadBalancers(f *Facts) []Check {
	out := []Check{checkDataplane(f)}
	unnecessary := 0
	for _, c := range f.Controllers {
		v := judgeLBs(f.Dataplane, c.LBs)
		objects := []string{c.Object}
		for _, lb := range c.LBs {
			objects = append(objects, serviceObject(lb))
		}
		switch {
		case v.pending:
			out = append(out, newCheck(idLBStatus, Warn, "%s %s: %s; hairpin is needed once it has an IP", c.Kind, c.Object, v.why).on(objects...).
				hint("re-run once the cloud controller has set status.loadBalancer.ingress: kubectl -n %s get svc %s", c.LBs[0].Namespace, c.LBs[0].Name))
		case len(c.LBs) == 0:
			out = append(out, newCheck(idLBStatus, Warn, "%s %s: %s; hairpin is needed only where %s short-circuits an address, so this is assumed", c.Kind, c.Object, v.why, f.Dataplane.Name()).on(objects...).
				hint("if clients reach it through a load balancer that %s does not know (no LoadBalancer Service, no externalIPs), no target is needed", f.Dataplane.Name()))
		case v.needed:
			out = append(out, newCheck(idLBStatus, OK, "%s %s needs hairpin: %s", c.Kind, c.Object, v.why).on(objects...))
		default:
			out = append(out, newCheck(idLBStatus, OK, "%s %s needs no hairpin: %s", c.Kind, c.Object, v.why).on(objects...))
			for _, t := range f.Targets {
				name := t.Service.Namespace + "/" + t.Service.Name
				if what := selectsAny(f, c, name); len(what) > 0 {
					unnecessary++
					out = append(out, newCheck(idTargetUnnecessary, Warn, "target %s is unnecessary: it selects %s, whose controller needs no hairpin (%s)", name, strings.Join(what, ", "), v.why).on("service/"+name, c.Object).
						hint("drop it with --set targets.%s.enabled=false, or remove those from its targets.%s.ingressClasses/gatewayClasses/gateways; its hosts then resolve to the load balancer, which sends PROXY itself", chartName(name), chartName(name)))
				}
			}
		}
	}
	if unnecessary == 0 && len(f.Targets) > 0 {
		out = append(out, newCheck(idTargetUnnecessary, OK, "no target fronts a controller that needs no hairpin"))
	}
	return out
}
