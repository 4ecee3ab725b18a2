package hairpin

import (
	"context"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
)

// fakeDiscovery serves the Gateway API resources a test says are installed.
type fakeDiscovery struct {
	mu     sync.Mutex
	served map[string][]string // "v1" -> ["gateways", "httproutes"]
}

func (d *fakeDiscovery) ServerResourcesForGroupVersion(gv string) (*meta.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	version := gv[len(gw.GroupName)+1:]
	names, ok := d.served[version]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: gw.GroupName}, gv)
	}
	list := &meta.APIResourceList{GroupVersion: gv}
	for _, n := range names {
		list.APIResources = append(list.APIResources, meta.APIResource{Name: n})
	}
	return list, nil
}

func (d *fakeDiscovery) install(version string, resources ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.served[version] = append(d.served[version], resources...)
}

var allGatewayKinds = map[string][]string{"v1": {"gateways", "httproutes", "grpcroutes", "tlsroutes"}}

func gateway(ns, name, class string, listeners ...gw.Listener) *gw.Gateway {
	return &gw.Gateway{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec:       gw.GatewaySpec{GatewayClassName: gw.ObjectName(class), Listeners: listeners},
	}
}

func listener(name, hostname string, from gw.FromNamespaces) gw.Listener {
	l := gw.Listener{Name: gw.SectionName(name), Port: 443, Protocol: gw.HTTPSProtocolType}
	if hostname != "" {
		h := gw.Hostname(hostname)
		l.Hostname = &h
	}
	if from != "" {
		l.AllowedRoutes = &gw.AllowedRoutes{Namespaces: &gw.RouteNamespaces{From: &from}}
	}
	return l
}

func parentRef(ns, name, section string) gw.ParentReference {
	ref := gw.ParentReference{Name: gw.ObjectName(name)}
	if ns != "" {
		n := gw.Namespace(ns)
		ref.Namespace = &n
	}
	if section != "" {
		s := gw.SectionName(section)
		ref.SectionName = &s
	}
	return ref
}

func hostnames(hs ...string) []gw.Hostname {
	out := make([]gw.Hostname, len(hs))
	for i, h := range hs {
		out[i] = gw.Hostname(h)
	}
	return out
}

func httpRoute(ns, name string, hosts []gw.Hostname, parents ...gw.ParentReference) *gw.HTTPRoute {
	r := &gw.HTTPRoute{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name}}
	r.Spec.Hostnames = hosts
	r.Spec.ParentRefs = parents
	return r
}

// gatewayCache starts a cache with gateway_class set over fake clients.
func gatewayCache(t *testing.T, classes []string, served map[string][]string, gwObjs ...runtime.Object) (*hostCache, *gwfake.Clientset, *fakeDiscovery) {
	t.Helper()
	disc := &fakeDiscovery{served: map[string][]string{}}
	for v, rs := range served {
		disc.install(v, rs...)
	}
	gwClient := gwfake.NewSimpleClientset()
	for _, obj := range gwObjs {
		addGatewayObject(t, gwClient, obj)
	}
	s := settings{
		zones: []string{"example.com."}, labels: labels.Everything(), gatewayClasses: classes,
		proxyNamespace: defaultProxyNamespace, proxyName: defaultProxyName,
		discoveryInterval: 20 * time.Millisecond, // CRDs installed mid-test are looked for often
	}
	hc := newHostCache(&clients{kube: fake.NewClientset(proxyService("127.77.0.10")), gateway: gwClient, discovery: disc}, s)
	if err := hc.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.stop)
	if !hc.waitOpen(5 * time.Second) {
		t.Fatal("cache did not sync")
	}
	return hc, gwClient, disc
}

// addGatewayObject stores obj under its own version: the fake's guess from
// the scheme picks whichever version registered the type first.
func addGatewayObject(t *testing.T, c *gwfake.Clientset, obj runtime.Object) {
	t.Helper()
	var gvr schema.GroupVersionResource
	switch obj.(type) {
	case *gw.Gateway:
		gvr = gw.SchemeGroupVersion.WithResource("gateways")
	case *gw.HTTPRoute:
		gvr = gw.SchemeGroupVersion.WithResource("httproutes")
	case *gw.GRPCRoute:
		gvr = gw.SchemeGroupVersion.WithResource("grpcroutes")
	case *gw.TLSRoute:
		gvr = gw.SchemeGroupVersion.WithResource("tlsroutes")
	case *gwv1a2.TLSRoute:
		gvr = gwv1a2.SchemeGroupVersion.WithResource("tlsroutes")
	default:
		t.Fatalf("no resource for %T", obj)
	}
	if err := c.Tracker().Create(gvr, obj, obj.(meta.Object).GetNamespace()); err != nil {
		t.Fatal(err)
	}
}

func TestGatewayListenerHostnamesOfMatchingClassAreServed(t *testing.T) {
	hc, _, _ := gatewayCache(t, []string{"cilium"}, allGatewayKinds,
		gateway("infra", "public", "cilium", listener("https", "gw.example.com", ""), listener("wild", "*.apps.example.com", "")),
		gateway("infra", "other", "istio", listener("https", "istio.example.com", "")))
	wantServed(t, hc, "gw.example.com.", "*.apps.example.com.")
}

