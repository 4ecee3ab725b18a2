package rules

import (
	"strings"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwv1a3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
)

// The hostname rules of Gateway API: which hostnames a Gateway's listeners
// and its attached routes really serve.

// Gateway is what the hostname rules read of a Gateway: where it lives, its
// class, and its listeners' name, hostname and allowedRoutes.
type Gateway struct {
	Namespace, Name, Class string
	Listeners              []gw.Listener // never written after ReadGateway
}

// ReadGateway keeps of g what the hostname rules read.
func ReadGateway(g *gw.Gateway) Gateway {
	slim := Gateway{Namespace: g.Namespace, Name: g.Name, Class: string(g.Spec.GatewayClassName)}
	slim.Listeners = make([]gw.Listener, len(g.Spec.Listeners))
	for i, l := range g.Spec.Listeners {
		slim.Listeners[i] = gw.Listener{Name: l.Name, Hostname: l.Hostname, AllowedRoutes: l.AllowedRoutes}
	}
	return slim
}

// Key is "namespace/name", as in the gateways annotation.
func (g *Gateway) Key() string { return g.Namespace + "/" + g.Name }

// Hostnames returns the hostnames set on g's listeners: the hosts a Gateway
// names itself.
func (g *Gateway) Hostnames() []string {
	var hosts []string
	for _, l := range g.Listeners {
		if l.Hostname != nil && *l.Hostname != "" {
			hosts = append(hosts, string(*l.Hostname))
		}
	}
	return hosts
}

// Route is what the hostname rules read of any route kind and version:
// where it lives, the hostnames it names and the Gateways it attaches to.
type Route struct {
	Kind      Kind
	Namespace string
	Name      string
	Hostnames []gw.Hostname
	Parents   []gw.ParentReference
}

// ReadRoute reads an HTTPRoute, GRPCRoute or TLSRoute, in any version the
// pinned gateway-api module knows, with its metadata; ok is false for any
// other object. v1alpha2 GRPCRoute and v1alpha3 TLSRoute are the v1 types
// under another name; v1alpha2 TLSRoute has a spec of its own with the same
// fields.
func ReadRoute(obj any) (r Route, m *meta.ObjectMeta, ok bool) {
	var (
		kind      Kind
		hostnames []gw.Hostname
		spec      *gw.CommonRouteSpec
	)
	switch o := obj.(type) {
	case *gw.HTTPRoute:
		kind, m, hostnames, spec = KindHTTPRoute, &o.ObjectMeta, o.Spec.Hostnames, &o.Spec.CommonRouteSpec
	case *gw.GRPCRoute:
		kind, m, hostnames, spec = KindGRPCRoute, &o.ObjectMeta, o.Spec.Hostnames, &o.Spec.CommonRouteSpec
	case *gwv1a2.GRPCRoute:
		return ReadRoute((*gw.GRPCRoute)(o))
	case *gw.TLSRoute:
		kind, m, hostnames, spec = KindTLSRoute, &o.ObjectMeta, o.Spec.Hostnames, &o.Spec.CommonRouteSpec
	case *gwv1a3.TLSRoute:
		return ReadRoute((*gw.TLSRoute)(o))
	case *gwv1a2.TLSRoute:
		kind, m, hostnames, spec = KindTLSRoute, &o.ObjectMeta, o.Spec.Hostnames, &o.Spec.CommonRouteSpec
	default:
		return Route{}, nil, false
	}
	return Route{Kind: kind, Namespace: m.Namespace, Name: m.Name, Hostnames: hostnames, Parents: spec.ParentRefs}, m, true
}

// GatewayHosts is what a route serves through one Gateway.
type GatewayHosts struct {
	Gateway *Gateway
	Hosts   []string
}

// RouteHosts returns, per Gateway that lookup finds, the hostnames that r
// really serves through it: for every listener that the parentRef selects
// and that admits routes from r's namespace, the route hostnames intersected
// with the listener hostname. A route that names no hostname inherits the
// listener's, which the Gateway already names.
func RouteHosts(r Route, lookup func(namespace, name string) *Gateway) []GatewayHosts {
	var out []GatewayHosts
	for _, ref := range r.Parents {
		if ref.Group != nil && *ref.Group != gw.GroupName {
			continue
		}
		if ref.Kind != nil && *ref.Kind != "Gateway" {
			continue
		}
		ns := r.Namespace
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = string(*ref.Namespace)
		}
		g := lookup(ns, string(ref.Name))
		if g == nil {
			continue
		}
		var hosts []string
		for _, l := range g.Listeners {
			if ref.SectionName != nil && *ref.SectionName != l.Name {
				continue
			}
			if !admitsNamespace(l, g.Namespace, r.Namespace) {
				continue
			}
			listenerHost := ""
			if l.Hostname != nil {
				listenerHost = strings.ToLower(string(*l.Hostname))
			}
			for _, h := range r.Hostnames {
				if got, ok := intersectHostnames(listenerHost, strings.ToLower(string(h))); ok {
					hosts = append(hosts, got)
				}
			}
		}
		out = append(out, GatewayHosts{Gateway: g, Hosts: hosts})
	}
	return out
}

// admitsNamespace applies a listener's allowedRoutes.namespaces. "Selector"
// is admitted: evaluating it needs a watch on Namespaces, which hairpin does
// not take; the zones guard still applies to every hostname.
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
