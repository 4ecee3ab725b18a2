package hairpin

import (
	"strings"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwv1a3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
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

// cachedGateway is what the informer keeps of a Gateway: its class and its
// listeners' name, hostname and allowedRoutes.
type cachedGateway struct {
	objectMeta
	class     string
	listeners []gw.Listener
}

// DeepCopyObject implements runtime.Object. The listeners are never written
// after the transform, so they are shared.
func (g *cachedGateway) DeepCopyObject() runtime.Object { c := *g; return &c }

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

// slimGatewayAPI is the transform of the Gateway API informers. It keeps of
// a Gateway its class and its listeners' name, hostname and allowedRoutes,
// and turns every route kind and version into a slimRoute.
func slimGatewayAPI(keepLabels bool) func(any) (any, error) {
	return func(obj any) (any, error) {
		if g, ok := obj.(*gw.Gateway); ok {
			slim := &cachedGateway{objectMeta: newObjectMeta(g, keepLabels), class: string(g.Spec.GatewayClassName)}
			slim.listeners = make([]gw.Listener, len(g.Spec.Listeners))
			for i, l := range g.Spec.Listeners {
				slim.listeners[i] = gw.Listener{Name: l.Name, Hostname: l.Hostname, AllowedRoutes: l.AllowedRoutes}
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

// routeKind is one Gateway API route kind.
type routeKind struct {
	kind     string // lowercase, as in owner keys
	resource string // plural resource name in discovery
	versions []routeVersion
}

// routeVersion is one API version of a route kind.
type routeVersion struct {
	version  string
	informer func(gwinformers.SharedInformerFactory) cache.SharedIndexInformer
	view     func(obj any) (routeView, meta.ObjectMeta, bool)
}

func httpRouteV1Informer(f gwinformers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.Gateway().V1().HTTPRoutes().Informer()
}
func grpcRouteV1Informer(f gwinformers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.Gateway().V1().GRPCRoutes().Informer()
}
func grpcRouteV1a2Informer(f gwinformers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.Gateway().V1alpha2().GRPCRoutes().Informer()
}
func tlsRouteV1Informer(f gwinformers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.Gateway().V1().TLSRoutes().Informer()
}
func tlsRouteV1a3Informer(f gwinformers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.Gateway().V1alpha3().TLSRoutes().Informer()
}
func tlsRouteV1a2Informer(f gwinformers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.Gateway().V1alpha2().TLSRoutes().Informer()
}

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
