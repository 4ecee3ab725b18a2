package kubectlhairpin

import (
	"context"
	"slices"

	core "k8s.io/api/core/v1"
)

// gatherLBAnnotations adds the PROXY annotations of LoadBalancer Services
// to the candidates they front. An annotated Service that fronts no
// candidate is a controller of its own, serving nothing that is known.
// Then the candidates with a reason are the controllers that require PROXY.
func (g *gatherer) gatherLBAnnotations(context.Context) error {
	for i := range g.cache.services {
		svc := &g.cache.services[i]
		reasons := lbProxyReasons(svc)
		if len(reasons) == 0 {
			continue
		}
		matched := false
		for _, c := range g.candidates {
			if slices.Contains(c.LBs, svc) {
				c.Reasons = append(c.Reasons, reasons...)
				matched = true
			}
		}
		if !matched {
			g.candidates = append(g.candidates, &Controller{Kind: "load balancer", Object: serviceObject(svc), Reasons: reasons, LBs: []*core.Service{svc}, Upstream: svc})
		}
	}
	for _, c := range g.candidates {
		if len(c.Reasons) > 0 {
			g.f.Controllers = append(g.f.Controllers, *c)
		}
	}
	return nil
}
