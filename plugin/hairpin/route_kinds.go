package hairpin

import (
	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
)

// routeKind is one Gateway API route kind and the API versions of it that
// the pinned gateway-api module knows, newest first. The first version that
// the cluster serves is watched.
type routeKind struct {
	kind     rules.Kind
	resource string // plural resource name in discovery
	versions []string
}

// routeKinds is every route kind whose hostnames hairpin serves; rules.ReadRoute
// reads each of their versions.
var routeKinds = []routeKind{
	{kind: rules.KindHTTPRoute, resource: "httproutes", versions: []string{"v1"}},
	{kind: rules.KindGRPCRoute, resource: "grpcroutes", versions: []string{"v1", "v1alpha2"}},
	{kind: rules.KindTLSRoute, resource: "tlsroutes", versions: []string{"v1", "v1alpha3", "v1alpha2"}},
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
