package kubectlhairpin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The proxy's metrics port when its pod names none (the chart's
// proxy.healthPort), and CoreDNS's (the prometheus plugin's usual :9153).
const (
	defaultProxyMetricsPort   = 9090
	defaultCoreDNSMetricsPort = 9153
)

// scrapeTimeout bounds one pod's scrape; a pod that does not answer must
// not hold up the report.
const scrapeTimeout = 5 * time.Second

var errNoPodIP = errors.New("the pod has no IP yet")

// gatherTargets reads the target Services, their EndpointSlices, and the
// metrics of the proxy pods behind them.
func (g *gatherer) gatherTargets(ctx context.Context) error {
	ns := g.f.Options.TargetsNamespace
	kube := g.c.Kube
	svcs, err := kube.CoreV1().Services(ns).List(ctx, meta.ListOptions{LabelSelector: rules.TargetLabel})
	if ok, err := g.read(err, "list services in "+ns, "targets are not checked"); !ok {
		return err
	}
	g.f.TargetsRead = true
	slices.SortFunc(svcs.Items, func(a, b core.Service) int { return strings.Compare(a.Name, b.Name) })

	eps, err := kube.DiscoveryV1().EndpointSlices(ns).List(ctx, meta.ListOptions{LabelSelector: discovery.LabelServiceName})
	epsRead, err := g.read(err, "list endpointslices.discovery.k8s.io in "+ns, "the targets' proxy endpoints are not checked")
	if err != nil {
		return err
	}
	pods := map[string]*core.Pod{}
	if epsRead {
		list, err := kube.CoreV1().Pods(ns).List(ctx, meta.ListOptions{})
		ok, err := g.read(err, "list pods in "+ns, "the proxy's per-route health is not checked")
		if err != nil {
			return err
		}
		for i := range list.Items {
			if ok {
				pods[list.Items[i].Name] = &list.Items[i]
			}
		}
	}

	scraped := map[string]PodFacts{} // one scrape per proxy pod, shared by its targets
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		t := TargetFacts{Service: svc, EndpointsRead: epsRead}
		rt := g.f.TargetSet.Add(svc.Namespace+"/"+svc.Name, svc.Annotations)
		t.Spec, t.Err = rt.Spec, rt.Err
		for _, ep := range endpointsOf(eps.Items, svc.Name) {
			t.Endpoints++
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			t.ReadyEndpoints++
			if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || pods[ep.TargetRef.Name] == nil {
				continue
			}
			pod := pods[ep.TargetRef.Name]
			if slices.ContainsFunc(t.Proxies, func(p PodFacts) bool { return p.Pod.Name == pod.Name }) {
				continue // one endpoint per port
			}
			pf, done := scraped[pod.Name]
			if !done {
				pf = g.scrape(ctx, pod, defaultProxyMetricsPort)
				scraped[pod.Name] = pf
			}
			t.Proxies = append(t.Proxies, pf)
		}
		g.f.Targets = append(g.f.Targets, t)
	}
	return nil
}

// endpointsOf returns the endpoints of the Service named name, once per
// address: a Service with several ports may have them in several slices.
func endpointsOf(list []discovery.EndpointSlice, name string) []discovery.Endpoint {
	var out []discovery.Endpoint
	seen := map[string]bool{}
	for _, es := range list {
		if es.Labels[discovery.LabelServiceName] != name {
			continue
		}
		for _, ep := range es.Endpoints {
			key := strings.Join(ep.Addresses, ",")
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, ep)
		}
	}
	return out
}

// scrape reads a pod's metrics on its port named "metrics", else on
// fallback. A failed scrape is a fact, not an error of the run.
func (g *gatherer) scrape(ctx context.Context, pod *core.Pod, fallback int32) PodFacts {
	pf := PodFacts{Pod: pod, Port: metricsPort(pod, fallback)}
	if pod.Status.PodIP == "" {
		pf.Err = errNoPodIP
		return pf
	}
	sctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	pf.Metrics, pf.Err = g.c.Metrics.Scrape(sctx, pod, pf.Port)
	return pf
}

func metricsPort(pod *core.Pod, fallback int32) int32 {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == "metrics" {
				return p.ContainerPort
			}
		}
	}
	return fallback
}
