package kubectlhairpin

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
	"github.com/coredns-hairpin/hairpin/proxy/routeflag"

	core "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// metricUpstreamUp is the proxy's per-route health (proxy/metrics.go).
const metricUpstreamUp = "hairpin_proxy_upstream_up"

// checkTargets judges every target Service: its annotations, zones,
// address, ready proxy endpoints, and each route's upstream health as the
// proxy pods report it.
func checkTargets(f *Facts) []Check {
	ns := f.Options.TargetsNamespace
	if !f.TargetsRead {
		return []Check{newCheck(idTargetsFound, Warn, "targets were not checked: the Services in %s could not be listed", ns).hint("see cluster-access")}
	}
	if len(f.Targets) == 0 {
		c := newCheck(idTargetsFound, Warn, "no target in %s (Services labelled %s): hairpin is inert", ns, rules.TargetLabel)
		needing := needingHairpin(f)
		switch {
		case needing > 0:
			c.Status = Fail
			c.Message = fmt.Sprintf("no target in %s (Services labelled %s), but %s PROXY behind a short-circuited load balancer", ns, rules.TargetLabel, plural(needing, "controller requires", "controllers require"))
		case len(f.Controllers) > 0:
			// Every controller that requires PROXY is reached through its
			// load balancer (its lb-status line says why): nothing to install.
			return []Check{newCheck(idTargetsFound, OK, "no target in %s (Services labelled %s), and none is needed: %s", ns, rules.TargetLabel, unneededReason)}
		}
		return []Check{c.hint("install the chart (zones are yours to check): %s; or pass --namespace where it is installed", installCommand(f))}
	}
	var names []string
	for _, t := range f.Targets {
		names = append(names, t.Service.Name)
	}
	out := []Check{newCheck(idTargetsFound, OK, "%s in %s: %s", plural(len(f.Targets), "target", "targets"), ns, strings.Join(names, ", "))}
	for _, t := range f.Targets {
		if t.Direct != "" {
			out = append(out, directTarget(f, t)...)
			continue
		}
		out = append(out, targetAnnotations(t), targetZones(f, t), targetAddress(t))
		if t.EndpointsRead {
			out = append(out, targetEndpoints(f, t))
			out = append(out, proxyUpstreams(f, t)...)
		}
	}
	return append(out, directRequiresProxy(f)...)
}

func targetName(t TargetFacts) string { return t.Service.Namespace + "/" + t.Service.Name }

// The chart's key of each annotation (targets.NAME.KEY).
var chartKeys = []struct{ annotation, key string }{
	{rules.ZonesAnnotation, "zones"},
	{rules.IngressClassesAnnotation, "ingressClasses"},
	{rules.GatewayClassesAnnotation, "gatewayClasses"},
	{rules.GatewaysAnnotation, "gateways"},
}

func targetAnnotations(t TargetFacts) Check {
	name := targetName(t)
	obj := serviceObject(t.Service)
	if t.Err != nil && !errors.Is(t.Err, rules.ErrNoZones) {
		key := "zones, ingressClasses, gatewayClasses or gateways"
		for _, k := range chartKeys {
			if strings.Contains(t.Err.Error(), k.annotation) {
				key = k.key
			}
		}
		return newCheck(idTargetAnnotations, Fail, "target %s is disabled: %v", name, t.Err).on(obj).
			hint("fix targets.%s.%s in the chart's values (items are comma-separated DNS names; gateways are namespace/name)", chartName(name), key)
	}
	s := t.Spec
	if len(s.IngressClasses)+len(s.GatewayClasses)+len(s.Gateways) == 0 {
		return newCheck(idTargetAnnotations, Warn, "target %s selects nothing: it names no ingress class, GatewayClass or Gateway", name).on(obj).
			hint("set targets.%s.ingressClasses, gatewayClasses or gateways", chartName(name))
	}
	var parts []string
	for _, p := range []struct {
		what string
		list []string
	}{{"ingress classes", s.IngressClasses}, {"gateway classes", s.GatewayClasses}, {"gateways", s.Gateways}} {
		if len(p.list) > 0 {
			parts = append(parts, p.what+" "+strings.Join(p.list, ","))
		}
	}
	return newCheck(idTargetAnnotations, OK, "target %s selects %s", name, strings.Join(parts, "; ")).on(obj)
}

