package kubectlhairpin

import (
	"context"
	"fmt"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// ngfProxyProtocol is the NginxProxy rewriteClientIP mode that makes NGINX
// Gateway Fabric require PROXY.
const ngfProxyProtocol = "ProxyProtocol"

// ngfProxies reads NGINX Gateway Fabric's NginxProxy objects. One attached
// to a Gateway (spec.infrastructure.parametersRef) decides for it; else the
// one of its GatewayClass (spec.parametersRef). Without the CRD there is
// nothing to read.
func (g *gatherer) ngfProxies(ctx context.Context, byGateway map[string]*Controller, classes map[string]*gw.GatewayClass) error {
	gvr, ok := g.api.firstServed(ngfGroup, "nginxproxies", "v1alpha2", "v1alpha1")
	if !ok {
		return nil
	}
	list, err := g.c.Dynamic.Resource(gvr).Namespace("").List(ctx, meta.ListOptions{})
	if ok, err := g.read(err, "list nginxproxies."+ngfGroup+" in all namespaces", "whether NGINX Gateway Fabric's Gateways require PROXY is unknown"); !ok {
		return err
	}
	proxies := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		p := &list.Items[i]
		proxies[p.GetNamespace()+"/"+p.GetName()] = p
	}
	for _, c := range byGateway {
		ref := c.Gateways[0]
		p, via := g.ngfProxyOf(ref, proxies, classes)
		if p == nil {
			continue
		}
		mode, _, _ := unstructured.NestedString(p.Object, "spec", "rewriteClientIP", "mode")
		if mode != ngfProxyProtocol {
			continue
		}
		c.Reasons = append(c.Reasons, Reason{
			Text:   fmt.Sprintf("NginxProxy %s: rewriteClientIP.mode: %s (%s)", nameOf(p), mode, via),
			Object: "nginxproxy/" + nameOf(p),
		})
	}
	return nil
}

// ngfProxyOf returns the NginxProxy that decides a Gateway's rewriteClientIP
// mode, and how it is attached.
func (g *gatherer) ngfProxyOf(ref GatewayRef, proxies map[string]*unstructured.Unstructured, classes map[string]*gw.GatewayClass) (*unstructured.Unstructured, string) {
	for i := range g.cache.gateways {
		gwy := &g.cache.gateways[i]
		if gwy.Namespace != ref.Namespace || gwy.Name != ref.Name || gwy.Spec.Infrastructure == nil {
			continue
		}
		if pr := gwy.Spec.Infrastructure.ParametersRef; pr != nil && string(pr.Group) == ngfGroup && pr.Kind == "NginxProxy" {
			if p := proxies[ref.Namespace+"/"+pr.Name]; p != nil && hasRewriteMode(p) {
				return p, "the Gateway's parametersRef"
			}
		}
	}
	class := classes[ref.Class]
	if class == nil || class.Spec.ParametersRef == nil {
		return nil, ""
	}
	pr := class.Spec.ParametersRef
	if string(pr.Group) != ngfGroup || pr.Kind != "NginxProxy" {
		return nil, ""
	}
	ns := ""
	if pr.Namespace != nil {
		ns = string(*pr.Namespace)
	}
	return proxies[ns+"/"+pr.Name], "GatewayClass " + class.Name + "'s parametersRef"
}

func hasRewriteMode(p *unstructured.Unstructured) bool {
	_, found, _ := unstructured.NestedString(p.Object, "spec", "rewriteClientIP", "mode")
	return found
}

// nameOf is namespace/name, or name for a cluster-scoped object.
func nameOf(p *unstructured.Unstructured) string {
	if p.GetNamespace() == "" {
		return p.GetName()
	}
	return p.GetNamespace() + "/" + p.GetName()
}
