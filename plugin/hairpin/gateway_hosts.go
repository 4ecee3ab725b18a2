package hairpin

import (
	"strings"

	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// The hostname rules of Gateway API: which hostnames a Gateway's listeners
// and its attached routes really serve.

// listenerHostnames returns the hostnames set on g's listeners.
func (g *cachedGateway) listenerHostnames() []string {
	var hosts []string
	for _, l := range g.listeners {
		if l.Hostname != nil && *l.Hostname != "" {
			hosts = append(hosts, string(*l.Hostname))
		}
	}
	return hosts
}

// gatewayHosts is what a route serves through one Gateway.
type gatewayHosts struct {
	gateway *cachedGateway
	hosts   []string
}

// routeHostnames returns, per Gateway that lookup finds, the hostnames that
// r really serves through it: for every listener that the parentRef selects
// and that admits routes from r's namespace, the route hostnames intersected
// with the listener hostname. A route that names no hostname inherits the
// listener's, which the Gateway already claims.
func routeHostnames(r routeView, lookup func(ns, name string) *cachedGateway) []gatewayHosts {
	var out []gatewayHosts
	for _, ref := range r.parents {
		if ref.Group != nil && *ref.Group != gw.GroupName {
			continue
		}
		if ref.Kind != nil && *ref.Kind != "Gateway" {
			continue
		}
		ns := r.namespace
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = string(*ref.Namespace)
		}
		g := lookup(ns, string(ref.Name))
		if g == nil {
			continue
		}
		var hosts []string
		for _, l := range g.listeners {
			if ref.SectionName != nil && *ref.SectionName != l.Name {
				continue
			}
			if !admitsNamespace(l, g.namespace, r.namespace) {
				continue
			}
			listenerHost := ""
			if l.Hostname != nil {
				listenerHost = strings.ToLower(string(*l.Hostname))
			}
			for _, h := range r.hostnames {
				if got, ok := intersectHostnames(listenerHost, strings.ToLower(string(h))); ok {
					hosts = append(hosts, got)
				}
			}
		}
		out = append(out, gatewayHosts{gateway: g, hosts: hosts})
	}
	return out
}

// admitsNamespace applies a listener's allowedRoutes.namespaces. "Selector"
// is admitted: evaluating it needs a watch on Namespaces, which hairpin does
// not take; the ZONES guard still applies to every hostname.
func admitsNamespace(l gw.Listener, gatewayNS, routeNS string) bool {
	from := gw.NamespacesFromSame
	if l.AllowedRoutes != nil && l.AllowedRoutes.Namespaces != nil && l.AllowedRoutes.Namespaces.From != nil {
		from = *l.AllowedRoutes.Namespaces.From
	}
	switch from {
	case gw.NamespacesFromSame:
		return gatewayNS == routeNS
	case gw.NamespacesFromNone:
		return false
	default:
		return true
	}
}

// intersectHostnames is the hostname a listener and a route both match, per
// Gateway API: an empty listener hostname matches anything, and a wildcard
// matches names that end in its suffix. Of two matching names the more
// specific one is served.
func intersectHostnames(listener, route string) (string, bool) {
	switch {
	case listener == "":
		return route, true
	case listener == route:
		return route, true
	case wildcardCovers(listener, route):
		return route, true
	case wildcardCovers(route, listener):
		return listener, true
	}
	return "", false
}

// wildcardCovers reports whether pattern ("*.example.com") matches name
// ("a.example.com", "a.b.example.com" or "*.a.example.com").
func wildcardCovers(pattern, name string) bool {
	suffix, ok := strings.CutPrefix(pattern, "*")
	if !ok {
		return false
	}
	return strings.HasSuffix(name, suffix) && len(name) > len(suffix)
}
