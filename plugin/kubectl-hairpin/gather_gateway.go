package kubectlhairpin

import (
	"context"
	"fmt"

	core "k8s.io/api/core/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// The controllerName of the GatewayClasses of the Gateway controllers
// whose PROXY settings are read, and the labels they put on a Gateway's
// data-plane Service. Other controllers are named by their controllerName.
const (
	envoyControllerName = "gateway.envoyproxy.io/gatewayclass-controller"
	ngfControllerName   = "gateway.nginx.org/nginx-gateway-controller"

	envoyOwnerName      = "gateway.envoyproxy.io/owning-gateway-name"
	envoyOwnerNamespace = "gateway.envoyproxy.io/owning-gateway-namespace"
	// gatewayNameLabel is Gateway API's label for the resources of an
	// in-cluster Gateway (GEP-1762), NGINX Gateway Fabric's among them.
	gatewayNameLabel = "gateway.networking.k8s.io/gateway-name"
)

// gatherGatewayControllers makes every Gateway a candidate, with its
// data-plane Services, and adds what Envoy Gateway's and NGINX Gateway
// Fabric's policies say about PROXY.
func (g *gatherer) gatherGatewayControllers(ctx context.Context) error {
	classes := map[string]*gw.GatewayClass{}
	for i := range g.cache.gatewayClasses {
		classes[g.cache.gatewayClasses[i].Name] = &g.cache.gatewayClasses[i]
	}
	byGateway := map[string]*Controller{}
	for i := range g.cache.gateways {
		gwy := &g.cache.gateways[i]
		ref := GatewayRef{Namespace: gwy.Namespace, Name: gwy.Name, Class: string(gwy.Spec.GatewayClassName)}
		c := &Controller{Kind: gatewayControllerKind(classes[ref.Class]), Object: gatewayObject(ref), Gateways: []GatewayRef{ref}}
		for _, svc := range g.gatewayServices(ref) {
			if exposed(svc) {
				c.LBs = append(c.LBs, svc)
			}
			if c.Upstream == nil || svc.Spec.Type == core.ServiceTypeLoadBalancer && c.Upstream.Spec.Type != core.ServiceTypeLoadBalancer {
				c.Upstream = svc
			}
		}
		byGateway[ref.Key()] = c
		g.candidates = append(g.candidates, c)
	}
	if err := g.envoyPolicies(ctx, byGateway); err != nil {
		return err
	}
	return g.ngfProxies(ctx, byGateway, classes)
}

func gatewayObject(ref GatewayRef) string { return "gateway/" + ref.Namespace + "/" + ref.Name }

func gatewayControllerKind(class *gw.GatewayClass) string {
	switch {
	case class == nil:
		return "Gateway controller"
	case class.Spec.ControllerName == envoyControllerName:
		return "Envoy Gateway"
	case class.Spec.ControllerName == ngfControllerName:
		return "NGINX Gateway Fabric"
	}
	return fmt.Sprintf("Gateway controller %s", class.Spec.ControllerName)
}

// gatewayServices are the Services of a Gateway's data plane, found by the
// labels its controller sets.
func (g *gatherer) gatewayServices(ref GatewayRef) []*core.Service {
	var out []*core.Service
	for i := range g.cache.services {
		svc := &g.cache.services[i]
		l := svc.Labels
		envoy := l[envoyOwnerName] == ref.Name && l[envoyOwnerNamespace] == ref.Namespace
		standard := svc.Namespace == ref.Namespace && l[gatewayNameLabel] == ref.Name
		if envoy || standard {
			out = append(out, svc)
		}
	}
	return out
}