func TestRouteHostnamesFollowAttachment(t *testing.T) {
	hc, client, _ := gatewayCache(t, []string{"cilium"}, allGatewayKinds,
		gateway("infra", "public", "cilium",
			listener("https", "", gw.NamespacesFromAll),
			listener("only-apps", "*.apps.example.com", gw.NamespacesFromAll),
			listener("same-ns", "", gw.NamespacesFromSame)),
		gateway("infra", "istio", "istio", listener("https", "", gw.NamespacesFromAll)),
		// Attached across namespaces to a listener that admits all namespaces.
		httpRoute("team-a", "attached", hostnames("a.example.com"), parentRef("infra", "public", "https")),
		// Attached to a Gateway of a class hairpin does not serve.
		httpRoute("team-a", "other-class", hostnames("istio-only.example.com"), parentRef("infra", "istio", "")),
		// parentRef without namespace: the route's own, where no such Gateway is.
		httpRoute("team-a", "wrong-ns", hostnames("lost.example.com"), parentRef("", "public", "")),
		// sectionName picks the wildcard listener: only names under it survive.
		httpRoute("team-b", "section", hostnames("x.apps.example.com", "y.example.com"), parentRef("infra", "public", "only-apps")),
		// A listener that admits only its own namespace refuses team-c.
		httpRoute("team-c", "refused", hostnames("refused.example.com"), parentRef("infra", "public", "same-ns")),
	)
	wantServed(t, hc, "*.apps.example.com.", "a.example.com.", "x.apps.example.com.")
	ctx := context.Background()

	// Re-parent the other-class route onto the served Gateway.
	if _, err := client.GatewayV1().HTTPRoutes("team-a").Update(ctx,
		httpRoute("team-a", "other-class", hostnames("istio-only.example.com"), parentRef("infra", "public", "https")), meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantServed(t, hc, "*.apps.example.com.", "a.example.com.", "x.apps.example.com.", "istio-only.example.com.")

	// The parent changes class: everything attached to it goes.
	g := gateway("infra", "public", "istio",
		listener("https", "", gw.NamespacesFromAll), listener("only-apps", "*.apps.example.com", gw.NamespacesFromAll))
	g.Generation = 2
	if _, err := client.GatewayV1().Gateways("infra").Update(ctx, g, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantServed(t, hc)

	// And comes back; then a route is deleted.
	g = gateway("infra", "public", "cilium", listener("https", "", gw.NamespacesFromAll))
	g.Generation = 3
	if _, err := client.GatewayV1().Gateways("infra").Update(ctx, g, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantServed(t, hc, "a.example.com.", "istio-only.example.com.")
	if err := client.GatewayV1().HTTPRoutes("team-a").Delete(ctx, "attached", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantServed(t, hc, "istio-only.example.com.")
}

func TestGRPCAndTLSRoutesAreServed(t *testing.T) {
	grpc := &gw.GRPCRoute{ObjectMeta: meta.ObjectMeta{Namespace: "infra", Name: "grpc"}}
	grpc.Spec.Hostnames = hostnames("grpc.example.com")
	grpc.Spec.ParentRefs = []gw.ParentReference{parentRef("", "public", "")}
	tls := &gw.TLSRoute{ObjectMeta: meta.ObjectMeta{Namespace: "infra", Name: "tls"}}
	tls.Spec.Hostnames = hostnames("tls.example.com")
	tls.Spec.ParentRefs = []gw.ParentReference{parentRef("", "public", "")}
	hc, _, _ := gatewayCache(t, []string{"*"}, allGatewayKinds,
		gateway("infra", "public", "any", listener("https", "", "")), grpc, tls)
	wantServed(t, hc, "grpc.example.com.", "tls.example.com.")
}

func TestTLSRouteFromOlderServedVersion(t *testing.T) {
	tls := &gwv1a2.TLSRoute{ObjectMeta: meta.ObjectMeta{Namespace: "infra", Name: "tls"}}
	tls.Spec.Hostnames = hostnames("old-tls.example.com")
	tls.Spec.ParentRefs = []gw.ParentReference{parentRef("", "public", "")}
	hc, _, _ := gatewayCache(t, []string{"*"},
		map[string][]string{"v1": {"gateways"}, "v1alpha2": {"tlsroutes"}},
		gateway("infra", "public", "any", listener("https", "", "")), tls)
	wantServed(t, hc, "old-tls.example.com.")
	if got := hc.gatewayKindsStarted()["tlsroute"]; got != "v1alpha2" {
		t.Errorf("tlsroute watched at %q, want v1alpha2", got)
	}
}

func TestMissingGatewayCRDsAreSkippedAndPickedUpLater(t *testing.T) {
	hc, client, disc := gatewayCache(t, []string{"*"}, nil)
	if !hc.serving() {
		t.Fatal("not ready without Gateway API CRDs")
	}
	disc.install("v1", "gateways", "httproutes")
	eventually(t, "gateways and httproutes to be watched", func() bool {
		k := hc.gatewayKindsStarted()
		return k["gateway"] == "v1" && k["httproute"] == "v1"
	})
	ctx := context.Background()
	if _, err := client.GatewayV1().Gateways("infra").Create(ctx, gateway("infra", "late", "x", listener("https", "late.example.com", "")), meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantServed(t, hc, "late.example.com.")
}
