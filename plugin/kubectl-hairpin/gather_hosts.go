package kubectlhairpin

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// gatherHostObjects lists the hosts every Ingress, Gateway and route
// names, and the target each is selected by, with the plugin's own rules.
func (g *gatherer) gatherHostObjects(context.Context) error {
	ts := g.f.TargetSet
	for i := range g.cache.ingresses {
		ing := &g.cache.ingresses[i]
		class := hairpin.IngressClass(ing, g.cache.ingressClasses)
		g.addHostObject(HostObject{
			Object: "ingress/" + ing.Namespace + "/" + ing.Name, IngressClass: class,
			Hosts: hairpin.IngressHosts(ing), Selection: ts.ForIngress(class),
		})
	}
	gateways := map[string]*gw.Gateway{}
	for i := range g.cache.gateways {
		gwy := &g.cache.gateways[i]
		gateways[gwy.Namespace+"/"+gwy.Name] = gwy
		ref := GatewayRef{Namespace: gwy.Namespace, Name: gwy.Name, Class: string(gwy.Spec.GatewayClassName)}
		g.addHostObject(HostObject{
			Object: gatewayObject(ref), Gateway: &ref,
			Hosts: hairpin.GatewayHosts(gwy), Selection: ts.ForGateway(ref.Namespace, ref.Name, ref.Class),
		})
	}
	lookup := func(ns, name string) *gw.Gateway { return gateways[ns+"/"+name] }
	for _, r := range g.cache.routes {
		object := routeObject(r)
		through := hairpin.RouteHosts(r, lookup)
		for _, key := range slices.Sorted(maps.Keys(through)) {
			gwy := gateways[key]
			ref := GatewayRef{Namespace: gwy.Namespace, Name: gwy.Name, Class: string(gwy.Spec.GatewayClassName)}
			g.addHostObject(HostObject{
				Object: object, Gateway: &ref,
				Hosts: through[key], Selection: ts.ForGateway(ref.Namespace, ref.Name, ref.Class),
			})
		}
	}
	return nil
}

// addHostObject keeps o if it names a host, as lowercase FQDNs.
func (g *gatherer) addHostObject(o HostObject) {
	var hosts []string
	for _, h := range o.Hosts {
		if h == "" {
			continue
		}
		fqdn := strings.ToLower(strings.TrimSuffix(h, ".")) + "."
		if !slices.Contains(hosts, fqdn) {
			hosts = append(hosts, fqdn)
		}
	}
	if len(hosts) == 0 {
		return
	}
	o.Hosts = hosts
	g.f.HostObjects = append(g.f.HostObjects, o)
}

func routeObject(r any) string {
	m, ok := r.(meta.Object)
	if !ok {
		return "route/?"
	}
	kind := "route"
	switch r.(type) {
	case *gw.HTTPRoute:
		kind = "httproute"
	case *gw.GRPCRoute:
		kind = "grpcroute"
	case *gw.TLSRoute:
		kind = "tlsroute"
	}
	return kind + "/" + m.GetNamespace() + "/" + m.GetName()
}
