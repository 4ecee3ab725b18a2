package kubectlhairpin

import (
	"context"
	"fmt"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// envoyPolicies reads Envoy Gateway's ClientTrafficPolicies: one that
// turns PROXY on (spec.proxyProtocol, or the older spec.enableProxyProtocol)
// and does not make it optional makes its Gateways require it. Without the
// CRD there is nothing to read.
func (g *gatherer) envoyPolicies(ctx context.Context, byGateway map[string]*Controller) error {
	gvr, ok := g.api.firstServed(envoyGroup, "clienttrafficpolicies", "v1alpha1")
	if !ok {
		return nil
	}
	list, err := g.c.Dynamic.Resource(gvr).Namespace("").List(ctx, meta.ListOptions{})
	if ok, err := g.read(err, "list clienttrafficpolicies."+envoyGroup+" in all namespaces", "whether Envoy Gateway's Gateways require PROXY is unknown"); !ok {
		return err
	}
	for _, p := range list.Items {
		field, on := envoyProxyProtocol(p)
		if !on {
			continue
		}
		r := Reason{
			Text:   fmt.Sprintf("ClientTrafficPolicy %s/%s: %s", p.GetNamespace(), p.GetName(), field),
			Object: "clienttrafficpolicy/" + p.GetNamespace() + "/" + p.GetName(),
		}
		for _, key := range g.policyGateways(p) {
			if c := byGateway[key]; c != nil {
				c.Reasons = append(c.Reasons, r)
			}
		}
	}
	return nil
}

// envoyProxyProtocol says which field of a ClientTrafficPolicy requires
// PROXY, if one does.
func envoyProxyProtocol(p unstructured.Unstructured) (string, bool) {
	if pp, found, _ := unstructured.NestedMap(p.Object, "spec", "proxyProtocol"); found && pp != nil {
		if optional, _, _ := unstructured.NestedBool(pp, "optional"); optional {
			return "", false // connections without a header are accepted too
		}
		return "spec.proxyProtocol", true
	}
	if on, _, _ := unstructured.NestedBool(p.Object, "spec", "enableProxyProtocol"); on {
		return "spec.enableProxyProtocol: true", true
	}
	return "", false
}

// policyGateways are the Gateways (namespace/name) a policy attaches to,
// by targetRefs, the older targetRef, or targetSelectors, all in the
// policy's namespace.
func (g *gatherer) policyGateways(p unstructured.Unstructured) []string {
	ns := p.GetNamespace()
	var refs []any
	if l, found, _ := unstructured.NestedSlice(p.Object, "spec", "targetRefs"); found {
		refs = append(refs, l...)
	}
	if one, found, _ := unstructured.NestedMap(p.Object, "spec", "targetRef"); found {
		refs = append(refs, one)
	}
	var out []string
	for _, r := range refs {
		m, ok := r.(map[string]any)
		if !ok || m["kind"] != "Gateway" {
			continue
		}
		if name, ok := m["name"].(string); ok {
			out = append(out, ns+"/"+name)
		}
	}
	selectors, _, _ := unstructured.NestedSlice(p.Object, "spec", "targetSelectors")
	for _, s := range selectors {
		m, ok := s.(map[string]any)
		if !ok || m["kind"] != "Gateway" {
			continue
		}
		match, _, _ := unstructured.NestedStringMap(m, "matchLabels")
		sel := labels.SelectorFromSet(match)
		for _, gwy := range g.cache.gateways {
			if gwy.Namespace == ns && len(match) > 0 && sel.Matches(labels.Set(gwy.Labels)) {
				out = append(out, ns+"/"+gwy.Name)
			}
		}
	}
	return out
}
