package hairpin

import (
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwv1a3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
)

// routeKind is one Gateway API route kind and the API versions of it that
// the pinned gateway-api module knows, newest first. The first version that
// the cluster serves is watched.
type routeKind struct {
	kind     ownerKind
	resource string // plural resource name in discovery
	versions []string
}

// routeKinds is every route kind whose hostnames hairpin serves.
var routeKinds = []routeKind{
	{kind: kindHTTPRoute, resource: "httproutes", versions: []string{"v1"}},
	{kind: kindGRPCRoute, resource: "grpcroutes", versions: []string{"v1", "v1alpha2"}},
	{kind: kindTLSRoute, resource: "tlsroutes", versions: []string{"v1", "v1alpha3", "v1alpha2"}},
}

// informer is the shared informer of version of k in f.
func (k routeKind) informer(f gwinformers.SharedInformerFactory, version string) (cache.SharedIndexInformer, error) {
	inf, err := f.ForResource(schema.GroupVersionResource{Group: gw.GroupName, Version: version, Resource: k.resource})
	if err != nil {
		return nil, err
	}
	return inf.Informer(), nil
}

// firstServed is the newest version of k that served lists ("version/resource").
func (k routeKind) firstServed(served map[string]bool) (string, bool) {
	for _, v := range k.versions {
		if served[v+"/"+k.resource] {
			return v, true
		}
	}
	return "", false
}

// readRoute reads any route of routeKinds, in any of its versions, as the
// view the index needs, with its metadata. v1alpha2 GRPCRoute and v1alpha3
// TLSRoute are the v1 types under another name; v1alpha2 TLSRoute has a
// spec of its own with the same fields.
func readRoute(obj any) (routeView, *meta.ObjectMeta, bool) {
	var (
		kind      ownerKind
		m         *meta.ObjectMeta
		hostnames []gw.Hostname
		spec      *gw.CommonRouteSpec
	)
	switch r := obj.(type) {
	case *gw.HTTPRoute:
		kind, m, hostnames, spec = kindHTTPRoute, &r.ObjectMeta, r.Spec.Hostnames, &r.Spec.CommonRouteSpec
	case *gw.GRPCRoute:
		kind, m, hostnames, spec = kindGRPCRoute, &r.ObjectMeta, r.Spec.Hostnames, &r.Spec.CommonRouteSpec
	case *gwv1a2.GRPCRoute:
		return readRoute((*gw.GRPCRoute)(r))
	case *gw.TLSRoute:
		kind, m, hostnames, spec = kindTLSRoute, &r.ObjectMeta, r.Spec.Hostnames, &r.Spec.CommonRouteSpec
	case *gwv1a3.TLSRoute:
		return readRoute((*gw.TLSRoute)(r))
	case *gwv1a2.TLSRoute:
		kind, m, hostnames, spec = kindTLSRoute, &r.ObjectMeta, r.Spec.Hostnames, &r.Spec.CommonRouteSpec
	default:
		return routeView{}, nil, false
	}
	return routeView{kind: kind, namespace: m.Namespace, name: m.Name, hostnames: hostnames, parents: spec.ParentRefs}, m, true
}
