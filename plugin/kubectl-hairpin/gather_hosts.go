package kubectlhairpin

import (
	"context"
	"maps"
	"slices"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
)

// gatherHostObjects lists the hosts every Ingress, Gateway and route
// names, and the target each is selected by, with the plugin's own rules.
func (g *gatherer) gatherHostObjects(context.Context) error {
	ts := g.f.TargetSet
	classes := make([]rules.IngressClass, len(g.cache.ingressClasses))
	for i := range g.cache.ingressClasses {
		classes[i] = rules.ReadIngressClass(&g.cache.ingressClasses[i])
	}
	defaultClass := rules.DefaultIngressClass(classes)
	for i := range g.cache.ingresses {
		ing := &g.cache.ingresses[i]
		class := rules.IngressClassName(ing)
		if class == "" {
			class = defaultClass
		}
		g.addHostObject(HostObject{
			Object: "ingress/" + ing.Namespace + "/" + ing.Name, IngressClass: class,
			Hosts: rules.IngressHosts(ing), Selection: ts.ForIngress(class),
		})
	}
	gateways := map[string]*rules.Gateway{}
	for i := range g.cache.gateways {
		gwy := rules.ReadGateway(&g.cache.gateways[i])
		gateways[gwy.Key()] = &gwy
		ref := gatewayRef(&gwy)
		g.addHostObject(HostObject{
			Object: gatewayObject(ref), Gateway: &ref,
			Hosts: gwy.Hostnames(), Selection: ts.ForGateway(ref.Namespace, ref.Name, ref.Class),
		})
	}
	lookup := func(ns, name string) *rules.Gateway { return gateways[ns+"/"+name] }
	for _, obj := range g.cache.routes {
		r, _, ok := rules.ReadRoute(obj)
		if !ok {
			continue
		}
		object := r.Kind.String() + "/" + r.Namespace + "/" + r.Name
		through := map[string][]string{}
		for _, gh := range rules.RouteHosts(r, lookup) {
			through[gh.Gateway.Key()] = append(through[gh.Gateway.Key()], gh.Hosts...)
		}
		for _, key := range slices.Sorted(maps.Keys(through)) {
			ref := gatewayRef(gateways[key])
			g.addHostObject(HostObject{
				Object: object, Gateway: &ref,
				Hosts: through[key], Selection: ts.ForGateway(ref.Namespace, ref.Name, ref.Class),
			})
		}
	}
	return nil
}

func gatewayRef(g *rules.Gateway) GatewayRef {
	return GatewayRef{Namespace: g.Namespace, Name: g.Name, Class: g.Class}
}

// addHostObject keeps o if it names a host, as lowercase FQDNs.
func (g *gatherer) addHostObject(o HostObject) {
	var hosts []string
	for _, h := range o.Hosts {
		if h == "" {
			continue
		}
		fqdn := rules.ToFQDN(h)
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