func targetZones(f *Facts, t TargetFacts) Check {
	name := targetName(t)
	obj := serviceObject(t.Service)
	switch {
	case errors.Is(t.Err, rules.ErrNoZones):
		zones := suggestZones(f, func(o HostObject) bool { return specNames(t.Spec, o.IngressClass, o.Gateway) })
		return newCheck(idTargetZones, Fail, "target %s has no zones and serves nothing", name).on(obj).
			hint("set the zones it may answer (the hosts it selects are in %s): --set-json 'targets.%s.zones=%s'", strings.Join(zones, ", "), chartName(name), jsonList(zones))
	case t.Err != nil:
		return newCheck(idTargetZones, Fail, "target %s serves nothing: its annotations do not parse (see target-annotations)", name).on(obj).
			hint("fix targets.%s in the chart's values", chartName(name))
	case slices.Contains(t.Spec.Zones, "."):
		return newCheck(idTargetZones, Warn, "target %s may answer every name (zone \".\"): the hijack guard is off, an Ingress for any domain is answered", name).on(obj).
			hint("name your own zones: --set-json 'targets.%s.zones=[\"example.com\"]'", chartName(name))
	}
	return newCheck(idTargetZones, OK, "target %s may answer zones %s", name, strings.Join(hostNames(t.Spec.Zones), ", ")).on(obj)
}

func targetAddress(t TargetFacts) Check {
	name := targetName(t)
	obj := serviceObject(t.Service)
	ips := t.Service.Spec.ClusterIPs
	if len(ips) == 0 && t.Service.Spec.ClusterIP != "" {
		ips = []string{t.Service.Spec.ClusterIP}
	}
	if len(ips) == 0 || slices.Contains(ips, core.ClusterIPNone) {
		return newCheck(idTargetAddress, Fail, "target %s has no ClusterIP (headless or not allocated): its hosts pass through", name).on(obj).
			hint("a target must be a ClusterIP Service with an address, as the chart renders it: kubectl -n %s get svc %s -o wide", t.Service.Namespace, t.Service.Name)
	}
	return newCheck(idTargetAddress, OK, "target %s answers with %s", name, strings.Join(ips, ", ")).on(obj)
}

func targetEndpoints(f *Facts, t TargetFacts) Check {
	name := targetName(t)
	obj := serviceObject(t.Service)
	if t.ReadyEndpoints == 0 {
		return newCheck(idTargetEndpoints, Fail, "target %s has no ready proxy endpoint (%d not ready): connections to its hosts are refused", name, t.Endpoints).on(obj).
			hint("kubectl -n %s get pods -l app.kubernetes.io/name=hairpin-proxy; kubectl -n %s describe deploy/hairpin-proxy (proxy.replicas, proxy.image)", f.Options.TargetsNamespace, f.Options.TargetsNamespace)
	}
	return newCheck(idTargetEndpoints, OK, "target %s has %s", name, plural(t.ReadyEndpoints, "ready proxy endpoint", "ready proxy endpoints")).on(obj)
}

