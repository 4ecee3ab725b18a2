package rules

import (
	"slices"
	"testing"
	"time"

	networking "k8s.io/api/networking/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
)

func TestIngressHostsAndClass(t *testing.T) {
	old := time.Now()
	classes := []IngressClass{
		ReadIngressClass(&networking.IngressClass{ObjectMeta: meta.ObjectMeta{Name: "old", CreationTimestamp: meta.NewTime(old), Annotations: map[string]string{DefaultIngressClassAnnotation: "true"}}}),
		ReadIngressClass(&networking.IngressClass{ObjectMeta: meta.ObjectMeta{Name: "new", CreationTimestamp: meta.NewTime(old.Add(time.Second)), Annotations: map[string]string{DefaultIngressClassAnnotation: "true"}}}),
		ReadIngressClass(&networking.IngressClass{ObjectMeta: meta.ObjectMeta{Name: "newest", CreationTimestamp: meta.NewTime(old.Add(time.Hour))}}),
	}
	ing := &networking.Ingress{
		Spec: networking.IngressSpec{
			Rules: []networking.IngressRule{{Host: "App.example.com"}, {Host: ""}, {Host: "app.example.com."}},
			TLS:   []networking.IngressTLS{{Hosts: []string{"*.example.com"}}},
		},
	}
	if got := IngressHosts(ing); !slices.Equal(got, []string{"app.example.com."}) {
		t.Errorf("IngressHosts = %v; want the rules' host once, and no TLS host", got)
	}
	if got := DefaultIngressClass(classes); got != "new" {
		t.Errorf("DefaultIngressClass = %q; want the newest class marked default", got)
	}
	if got := IngressClassName(ing); got != "" {
		t.Errorf("IngressClassName = %q; want none", got)
	}
	ing.Annotations = map[string]string{LegacyIngressClassAnnotation: "legacy"}
	if got := IngressClassName(ing); got != "legacy" {
		t.Errorf("IngressClassName = %q; want the legacy annotation's", got)
	}
	spec := "spec"
	ing.Spec.IngressClassName = &spec
	if got := IngressClassName(ing); got != "spec" {
		t.Errorf("IngressClassName = %q; want spec.ingressClassName over the annotation", got)
	}
}

func TestGatewayAndRouteHosts(t *testing.T) {
	wild := gw.Hostname("*.tenant.org")
	g := ReadGateway(&gw.Gateway{ObjectMeta: meta.ObjectMeta{Namespace: "t", Name: "gw"}, Spec: gw.GatewaySpec{
		GatewayClassName: "eg", Listeners: []gw.Listener{{Name: "http", Hostname: &wild}, {Name: "any"}},
	}})
	if got := g.Hostnames(); !slices.Equal(got, []string{"*.tenant.org"}) || g.Key() != "t/gw" || g.Class != "eg" {
		t.Errorf("ReadGateway: hosts %v, key %s, class %s", got, g.Key(), g.Class)
	}
	lookup := func(ns, name string) *Gateway {
		if ns == "t" && name == "gw" {
			return &g
		}
		return nil
	}
	http := &gw.HTTPRoute{ObjectMeta: meta.ObjectMeta{Namespace: "t", Name: "r"}}
	http.Spec.ParentRefs = []gw.ParentReference{{Name: "gw", SectionName: ptr(gw.SectionName("http"))}, {Name: "missing"}}
	http.Spec.Hostnames = []gw.Hostname{"Shop.tenant.org", "shop.other.org"}
	r, m, ok := ReadRoute(http)
	if !ok || m.Name != "r" || r.Kind != KindHTTPRoute {
		t.Fatalf("ReadRoute(HTTPRoute) = %+v, %v", r, ok)
	}
	got := RouteHosts(r, lookup)
	if len(got) != 1 || got[0].Gateway != &g || !slices.Equal(got[0].Hosts, []string{"shop.tenant.org"}) {
		t.Errorf("RouteHosts = %+v; want shop.tenant.org through t/gw only", got)
	}

	other := &gwv1a2.TLSRoute{ObjectMeta: meta.ObjectMeta{Namespace: "elsewhere", Name: "tls"}}
	other.Spec.ParentRefs = []gw.ParentReference{{Name: "gw", Namespace: ptr(gw.Namespace("t"))}}
	other.Spec.Hostnames = []gw.Hostname{"a.tenant.org"}
	r, _, ok = ReadRoute(other)
	if !ok || r.Kind != KindTLSRoute {
		t.Fatalf("ReadRoute(v1alpha2 TLSRoute) = %+v, %v", r, ok)
	}
	if got := RouteHosts(r, lookup); len(got) != 1 || len(got[0].Hosts) != 0 {
		t.Errorf("RouteHosts from another namespace = %+v; want the Gateway with no hosts (its listeners admit the same namespace)", got)
	}
	if _, _, ok := ReadRoute(&gw.Gateway{}); ok {
		t.Error("a Gateway is not a route")
	}
}

func ptr[T any](v T) *T { return &v }

func TestIntersectHostnames(t *testing.T) {
	cases := []struct {
		listener, route, want string
		ok                    bool
	}{
		{"", "a.example.com", "a.example.com", true},
		{"a.example.com", "a.example.com", "a.example.com", true},
		{"a.example.com", "b.example.com", "", false},
		{"*.example.com", "a.example.com", "a.example.com", true},
		{"*.example.com", "a.b.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", "", false},
		{"a.example.com", "*.example.com", "a.example.com", true},
		{"*.example.com", "*.a.example.com", "*.a.example.com", true},
		{"*.a.example.com", "*.example.com", "*.a.example.com", true},
		{"*.example.com", "a.example.org", "", false},
	}
	for _, tc := range cases {
		got, ok := intersectHostnames(tc.listener, tc.route)
		if got != tc.want || ok != tc.ok {
			t.Errorf("intersectHostnames(%q, %q) = %q, %v; want %q, %v", tc.listener, tc.route, got, ok, tc.want, tc.ok)
		}
	}
}
