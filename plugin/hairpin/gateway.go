package hairpin

import (
	"slices"
	"strings"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwv1a3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
)

// routeView is what the index needs of any route kind and version: where it
// lives, the hostnames it names and the Gateways it attaches to.
type routeView struct {
	kind      string // lowercase kind, used in owner keys: "httproute"
	namespace string
	name      string
	hostnames []gw.Hostname
	parents   []gw.ParentReference
}

func (r routeView) owner() string { return r.kind + "/" + r.namespace + "/" + r.name }

// gatewayOwner is the owner key of a Gateway's own listener hostnames.
func gatewayOwner(ns, name string) string { return "gateway/" + ns + "/" + name }

// gatewayMatches reports whether g's class is one hairpin serves.
func gatewayMatches(g *gw.Gateway, classes []string) bool {
	return slices.Contains(classes, "*") || slices.Contains(classes, string(g.Spec.GatewayClassName))
}

// listenerHostnames returns the hostnames set on g's listeners.
func listenerHostnames(g *gw.Gateway) []string {
	var hosts []string
	for _, l := range g.Spec.Listeners {
		if l.Hostname != nil && *l.Hostname != "" {
			hosts = append(hosts, string(*l.Hostname))
		}
	}
	return hosts
}

// routeHostnames returns the hostnames that r really serves through matching
// Gateways: for every parentRef to a Gateway that lookup finds (and that
// matches the class), for every listener that the ref selects and that
// admits routes from r's namespace, the route hostnames intersected with the
// listener hostname. A route that names no hostname inherits the listener's,
// which the Gateway already claims.
func routeHostnames(r routeView, lookup func(ns, name string) *gw.Gateway) []string {
	var hosts []string
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
		for _, l := range g.Spec.Listeners {
			if ref.SectionName != nil && *ref.SectionName != l.Name {
				continue
			}
			if !admitsNamespace(l, g.Namespace, r.namespace) {
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
	}
	return hosts
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

// slimGatewayAPI is the transform of the Gateway API informers. It keeps of
// a Gateway its class and its listeners' name, hostname and allowedRoutes,
// and turns every route kind and version into a slimRoute.
func slimGatewayAPI(keepLabels bool) func(any) (any, error) {
	return func(obj any) (any, error) {
		if g, ok := obj.(*gw.Gateway); ok {
			slim := &gw.Gateway{ObjectMeta: meta.ObjectMeta{Name: g.Name, Namespace: g.Namespace, ResourceVersion: g.ResourceVersion, Generation: g.Generation}}
			if keepLabels {
				slim.Labels = g.Labels
			}
			slim.Spec.GatewayClassName = g.Spec.GatewayClassName
			slim.Spec.Listeners = make([]gw.Listener, len(g.Spec.Listeners))
			for i, l := range g.Spec.Listeners {
				slim.Spec.Listeners[i] = gw.Listener{Name: l.Name, Hostname: l.Hostname, AllowedRoutes: l.AllowedRoutes}
			}
			return slim, nil
		}
		for _, k := range routeKinds {
			for _, v := range k.versions {
				if view, m, ok := v.view(obj); ok {
					return &slimRoute{objectMeta: newObjectMeta(&m, keepLabels), view: view}, nil
				}
			}
		}
		return obj, nil
	}
}

// slimRoute is the cached form of any route: its metadata for the informer
// store and the view for the index.
type slimRoute struct {
	objectMeta
	view routeView
}

// DeepCopyObject implements runtime.Object. The view's slices are never
// written after the transform, so they are shared.
func (r *slimRoute) DeepCopyObject() runtime.Object { c := *r; return &c }

// routeKinds lists every route kind and, per kind, the API versions the
// pinned gateway-api module knows, newest first. The first version that the
// cluster serves is watched.
var routeKinds = []routeKind{
	{kind: "httproute", resource: "httproutes", versions: []routeVersion{
		{version: "v1", informer: httpRouteV1Informer, view: viewHTTPRouteV1},
	}},
	{kind: "grpcroute", resource: "grpcroutes", versions: []routeVersion{
		{version: "v1", informer: grpcRouteV1Informer, view: viewGRPCRouteV1},
		{version: "v1alpha2", informer: grpcRouteV1a2Informer, view: viewGRPCRouteV1a2},
	}},
	{kind: "tlsroute", resource: "tlsroutes", versions: []routeVersion{
		{version: "v1", informer: tlsRouteV1Informer, view: viewTLSRouteV1},
		{version: "v1alpha3", informer: tlsRouteV1a3Informer, view: viewTLSRouteV1a3},
		{version: "v1alpha2", informer: tlsRouteV1a2Informer, view: viewTLSRouteV1a2},
	}},
}

func newRouteView(kind string, m meta.ObjectMeta, hostnames []gw.Hostname, spec gw.CommonRouteSpec) (routeView, meta.ObjectMeta, bool) {
	return routeView{kind: kind, namespace: m.Namespace, name: m.Name, hostnames: hostnames, parents: spec.ParentRefs}, m, true
}

func viewHTTPRouteV1(obj any) (routeView, meta.ObjectMeta, bool) {
	r, ok := obj.(*gw.HTTPRoute)
	if !ok {
		return routeView{}, meta.ObjectMeta{}, false
	}
	return newRouteView("httproute", r.ObjectMeta, r.Spec.Hostnames, r.Spec.CommonRouteSpec)
}

func viewGRPCRouteV1(obj any) (routeView, meta.ObjectMeta, bool) {
	r, ok := obj.(*gw.GRPCRoute)
	if !ok {
		return routeView{}, meta.ObjectMeta{}, false
	}
	return newRouteView("grpcroute", r.ObjectMeta, r.Spec.Hostnames, r.Spec.CommonRouteSpec)
}

func viewGRPCRouteV1a2(obj any) (routeView, meta.ObjectMeta, bool) {
	r, ok := obj.(*gwv1a2.GRPCRoute)
	if !ok {
		return routeView{}, meta.ObjectMeta{}, false
	}
	return newRouteView("grpcroute", r.ObjectMeta, r.Spec.Hostnames, r.Spec.CommonRouteSpec)
}

func viewTLSRouteV1(obj any) (routeView, meta.ObjectMeta, bool) {
	r, ok := obj.(*gw.TLSRoute)
	if !ok {
		return routeView{}, meta.ObjectMeta{}, false
	}
	return newRouteView("tlsroute", r.ObjectMeta, r.Spec.Hostnames, r.Spec.CommonRouteSpec)
}

func viewTLSRouteV1a3(obj any) (routeView, meta.ObjectMeta, bool) {
	r, ok := obj.(*gwv1a3.TLSRoute)
	if !ok {
		return routeView{}, meta.ObjectMeta{}, false
	}
	return newRouteView("tlsroute", r.ObjectMeta, r.Spec.Hostnames, r.Spec.CommonRouteSpec)
}

func viewTLSRouteV1a2(obj any) (routeView, meta.ObjectMeta, bool) {
	r, ok := obj.(*gwv1a2.TLSRoute)
	if !ok {
		return routeView{}, meta.ObjectMeta{}, false
	}
	return newRouteView("tlsroute", r.ObjectMeta, r.Spec.Hostnames, r.Spec.CommonRouteSpec)
}
