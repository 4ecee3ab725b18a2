package hairpin

import (
	"errors"
	"slices"
	"testing"

	networking "k8s.io/api/networking/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// TestExplainSelectsAsTheIndexDoes: the exported rules are the plugin's:
// a class beats "*", a Gateway's name beats its class, ties go to the
// first name, a disabled target selects nothing, zones bound the hosts.
func TestExplainSelectsAsTheIndexDoes(t *testing.T) {
	ts := NewTargets()
	for _, tg := range []struct {
		name string
		ann  map[string]string
	}{
		{"ns/b-all", map[string]string{zonesAnnotation: "example.com", ingressClassesAnnotation: "*", gatewayClassesAnnotation: "*"}},
		{"ns/a-nginx", map[string]string{zonesAnnotation: "example.com", ingressClassesAnnotation: "nginx"}},
		{"ns/c-nginx", map[string]string{zonesAnnotation: "example.com", ingressClassesAnnotation: "nginx"}},
		{"ns/gw", map[string]string{zonesAnnotation: "tenant.org", gatewaysAnnotation: "t/gw"}},
	} {
		if _, err := ts.Add(tg.name, tg.ann); err != nil {
			t.Fatal(err)
		}
	}
	spec, err := ts.Add("ns/off", map[string]string{ingressClassesAnnotation: "off"})
	if !errors.Is(err, ErrNoZones) || !slices.Equal(spec.IngressClasses, []string{"off"}) {
		t.Fatalf("target without zones: %+v, %v; want its classes and ErrNoZones", spec, err)
	}
	for _, tc := range []struct {
		what string
		got  Selection
		want Selection
	}{
		{"class over wildcard, first name", ts.ForIngress("nginx"), Selection{Target: "ns/a-nginx", Conflict: true}},
		{"wildcard", ts.ForIngress("traefik"), Selection{Target: "ns/b-all"}},
		{"disabled selects nothing", ts.ForIngress("off"), Selection{Target: "ns/b-all"}},
		{"gateway name over class wildcard", ts.ForGateway("t", "gw", "eg"), Selection{Target: "ns/gw", Conflict: true}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %+v; want %+v", tc.what, tc.got, tc.want)
		}
	}
	for host, want := range map[string]string{"app.example.com": "", "App.Example.COM.": "", "login.other.org": ReasonOutsideZones, "bad_host.example.com": ReasonInvalid} {
		if got := ts.Rejection("ns/a-nginx", host); got != want {
			t.Errorf("Rejection(%s) = %q; want %q", host, got, want)
		}
	}
}

func TestExplainHostsOfObjects(t *testing.T) {
	old := meta.Now()
	newer := meta.NewTime(old.Add(1))
	classes := []networking.IngressClass{
		{ObjectMeta: meta.ObjectMeta{Name: "old", CreationTimestamp: old, Annotations: map[string]string{defaultClassAnnotation: "true"}}},
		{ObjectMeta: meta.ObjectMeta{Name: "new", CreationTimestamp: newer, Annotations: map[string]string{defaultClassAnnotation: "true"}}},
	}
	ing := &networking.Ingress{
		Spec: networking.IngressSpec{
			Rules: []networking.IngressRule{{Host: "App.example.com"}, {Host: ""}},
			TLS:   []networking.IngressTLS{{Hosts: []string{"*.example.com"}}},
		},
	}
	if got := IngressHosts(ing); !slices.Equal(got, []string{"app.example.com."}) {
		t.Errorf("IngressHosts = %v; want the rule's host only", got)
	}
	if got := IngressClass(ing, classes); got != "new" {
		t.Errorf("IngressClass = %q; want the newest default class", got)
	}
	ing.Annotations = map[string]string{legacyClassAnnotation: "legacy"}
	if got := IngressClass(ing, classes); got != "legacy" {
		t.Errorf("IngressClass = %q; want the legacy annotation's", got)
	}

	wild := gw.Hostname("*.tenant.org")
	g := &gw.Gateway{ObjectMeta: meta.ObjectMeta{Namespace: "t", Name: "gw"}, Spec: gw.GatewaySpec{
		GatewayClassName: "eg", Listeners: []gw.Listener{{Name: "http", Hostname: &wild}},
	}}
	if got := GatewayHosts(g); !slices.Equal(got, []string{"*.tenant.org"}) {
		t.Errorf("GatewayHosts = %v", got)
	}
	route := &gw.HTTPRoute{ObjectMeta: meta.ObjectMeta{Namespace: "t", Name: "r"}}
	route.Spec.ParentRefs = []gw.ParentReference{{Name: "gw"}, {Name: "missing"}}
	route.Spec.Hostnames = []gw.Hostname{"shop.tenant.org", "shop.other.org"}
	got := RouteHosts(route, func(ns, name string) *gw.Gateway {
		if ns == "t" && name == "gw" {
			return g
		}
		return nil
	})
	if len(got) != 1 || !slices.Equal(got["t/gw"], []string{"shop.tenant.org"}) {
		t.Errorf("RouteHosts = %v; want shop.tenant.org through t/gw only", got)
	}
	if RouteHosts(g, nil) != nil {
		t.Error("a Gateway is not a route")
	}
}
