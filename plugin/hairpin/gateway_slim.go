package hairpin

import (
	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	"k8s.io/apimachinery/pkg/runtime"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// routeOwner is the owner of a route's hostnames.
func routeOwner(r rules.Route) ownerRef {
	return ownerRef{kind: r.Kind, key: r.Namespace + "/" + r.Name}
}

// through is the owner of the route's hostnames through one Gateway: each
// Gateway may be fronted by another target, so each pair is its own owner.
func (r ownerRef) through(gateway string) ownerRef {
	return ownerRef{kind: r.kind, key: r.key + "@" + gateway}
}

// gatewayOwner is the owner of a Gateway's own listener hostnames.
func gatewayOwner(ns, name string) ownerRef {
	return ownerRef{kind: rules.KindGateway, key: ns + "/" + name}
}

// cachedGateway is what the informer keeps of a Gateway: its identity, and
// what the hostname rules read (its class and its listeners' name, hostname
// and allowedRoutes).
type cachedGateway struct {
	objectMeta
	gateway rules.Gateway
}

// DeepCopyObject implements runtime.Object. The listeners are never written
// after the transform, so they are shared.
func (g *cachedGateway) DeepCopyObject() runtime.Object { c := *g; return &c }

// slimRoute is the cached form of any route: its metadata for the informer
// store and what the hostname rules read.
type slimRoute struct {
	objectMeta
	route rules.Route
}

// DeepCopyObject implements runtime.Object. The route's slices are never
// written after the transform, so they are shared.
func (r *slimRoute) DeepCopyObject() runtime.Object { c := *r; return &c }

// slimGatewayAPI is the transform of the Gateway API informers. It keeps of
// a Gateway and of every route kind and version what the hostname rules
// read (rules.ReadGateway, rules.ReadRoute).
func slimGatewayAPI(keepLabels bool) func(any) (any, error) {
	return func(obj any) (any, error) {
		if g, ok := obj.(*gw.Gateway); ok {
			return &cachedGateway{objectMeta: newObjectMeta(g, keepLabels), gateway: rules.ReadGateway(g)}, nil
		}
		if route, m, ok := rules.ReadRoute(obj); ok {
			return &slimRoute{objectMeta: newObjectMeta(m, keepLabels), route: route}, nil
		}
		return obj, nil
	}
}
