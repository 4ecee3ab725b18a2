package hairpin

import (
	"k8s.io/apimachinery/pkg/runtime"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// routeView is what the index needs of any route kind and version: where it
// lives, the hostnames it names and the Gateways it attaches to.
type routeView struct {
	kind      ownerKind
	namespace string
	name      string
	hostnames []gw.Hostname
	parents   []gw.ParentReference
}

func (r routeView) owner() ownerRef { return ownerRef{kind: r.kind, key: r.namespace + "/" + r.name} }

// through is the owner of the route's hostnames through one Gateway: each
// Gateway may be fronted by another target, so each pair is its own owner.
func (r ownerRef) through(gateway string) ownerRef {
	return ownerRef{kind: r.kind, key: r.key + "@" + gateway}
}

// gatewayOwner is the owner of a Gateway's own listener hostnames.
func gatewayOwner(ns, name string) ownerRef { return ownerRef{kind: kindGateway, key: ns + "/" + name} }

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

// slimRoute is the cached form of any route: its metadata for the informer
// store and the view for the index.
type slimRoute struct {
	objectMeta
	view routeView
}

// DeepCopyObject implements runtime.Object. The view's slices are never
// written after the transform, so they are shared.
func (r *slimRoute) DeepCopyObject() runtime.Object { c := *r; return &c }

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
		if view, m, ok := readRoute(obj); ok {
			return &slimRoute{objectMeta: newObjectMeta(m, keepLabels), view: view}, nil
		}
		return obj, nil
	}
}
