package kubectlhairpin

import (
	"fmt"
	"slices"
	"strings"
)

// checkControllers lists the controllers found to require PROXY, and for
// each IngressClass and Gateway they serve, whether a target selects it.
func checkControllers(f *Facts) []Check {
	if len(f.Controllers) == 0 {
		return []Check{newCheck(idControllersFound, Warn, "no controller that requires PROXY was found (ingress-nginx use-proxy-protocol, cloud LB annotations, Envoy Gateway ClientTrafficPolicy, NGINX Gateway Fabric NginxProxy)").
			hint("if yours requires PROXY anyway, add a target for its class by hand: --set-json 'targets.NAME={\"zones\":[\"example.com\"],\"ingressClasses\":[\"CLASS\"],\"upstream\":{\"namespace\":\"NS\",\"name\":\"SERVICE\",...}}'")}
	}
	var out []Check
	for _, c := range f.Controllers {
		out = append(out, controllerFound(c))
		verdict := judgeLBs(f.Dataplane, c.LBs)
		for _, class := range c.IngressClasses {
			out = append(out, ingressClassTarget(f, c, class, verdict))
		}
		for _, g := range c.Gateways {
			out = append(out, gatewayTarget(f, c, g, verdict))
		}
	}
	return out
}

func controllerFound(c Controller) Check {
	var reasons, objects []string
	for _, r := range c.Reasons {
		reasons = append(reasons, r.Text)
		objects = append(objects, r.Object)
	}
	var serves []string
	for _, class := range c.IngressClasses {
		serves = append(serves, fmt.Sprintf("ingress class %q", class))
	}
	for _, g := range c.Gateways {
		serves = append(serves, "Gateway "+g.Key())
	}
	if len(serves) == 0 {
		return newCheck(idControllersFound, Warn, "%s %s requires PROXY (%s), but no IngressClass or Gateway was found behind it", c.Kind, c.Object, strings.Join(reasons, "; ")).on(c.Object).on(objects...).
			hint("if its controller serves hosts, add a target for its class, with this Service as the upstream: --set-json 'targets.NAME={\"zones\":[...],\"ingressClasses\":[\"CLASS\"],\"upstream\":{...}}'")
	}
	return newCheck(idControllersFound, OK, "%s %s requires PROXY (%s); it serves %s", c.Kind, c.Object, strings.Join(reasons, "; "), strings.Join(serves, ", ")).on(c.Object).on(objects...)
}

func ingressClassTarget(f *Facts, c Controller, class string, v lbVerdict) Check {
	objects := []string{"ingressclass/" + class, c.Object}
	if !v.needed {
		return newCheck(idIngressClassTarget, OK, "ingress class %q needs no target: %s", class, v.why).on(objects...)
	}
	if !f.TargetsRead {
		return newCheck(idIngressClassTarget, Warn, "ingress class %q is served by a controller that requires PROXY; whether a target selects it is unknown (targets could not be read)", class).on(objects...).hint("see cluster-access")
	}
	if sel := f.TargetSet.ForIngress(class); sel.Name() != "" {
		return newCheck(idIngressClassTarget, OK, "ingress class %q is served by a controller that requires PROXY, and target %s selects it", class, sel.Name()).on(objects...).on("service/" + sel.Name())
	}
	if off := disabledFor(f, class, nil); len(off) > 0 {
		return newCheck(idIngressClassTarget, Fail, "ingress class %q is served by a controller that requires PROXY, and no target selects it: %s would, but %s disabled", class, listed(off), verb(len(off), "is", "are")).on(objects...).
			hint("fix %s (see its target-zones and target-annotations lines)", listed(off))
	}
	return newCheck(idIngressClassTarget, Fail, "ingress class %q is served by a controller that requires PROXY, and no target selects it", class).on(objects...).
		hint("%s", addTargetHint(f, class, chartTarget{IngressClasses: []string{class}}, c.Upstream, func(o HostObject) bool { return o.Gateway == nil && o.IngressClass == class }))
}

func gatewayTarget(f *Facts, c Controller, g GatewayRef, v lbVerdict) Check {
	objects := []string{gatewayObject(g)}
	if !v.needed {
		return newCheck(idGatewayTarget, OK, "Gateway %s needs no target: %s", g.Key(), v.why).on(objects...)
	}
	if !f.TargetsRead {
		return newCheck(idGatewayTarget, Warn, "Gateway %s is served by a controller that requires PROXY; whether a target selects it is unknown (targets could not be read)", g.Key()).on(objects...).hint("see cluster-access")
	}
	if sel := f.TargetSet.ForGateway(g.Namespace, g.Name, g.Class); sel.Name() != "" {
		return newCheck(idGatewayTarget, OK, "Gateway %s (class %s) is served by a controller that requires PROXY, and target %s selects it", g.Key(), g.Class, sel.Name()).on(objects...).on("service/" + sel.Name())
	}
	if off := disabledFor(f, "", &g); len(off) > 0 {
		return newCheck(idGatewayTarget, Fail, "Gateway %s (class %s) is served by a controller that requires PROXY, and no target selects it: %s would, but %s disabled", g.Key(), g.Class, listed(off), verb(len(off), "is", "are")).on(objects...).
			hint("fix %s (see its target-zones and target-annotations lines)", listed(off))
	}
	return newCheck(idGatewayTarget, Fail, "Gateway %s (class %s) is served by a controller that requires PROXY, and no target selects it", g.Key(), g.Class).on(objects...).
		hint("%s", addTargetHint(f, g.Name, chartTarget{Gateways: []string{g.Key()}}, c.Upstream, func(o HostObject) bool {
			return o.Gateway != nil && o.Gateway.Key() == g.Key()
		}))
}

// selectsAny lists the IngressClasses and Gateways of c for which target
// (namespace/name) is the one chosen.
func selectsAny(f *Facts, c Controller, target string) []string {
	var out []string
	for _, class := range c.IngressClasses {
		if f.TargetSet.ForIngress(class).Name() == target {
			out = append(out, fmt.Sprintf("ingress class %q", class))
		}
	}
	for _, g := range c.Gateways {
		if f.TargetSet.ForGateway(g.Namespace, g.Name, g.Class).Name() == target {
			out = append(out, "Gateway "+g.Key())
		}
	}
	slices.Sort(out)
	return out
}