// proxyUpstreams judges each port's route from every ready proxy pod's
// hairpin_proxy_upstream_up.
func proxyUpstreams(f *Facts, t TargetFacts) []Check {
	if len(t.Proxies) == 0 {
		return nil
	}
	name := targetName(t)
	var out []Check
	for _, p := range t.Service.Spec.Ports {
		var up, down, unknown, unread, objects []string
		var route routeflag.Route
		forbidden := false
		for _, pf := range t.Proxies {
			objects = append(objects, podObject(pf.Pod))
			r := routeOf(pf.Pod, t.Service, p)
			if route.Name == "" || route.Upstream == "" {
				route = r
			}
			if pf.Err != nil {
				unread = append(unread, fmt.Sprintf("%s: %v", pf.Pod.Name, pf.Err))
				forbidden = forbidden || apierrors.IsForbidden(pf.Err)
				continue
			}
			v, ok := pf.Metrics.Sum(metricUpstreamUp, "route", r.Name)
			switch {
			case !ok:
				unknown = append(unknown, pf.Pod.Name)
			case v >= 1:
				up = append(up, pf.Pod.Name)
			default:
				down = append(down, pf.Pod.Name)
			}
		}
		upstream := route.Upstream
		if upstream == "" {
			upstream = "its upstream"
		}
		chart := chartName(name)
		c := newCheck(idProxyUpstream, OK, "route %s of target %s: the proxy reaches %s (%d/%d pods)", route.Name, name, upstream, len(up), len(t.Proxies)).on(serviceObject(t.Service)).on(objects...)
		switch {
		case len(down) > 0:
			c.Status = Fail
			c.Message = fmt.Sprintf("route %s of target %s: the proxy cannot reach %s (down in %s)", route.Name, name, upstream, listed(down))
			c = c.hint("check targets.%s.upstream.namespace, .name and .ports (the proxy dials NAME.NAMESPACE.svc.CLUSTERDOMAIN:PORT) and the NetworkPolicies of the upstream's namespace; kubectl -n %s logs %s shows the dial errors", chart, f.Options.TargetsNamespace, down[0])
		case len(unknown) > 0:
			c.Status = Fail
			c.Message = fmt.Sprintf("route %s of target %s: proxy pod %s has no such route, so port %s of the target leads nowhere", route.Name, name, listed(unknown), p.Name)
			c = c.hint("the chart renders the target's ports and the proxy's --route flags from the same targets.%s.upstream.ports; helm upgrade again if the manifests were edited by hand", chart)
		case len(up) == 0 && forbidden:
			c.Status = Warn
			c.Message = fmt.Sprintf("route %s of target %s: not checked, may not read the proxy's metrics (get pods/proxy in %s is forbidden)", route.Name, name, f.Options.TargetsNamespace)
			c = c.hint("grant get on pods/proxy in %s, or kubectl -n %s port-forward deploy/hairpin-proxy %d & curl -s 'localhost:%d/readyz?verbose'", f.Options.TargetsNamespace, f.Options.TargetsNamespace, healthPort, healthPort)
		case len(up) == 0:
			c.Status = Warn
			c.Message = fmt.Sprintf("route %s of target %s: not checked, the proxy's metrics could not be read: %s", route.Name, name, listed(unread))
			c = c.hint("kubectl -n %s port-forward deploy/hairpin-proxy %d & curl -s 'localhost:%d/readyz?verbose'", f.Options.TargetsNamespace, healthPort, healthPort)
		}
		out = append(out, c)
	}
	return out
}

// needingHairpin counts the controllers that require PROXY behind a load
// balancer the dataplane short-circuits: the ones hairpin is for.
func needingHairpin(f *Facts) int {
	n := 0
	for _, ctrl := range f.Controllers {
		if judgeLBs(f.Dataplane, ctrl.LBs).needed {
			n++
		}
	}
	return n
}

// hairpinUnneeded reports whether the cluster needs no hairpin at all: no
// target, and every controller that requires PROXY is reached through its
// own load balancer (a Cozystack tenant's ingress with exposeMethod
// Proxied). CoreDNS may then run any image.
func hairpinUnneeded(f *Facts) bool {
	return f.TargetsRead && len(f.Targets) == 0 && len(f.Controllers) > 0 && needingHairpin(f) == 0
}

// unneededReason is the why of a line that hairpinUnneeded passes.
const unneededReason = "no controller that requires PROXY has an address the dataplane short-circuits"
